// cost/p2p_classes: the pipeline p2p time of two adjacent stages (stage.hpp p2p_time) in two steps — one scan of
// the rank pairs that keeps a representative of each class of pairs with identical inputs (same node or not, link
// bandwidth and latency, the tp group whose all-gather re-assembles the message), then the time for any message
// size and sp from the representatives. p2p_time is exactly these two steps; a caller that costs many message
// sizes on the same stages (the planner, issue 22) scans once. Formulas: stage.hpp §p2p_time (Megatron
// scatter-gather across nodes, NIC sharing).
#pragma once
#include <span>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::cost {

struct P2pClasses {
  bool valid = false;   // non-empty stages of equal size
  int tp = 1;
  int concurrent = 1;   // senders sharing a NIC (every (dp, tp) rank sends at once)
  struct Pair {
    int from = 0, to = 0;  // devices of the representative rank
    bool cross = false;    // different nodes
    int gather = -1;       // the all-gather group in effect for the rank (index into gather_groups; −1: none)
  };
  std::vector<Pair> pairs;                       // one per distinct class, in first-seen rank order
  std::vector<std::vector<int>> gather_groups;   // representative tp groups of the receiving stage
};

// One O(stage devices) scan (group_links of the senders, each rank's link, the receiving tp groups' links).
P2pClasses p2p_classes(const hw::Cluster& c, int tp, std::span<const int> from_stage_devices,
                       std::span<const int> to_stage_devices);
// p2p_time of the scanned stages for `bytes` under sequence parallelism `sp`: O(classes).
double p2p_time(const hw::Cluster& c, const P2pClasses& k, bool sp, double bytes, const CostOptions& opt = {});

}  // namespace strata::cost
