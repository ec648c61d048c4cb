// cost/p2p_classes: pipeline p2p time by classes of rank pairs (see p2p_classes.hpp). The per-rank rule is
// Megatron's: under sp each rank sends s/tp of the activation; across nodes with tp > 1 the activation is split /tp
// (scatter) and re-assembled by an all-gather on the receiving node (gather); the stage's time is the slowest rank,
// activation forward and gradient back (2×).
#include "strata/cost/p2p_classes.hpp"

#include <algorithm>
#include <map>
#include <tuple>

#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"

namespace strata::cost {
namespace {

using LinksKey = std::tuple<double, double, bool, int, int, double, double, double, double, int, bool, int, int>;
LinksKey links_key(const hw::GroupLinks& l) {
  return {l.bw_bytes_per_s, l.latency_s,         l.intra_node,      l.num_nodes,        l.max_devices_per_node,
          l.intra_bw_bytes_per_s, l.inter_bw_bytes_per_s, l.intra_latency_s, l.inter_latency_s,
          l.min_devices_per_node, l.uniform_per_node, l.max_devices_per_nic, l.num_racks};
}

}  // namespace

P2pClasses p2p_classes(const hw::Cluster& c, int tp, std::span<const int> from, std::span<const int> to) {
  P2pClasses k;
  k.tp = tp;
  if (from.empty() || from.size() != to.size()) return k;
  k.valid = true;
  k.concurrent = std::max(1, hw::group_links(c, from).max_devices_per_nic);
  // A rank's time reads: whether it crosses nodes, its link's bandwidth and latency (p2p_device_time) and, across
  // nodes with tp > 1, the all-gather of the tp group in effect — set at each tp group's first rank that crosses
  // (the previous one stays in effect for the ranks of a group whose first rank does not cross).
  std::map<LinksKey, int> gather_of;                          // group links → gather_groups index
  std::map<std::tuple<bool, double, double, int>, int> seen;  // class → pairs index
  int gather = -1;
  std::tuple<bool, double, double, int> last;
  bool have_last = false;
  for (std::size_t r = 0; r < from.size(); ++r) {
    const int a = from[r], b = to[r];
    if (a == b) continue;
    const bool cross = c.devices[a].node != c.devices[b].node;
    if (cross && tp > 1 && r % static_cast<std::size_t>(tp) == 0) {
      const auto group = to.subspan(r, static_cast<std::size_t>(tp));
      const auto [it, fresh] = gather_of.emplace(links_key(hw::group_links(c, group)), 0);
      if (fresh) {
        it->second = static_cast<int>(k.gather_groups.size());
        k.gather_groups.emplace_back(group.begin(), group.end());
      }
      gather = it->second;
    }
    const auto key = std::make_tuple(cross, hw::link_bandwidth(c, a, b), hw::link_latency(c, a, b), gather);
    if (have_last && key == last) continue;  // neighbouring ranks mostly repeat a class
    last = key;
    have_last = true;
    if (seen.emplace(key, static_cast<int>(k.pairs.size())).second) k.pairs.push_back({a, b, cross, gather});
  }
  return k;
}

double p2p_time(const hw::Cluster& c, const P2pClasses& k, bool sequence_parallel, double bytes,
                const CostOptions& opt) {
  if (!k.valid || bytes <= 0) return 0;
  const CostConstants& consts = opt.constants ? *opt.constants : builtin_constants();
  const CommOptions co{k.concurrent, &consts};
  const int tp = k.tp;
  const bool sp = sequence_parallel && tp > 1;
  std::vector<double> gather(k.gather_groups.size(), -1.0);  // all-gather time per group, computed once
  double worst = 0;
  for (const auto& p : k.pairs) {
    const double msg = (sp || (p.cross && tp > 1)) ? bytes / tp : bytes;
    double t = p2p_device_time(c, p.from, p.to, msg, co);
    if (p.cross && tp > 1 && !sp) {
      double g = 0;
      if (p.gather >= 0) {
        if (gather[p.gather] < 0) gather[p.gather] = allgather_time(c, k.gather_groups[p.gather], bytes, CommOptions{1, &consts});
        g = gather[p.gather];
      }
      t += g;
    }
    worst = std::max(worst, t);
  }
  return 2.0 * worst;  // activation forward and its gradient backward
}

}  // namespace strata::cost
