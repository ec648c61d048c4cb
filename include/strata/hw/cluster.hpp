// hw/cluster: a concrete cluster — nodes and devices with their GPU types and links — and the link queries the
// cost model needs (bandwidth/latency between two devices, the bottleneck of a group, node/NIC sharing).
// Sources: AMP (seed_000) takes a full device×device bandwidth matrix; PipeDream (notes_003 §1.3) a hierarchy.
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
};

struct Cluster {
  std::string name;                       // the spec it came from, e.g. "p3.8xlarge:3+g4dn.12xlarge:1"
  std::vector<GpuSpec> gpu_types;         // distinct GPU types present, in order of first appearance
  std::vector<Node> nodes;
  std::vector<Device> devices;
  // Inter-node hierarchy: bandwidth between racks is divided by this oversubscription factor (>= 1).
  double rack_oversubscription = 1.0;
  // Optional full device×device bandwidth matrix (bytes/s) that overrides every other bandwidth (AMP's input).
  std::optional<std::vector<std::vector<double>>> bw_matrix;

  int num_devices() const { return static_cast<int>(devices.size()); }
  const GpuSpec& gpu_of(int device) const { return gpu_types[devices[device].gpu_type]; }
};

// Builds a cluster from a preset name ("dgx-a100"), the CLI syntax "<node-type>:<count>[+<node-type>:<count>…]",
// or the path of a JSON cluster file (docs/clusters.md). InputError on anything invalid, naming the bad part.
Cluster resolve_cluster(std::string_view spec, const Catalog& catalog);
// Loads a JSON cluster description.
Cluster load_cluster_file(const std::string& path, const Catalog& catalog);
Cluster cluster_from_json(const nlohmann::json& j, const std::string& origin, const Catalog& catalog);

// Bandwidth (bytes/s, one direction) and latency (s) of the path between two distinct devices.
double link_bandwidth(const Cluster& c, int a, int b);
double link_latency(const Cluster& c, int a, int b);

// The slowest pairwise link of a group (AMP eq. 3 uses the group's bottleneck) plus its shape.
struct GroupLinks {
  double bw_bytes_per_s = 0;        // min over pairs (infinite for a group of one device)
  double latency_s = 0;             // max over pairs
  bool intra_node = true;           // all devices on one node
  int num_nodes = 1;                // distinct nodes spanned
  int max_devices_per_node = 1;     // largest number of group members on one node
  double intra_bw_bytes_per_s = 0;  // bottleneck among members sharing a node (0 if none do)
  double inter_bw_bytes_per_s = 0;  // bottleneck among members on different nodes (0 if intra_node)
};
GroupLinks group_links(const Cluster& c, std::span<const int> devices);

bool same_node(const Cluster& c, std::span<const int> devices);
// Global NIC index a device's inter-node traffic leaves through (devices of a node are spread evenly over its NICs).
int nic_of(const Cluster& c, int device);
// How many GPUs of its node share the device's NIC.
int gpus_per_nic(const Cluster& c, int device);

}  // namespace strata::hw
