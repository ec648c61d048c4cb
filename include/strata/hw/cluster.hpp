// hw/cluster: a concrete cluster — nodes and devices with their GPU types and links — and the link queries the
// cost model needs (bandwidth/latency between two devices, the bottleneck of a group, node/NIC sharing).
// Sources: AMP (seed_000) takes a full device×device bandwidth matrix; PipeDream (notes_003 §1.3) a hierarchy.
// Formats and query semantics: docs/clusters.md.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/hw/hardware.hpp"

namespace strata::hw {

struct Device {
  int id = 0;           // global index, node-major: devices of node 0 first
  int node = 0;         // Node index
  int local_index = 0;  // index inside the node
  int gpu_type = 0;     // index into Cluster::gpu_types
};

struct Node {
  int id = 0;
  std::string node_type;           // NodeSpec name (or "custom")
  int first_device = 0;
  int num_devices = 0;
  LinkSpec intra;                  // GPU↔GPU link inside the node
  int nics = 1;
  LinkSpec nic;                    // each NIC's link
  int rack = 0;                    // inter-node hierarchy: nodes in the same rack share a switch
  std::optional<std::vector<std::vector<double>>> intra_bw_matrix;  // local×local bytes/s
  int first_nic = 0;               // global index of the node's first NIC (NICs numbered node-major)
  int cpu_cores = 0;               // CPU cores its devices share (NodeSpec::cpu_cores); 0 = not shared
  int gpus_per_host = 0;           // NodeSpec::gpus_per_host: hosts (trays) inside this NVLink domain; 0 = one
};

struct Cluster {
  std::string name;                       // the spec it came from, e.g. "p3.8xlarge:3+g4dn.12xlarge:1"
  std::vector<GpuSpec> gpu_types;         // distinct GPU types present, in order of first appearance
  std::vector<Node> nodes;
  std::vector<Device> devices;
  // Inter-node hierarchy: bandwidth between racks is divided by this oversubscription factor (>= 1).
  double rack_oversubscription = 1.0;
  int nodes_per_rack = 0;                 // 0 = all nodes in one rack
  // Optional full device×device bandwidth matrix (bytes/s) that overrides every other bandwidth (AMP's input).
  std::optional<std::vector<std::vector<double>>> bw_matrix;
  // Some node runs more devices than its cpu_cores (set by add_nodes): lets the cost model skip its host-CPU bound
  // without scanning the nodes on every estimate.
  bool has_oversubscribed_cpu_node = false;

  int num_devices() const { return static_cast<int>(devices.size()); }
  const GpuSpec& gpu_of(int device) const { return gpu_types[devices[device].gpu_type]; }
};

// Largest cluster accepted from user input (devices), so a typo like "dgx-a100:99999999" is an error.
inline constexpr int kMaxClusterDevices = 1 << 20;

// Builds a cluster from a preset name ("dgx-a100"), the CLI syntax "<node-type>:<count>[+<node-type>:<count>…]",
// or the path of a JSON cluster file (docs/clusters.md) — a spec containing '/' or ending in ".json".
// InputError on anything invalid, naming the bad part.
Cluster resolve_cluster(std::string_view spec, const Catalog& catalog);
// Loads a JSON cluster description.
Cluster load_cluster_file(const std::string& path, const Catalog& catalog);
Cluster cluster_from_json(const nlohmann::json& j, const std::string& origin, const Catalog& catalog);
// One node group appended to `c` (used by the loaders; exposed for tests and for building clusters in code).
void add_nodes(Cluster& c, const NodeSpec& spec, int count, const Catalog& catalog);

// Bandwidth (bytes/s, one direction) and latency (s) of the path between two devices: same node → the intra
// link (or the node's matrix); different nodes → the slower of the two devices' NIC bandwidths (nic_bandwidth),
// divided by rack_oversubscription across racks; the full bw_matrix overrides all of it. a == b → +inf / 0.
double link_bandwidth(const Cluster& c, int a, int b);
double link_latency(const Cluster& c, int a, int b);

// The slowest pairwise link of a group (AMP eq. 3 uses the group's bottleneck) plus its shape.
// O(group size) without a full matrix (O(k²) only among members sharing a node that has an intra matrix);
// allocates only when `devices` is not strictly increasing (then it sorts a copy).
struct GroupLinks {
  double bw_bytes_per_s = 0;        // min over pairs (infinite for a group of one device)
  double latency_s = 0;             // max over pairs
  bool intra_node = true;           // all devices on one node
  int num_nodes = 1;                // distinct nodes spanned
  int max_devices_per_node = 1;     // largest number of group members on one node
  double intra_bw_bytes_per_s = 0;  // bottleneck among members sharing a node (0 if none do)
  double inter_bw_bytes_per_s = 0;  // bottleneck among members on different nodes (0 if intra_node)
  // Extensions (additive):
  double intra_latency_s = 0;       // max latency among members sharing a node (0 if none do)
  double inter_latency_s = 0;       // max latency among members on different nodes (0 if intra_node)
  int min_devices_per_node = 1;     // smallest number of group members on one spanned node
  bool uniform_per_node = true;     // same number of members on every spanned node
  int max_devices_per_nic = 1;      // most group members leaving through one NIC (NIC sharing inside the group)
  int num_racks = 1;                // distinct racks spanned
};
GroupLinks group_links(const Cluster& c, std::span<const int> devices);

bool same_node(const Cluster& c, std::span<const int> devices);
// Two equally long device lists whose i-th devices sit at the same local index, on the same GPU type, on nodes of
// the same kind (type, size, links, intra matrix) at the same node and rack offsets from the lists' first
// devices: their groups are translations of each other, so every group and pair query gives the same numbers.
// Always false with a full bw_matrix. O(list size), no allocation (the planner's and estimate's symmetry test).
bool same_topology(const Cluster& c, std::span<const int> a, std::span<const int> b);
// Two stage boundaries (from → to, pf → pt; equally long lists paired rank by rank) whose pair and group queries
// all agree: the senders and the receivers are translations of each other (same_topology) and the receivers sit at
// the same node and rack offsets from the senders, so every (from[r], to[r]) pair is as near as (pf[r], pt[r]).
// The twin test of pipeline p2p times (cost::estimate, the planner's cut memo). O(list size), no allocation.
bool same_boundary_topology(const Cluster& c, std::span<const int> from, std::span<const int> to,
                            std::span<const int> pf, std::span<const int> pt);
// Devices [first, first + count) are whole nodes of one kind (same_node_kind: type, size, links, intra matrix) in
// one rack, with no full bw_matrix: every translation by whole nodes inside the range maps every link query
// (group_links, nic_of, gpus_per_nic) to the same numbers. Returns the nodes' device count, or 0 when not. O(nodes in the range), no allocation.
int identical_whole_nodes(const Cluster& c, int first, int count);
// Global NIC index a device's inter-node traffic leaves through (devices of a node are spread evenly over its
// NICs: local device i uses NIC ⌊i·nics/gpus⌋; with more NICs than GPUs this is the first of its NICs).
int nic_of(const Cluster& c, int device);
// How many GPUs of its node share the device's NIC (1 when every GPU has one or more NICs of its own).
int gpus_per_nic(const Cluster& c, int device);
// Inter-node bandwidth available to one device when it alone sends (bytes/s): its NIC's bandwidth, times the
// number of NICs it owns when the node has more NICs than GPUs (p5.48xlarge: 4 × 100 Gbit/s per GPU).
double nic_bandwidth(const Cluster& c, int device);
// Total number of NICs in the cluster.
int num_nics(const Cluster& c);

// Whole-cluster summaries (for `strata describe`).
double total_memory_bytes(const Cluster& c);
double total_peak_flops(const Cluster& c, Dtype d);
// The distinct link classes present: each intra-node link (or "matrix") and each NIC link, with the bandwidth
// a pair sees and how many nodes use it; deterministic order (intra first, then inter, by first appearance).
struct LinkClass {
  std::string scope;                // "intra" | "inter" | "matrix"
  std::string link;                 // link name ("nvswitch3", "eth-10g", "custom matrix")
  double bw_bytes_per_s = 0;        // slowest pair of this class
  double latency_s = 0;
  int nodes = 0;                    // nodes using it
};
std::vector<LinkClass> link_classes(const Cluster& c);
// The three tiers of each kind of node, in order of first appearance: hosts (CPU trays) inside the scale-up domain,
// the domain itself (the node: its GPUs and their NVLink/Infinity Fabric link) and the network (its NICs). An
// NVL72 rack is one node of 72 GPUs on 18 hosts; an HGX node one host of 8 (docs/clusters.md §NVLink domains).
struct TierRow {
  std::string node_type;
  int nodes = 0;                    // nodes of this kind
  int gpus_per_host = 0;            // GPUs on one host (the node's GPUs when it has one host)
  int hosts = 1;                    // hosts per node
  int domain_gpus = 0;              // GPUs in one scale-up domain (the node)
  std::string domain_link;          // intra-node link name ("custom matrix" with an intra matrix)
  double domain_bw_bytes_per_s = 0; // one direction, per GPU (the link's; the slowest pair with a matrix)
  std::string nic_link;
  int nics = 0;                     // NICs per node
  double nic_bw_per_gpu_bytes_per_s = 0;  // the node's NIC bandwidth divided over its GPUs
};
std::vector<TierRow> tier_rows(const Cluster& c);
// `strata clusters --show SPEC --json` (and the Python API's Cluster.to_dict()): size, GPU types, totals, nodes
// and link classes. hw/catalog_listing.cpp.
nlohmann::ordered_json cluster_summary_json(const Cluster& c);

}  // namespace strata::hw
