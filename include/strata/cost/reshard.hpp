// cost/reshard: the many-to-many transfer of one micro-batch's activation (and of its gradient back) between two
// adjacent pipeline stages whose (dp, tp) differ — per-pair sizes, NIC sharing, the receiving tp group's
// all-gather — for per-stage strategies (issue 14; docs/cost-model.md §Re-sharding between stages).
#pragma once
#include <span>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::cost {

// One stage's side of a boundary: its devices in rank order (dp_rank·tp + tp_rank) and its (dp, tp).
struct ReshardSide {
  std::span<const int> devices;
  int dp = 1, tp = 1;
};

// One sender → receiver piece of a micro-batch's activation.
struct ReshardPair {
  int from = 0, to = 0;      // devices
  double bytes = 0;
};

// The pieces of micro-batch k (round-robin dealing, docs/strategy.md: replica k mod dp of each stage): the
// activation of `bytes` (whole tensor, replicated on the sender's tp ranks) is cut into n = max(tp_a, tp_b) slices
// of bytes/n; slice j goes from sender tp rank j mod tp_a to receiver tp rank j mod tp_b (pairs that carry
// several slices carry their sum). Megatron's scatter-gather p2p (PTD-P §4.1) generalised to unequal tp.
std::vector<ReshardPair> reshard_pairs(const ReshardSide& from, const ReshardSide& to, long long micro, double bytes);

// e_i of the boundary: activation forward + its gradient backward (2×) of the worst micro-batch over one
// round-robin period lcm(dp_a, dp_b). One micro-batch's pieces move at once: each takes p2p_device_time with
// the pieces crossing the same NIC sharing it (the bottleneck link), then the receiving tp group all-gathers
// the slices when tp_b > 1 and the pieces came over more than one slice (allgather_time of the whole tensor).
double reshard_time(const hw::Cluster& c, const ReshardSide& from, const ReshardSide& to, double bytes,
                    const CostOptions& opt = {});

}  // namespace strata::cost
