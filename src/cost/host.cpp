// cost/host: the host-CPU throughput bound of oversubscribed CPU nodes (see cost/host.hpp for the formula).
#include "strata/cost/host.hpp"

#include <algorithm>

#include "strata/cost/estimate.hpp"

namespace strata::cost {

HostBound host_cpu_bound(const hw::Cluster& c, const std::vector<StageEstimate>& stages, std::int64_t micro) {
  if (!c.has_oversubscribed_cpu_node) return {};  // GPU clusters: estimate() is the planner's hot path
  const auto m = static_cast<double>(micro);
  std::vector<double> busy(c.nodes.size(), 0.0), blocking(c.nodes.size(), 0.0);
  std::vector<int> ranks(c.nodes.size(), 0);
  for (const auto& st : stages) {
    const double rank_busy = m * st.compute_s + st.optimizer_s;
    const double rank_blocking = m * st.tp_comm_s + st.dp_comm_s;
    for (const int d : st.devices) {
      const auto node = static_cast<std::size_t>(c.devices[static_cast<std::size_t>(d)].node);
      busy[node] += rank_busy;
      blocking[node] = std::max(blocking[node], rank_blocking);
      ++ranks[node];
    }
  }
  HostBound out;
  for (std::size_t n = 0; n < c.nodes.size(); ++n) {
    const int cores = c.nodes[n].cpu_cores;
    if (cores <= 0 || ranks[n] <= cores) continue;
    const double bound = busy[n] / cores + blocking[n];
    if (bound > out.bound_s) out = {static_cast<int>(n), ranks[n], cores, busy[n], blocking[n], bound};
  }
  return out;
}

}  // namespace strata::cost
