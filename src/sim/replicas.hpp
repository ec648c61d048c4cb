// sim/replicas: classes of identical data-parallel replicas, so that a simulation plays out one representative
// per class instead of every replica (issue 22, docs/simulator.md §Scale). Internal to src/sim.
#pragma once
#include <string>
#include <vector>

#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/sim/from_cost.hpp"

namespace strata::sim::detail {

struct ReplicaClasses {
  std::vector<int> rep;       // [class]: the dp rank simulated for the class (its smallest member)
  std::vector<int> count;     // [class]: replicas in the class
  std::vector<int> class_of;  // [dp rank]
  std::string full_reason;    // why every replica is simulated ("" = aggregated, or nothing to aggregate)
  bool aggregated() const { return rep.size() < class_of.size(); }
};

// Every replica its own class when `full`, dp = 1, or a replica shape the aggregated mode cannot represent
// (full_reason says which); otherwise replicas whose devices (all stages, tp ranks in order) are shifted copies
// of a representative's (hw::same_topology: same GPU types, local indices, node kinds and offsets) and whose dp
// ring hops (intra-node or over a NIC, per stage and tp rank) are of the same kinds.
ReplicaClasses replica_classes(const hw::Cluster& c, const cost::Strategy& s, bool full);

// A replica's devices: stage-major, tp rank minor.
std::vector<int> replica_devices(const cost::Strategy& s, int dp_rank);

// Turns the simulation of the representatives (in.dp = classes) into the full-shape view: one worker per
// (stage, dp rank) with its own devices and its class representative's input and statistics.
void expand_replicas(const cost::Strategy& s, const ReplicaClasses& rc, Simulation& out);

}  // namespace strata::sim::detail
