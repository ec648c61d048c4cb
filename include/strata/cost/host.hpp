// cost/host: the host-CPU throughput bound for nodes whose devices are executor processes sharing fewer CPU cores
// than there are ranks (hw::Node::cpu_cores; the cpu-local cluster of `strata profile`). The rest of the cost model
// assumes one dedicated device per rank; on such a node R ranks time-share C < R cores, so the node cannot do more
// than C core-seconds of compute per second, whatever the schedule (docs/cost-model.md §Shared CPU hosts).
#pragma once
#include <cstdint>
#include <vector>

#include "strata/hw/cluster.hpp"

namespace strata::cost {

struct StageEstimate;

// The binding node's bound (the largest over oversubscribed nodes); node = -1 and bound_s = 0 when no node runs
// more ranks than it has cores.
struct HostBound {
  int node = -1;
  int ranks = 0, cores = 0;
  double busy_s = 0;      // Σ over the node's ranks of compute seconds per iteration (micro-batches × stage compute
                          // + optimizer step)
  double blocking_s = 0;  // max over its ranks of communication during which the rank waits with its group:
                          // micro-batches × exposed TP/ZeRO-3 communication + exposed data-parallel sync
  double bound_s = 0;     // busy_s / cores + blocking_s
};

// bound = Σ_r busy_r / C + max_r blocking_r over the R > C ranks of each node: the cores are a shared resource
// (a work-conserving time-sharing bound), while collective waits keep every member of a group off the cores at once
// and so add in series. `stages` are the estimate's stages (per micro-batch times), `micro` the micro-batches.
HostBound host_cpu_bound(const hw::Cluster& c, const std::vector<StageEstimate>& stages, std::int64_t micro);

}  // namespace strata::cost
