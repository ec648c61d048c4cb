// cost/comm: the α–β time of every collective on the *actual devices* of a group — the ONE place any
// communication time in strata is computed (TP all-reduces, pipeline p2p, DP gradient sync, ZeRO gathers, the
// simulator's transfers).
//
// Model (docs/cost-model.md §Communication):
//  - A group on one node runs a flat ring over the slowest pairwise link of the group (AMP eq. 3 uses the
//    group's bottleneck bandwidth: T = 2(n−1)·M/(n·B) for a ring all-reduce).
//  - A group spanning nodes with the same number k of members on every node runs NCCL's algorithms: rings
//    through all members (one channel per NIC) for all-gather / reduce-scatter, the faster of ring and tree for
//    all-reduce; latency per step, bandwidth limited by the node's NICs for the inter-node share
//    (nccl_ring_time, nccl_tree_allreduce_time). Members that leave a node through the same NIC share it; so do
//    `concurrent_groups_per_nic` other groups (e.g. the dp groups of the other tp ranks all syncing at once).
//  - A multi-node group with uneven members per node runs one flat ring at the bottleneck bandwidth (the
//    inter-node link divided by the NIC sharing).
//  - Achievable bandwidth = link bandwidth × efficiency (intra-node / inter-node, data/cost_constants.json);
//    α = the link latency per ring step.
// Sizes: `bytes` is always the full logical buffer (the all-reduced tensor, the gathered output, the
// reduce-scattered input, one device's total all-to-all send, the broadcast buffer, the p2p message).
#pragma once
#include <span>
#include <string_view>

#include "strata/hw/cluster.hpp"

namespace strata::cost {

struct CostConstants;

enum class Collective { allreduce, allreduce_tree, allgather, reduce_scatter, all_to_all, broadcast, p2p };
std::string_view to_string(Collective c);
// "allreduce", "allreduce_tree", "allgather", "reduce_scatter", "all_to_all", "broadcast", "p2p".
Collective parse_collective(std::string_view text, const std::string& where);

struct CommOptions {
  // Number of groups (this one included) whose traffic crosses each NIC at the same time. 1 = this group alone.
  int concurrent_groups_per_nic = 1;
  // Fitted efficiencies; nullptr = the built-in constants (data/cost_constants.json).
  const CostConstants* constants = nullptr;
};

// ---- closed forms (one link class, n ranks, bandwidth B bytes/s, latency α s per step) -----------------------
// Ring all-reduce 2(n−1)·(α + M/(n·B)) (AMP eq. 3 when α = 0); all-gather / reduce-scatter (n−1)·(α + M/(n·B));
// binary-tree all-reduce 2·⌈log2 n⌉·α + 2·M/B (reduce + broadcast, pipelined); all-to-all (n−1)·α + (n−1)·M/(n·B);
// broadcast (pipelined ring/chain) (n−1)·α + M/B; p2p α + M/B. n ≤ 1 → 0.
double ring_allreduce_closed(int n, double bytes, double bw_bytes_per_s, double latency_s = 0);
double ring_allgather_closed(int n, double bytes, double bw_bytes_per_s, double latency_s = 0);
double tree_allreduce_closed(int n, double bytes, double bw_bytes_per_s, double latency_s = 0);
double all_to_all_closed(int n, double bytes, double bw_bytes_per_s, double latency_s = 0);
double broadcast_closed(int n, double bytes, double bw_bytes_per_s, double latency_s = 0);

// ---- NCCL's algorithms on a group spanning nodes ---------------------------------------------------------------
// A group of `ranks` GPUs, the same number on each of `nodes` nodes. node_nic_bw_bytes_per_s: what the group's
// members on one node can push through that node's NICs together (achievable, after sharing with concurrent
// groups); intra_bw_bytes_per_s: one GPU's intra-node link (+inf when no two members share a node).
struct NcclGroupShape {
  int ranks = 1, nodes = 1;
  double intra_latency_s = 0, inter_latency_s = 0;
  double intra_bw_bytes_per_s = 0, node_nic_bw_bytes_per_s = 0;
};
// `passes` ring passes over the group (all-gather / reduce-scatter 1, ring all-reduce 2), NCCL-style (one
// channel per NIC): passes · [(ranks − nodes)·α_intra + (nodes − 1)·α_inter
//                             + max(M(n−1)/n / node_nic_bw, M(n−1)/n / intra_bw)]
// — M(n−1)/n is what each node receives through its NICs (every chunk but one enters the node once).
double nccl_ring_time(const NcclGroupShape& g, double bytes, int passes);
// NCCL tree all-reduce (intra-node chain + double binary tree over nodes):
// 2·(⌈log2 nodes⌉·α_inter + (k−1)·α_intra) + 2M / min(node_nic_bw, intra_bw), k = ranks / nodes.
double nccl_tree_allreduce_time(const NcclGroupShape& g, double bytes);

// ---- collectives on actual device groups (devices: global device ids, distinct) ------------------------------
double allreduce_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o = {});
double allreduce_tree_time(const hw::Cluster& c, std::span<const int> group, double bytes,
                           const CommOptions& o = {});
double allgather_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o = {});
double reduce_scatter_time(const hw::Cluster& c, std::span<const int> group, double bytes,
                           const CommOptions& o = {});
double all_to_all_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o = {});
double broadcast_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o = {});
// One message from device `from` to device `to` (0 when from == to).
double p2p_device_time(const hw::Cluster& c, int from, int to, double bytes, const CommOptions& o = {});
// Dispatch on the collective kind.
double collective_time(Collective kind, const hw::Cluster& c, std::span<const int> group, double bytes,
                       const CommOptions& o = {});

// The effective (achievable, shared) bandwidth and latency a group's ring runs at: what the functions above
// use. Exposed for explanations (`--explain`, the simulator's link model).
struct GroupBandwidth {
  double intra_bw_bytes_per_s = 0;   // per member, inside a node (achievable), +inf if no two members share one
  double inter_bw_bytes_per_s = 0;   // per member, across nodes after NIC sharing (achievable), +inf if one node
  double ring_inter_bw_bytes_per_s = 0;  // one flat ring's inter-node hop (crosses each NIC once; shared only with
                                         // the other concurrent groups), +inf if one node
  double intra_latency_s = 0, inter_latency_s = 0;
  int num_nodes = 1;
  int members_per_node = 1;          // k when uniform, else the largest count
  bool uniform = true;               // same number of members on every node spanned
};
GroupBandwidth group_bandwidth(const hw::Cluster& c, std::span<const int> group, const CommOptions& o = {});
// The same from the group's hw::group_links (when the caller already has them).
GroupBandwidth group_bandwidth(const hw::GroupLinks& links, int group_size, const CommOptions& o = {});
// The same collective times from a precomputed GroupBandwidth (what the functions above do after
// group_bandwidth): lets a caller cost many message sizes on one group cheaply.
double collective_time(Collective kind, int group_size, const GroupBandwidth& g, double bytes);

}  // namespace strata::cost
