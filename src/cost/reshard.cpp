// cost/reshard: the many-to-many activation transfer between stages with different (dp, tp) (reshard.hpp).
#include "strata/cost/reshard.hpp"

#include <algorithm>
#include <map>
#include <numeric>

#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"

namespace strata::cost {

std::vector<ReshardPair> reshard_pairs(const ReshardSide& from, const ReshardSide& to, long long micro, double bytes) {
  const int ra = static_cast<int>(micro % from.dp), rb = static_cast<int>(micro % to.dp);
  const int n = std::max(from.tp, to.tp);
  std::map<std::pair<int, int>, double> sum;  // ordered: deterministic
  for (int j = 0; j < n; ++j) {
    const int a = from.devices[static_cast<std::size_t>(ra * from.tp + j % from.tp)];
    const int b = to.devices[static_cast<std::size_t>(rb * to.tp + j % to.tp)];
    sum[{a, b}] += bytes / n;
  }
  std::vector<ReshardPair> out;
  for (const auto& [ab, by] : sum) out.push_back({ab.first, ab.second, by});
  return out;
}

namespace {

// One micro-batch's pieces, all at once: the slowest piece (pieces crossing one NIC share it) plus the
// receivers' all-gather.
double one_transfer(const hw::Cluster& c, const ReshardSide& from, const ReshardSide& to, long long micro,
                    double bytes, const CostOptions& opt) {
  const auto pairs = reshard_pairs(from, to, micro, bytes);
  // Pieces leaving or entering each NIC (node, nic): the most on either end of a piece is its sharing factor.
  std::map<std::pair<int, int>, int> out_nic, in_nic;
  for (const auto& p : pairs) {
    if (p.from == p.to || c.devices[p.from].node == c.devices[p.to].node) continue;
    ++out_nic[{c.devices[p.from].node, hw::nic_of(c, p.from)}];
    ++in_nic[{c.devices[p.to].node, hw::nic_of(c, p.to)}];
  }
  double worst = 0;
  for (const auto& p : pairs) {
    CommOptions co;
    co.constants = opt.constants;
    if (p.from != p.to && c.devices[p.from].node != c.devices[p.to].node)
      co.concurrent_groups_per_nic = std::max(out_nic[{c.devices[p.from].node, hw::nic_of(c, p.from)}],
                                              in_nic[{c.devices[p.to].node, hw::nic_of(c, p.to)}]);
    worst = std::max(worst, p2p_device_time(c, p.from, p.to, p.bytes, co));
  }
  // The receiving tp group holds slices when n > 1 slices were cut: re-assemble the whole activation on each rank.
  const int n = std::max(from.tp, to.tp);
  if (to.tp > 1 && n > 1) {
    const int rb = static_cast<int>(micro % to.dp);
    CommOptions co;
    co.constants = opt.constants;
    worst += allgather_time(c, to.devices.subspan(static_cast<std::size_t>(rb * to.tp), to.tp), bytes, co);
  }
  return worst;
}

}  // namespace

double reshard_time(const hw::Cluster& c, const ReshardSide& from, const ReshardSide& to, double bytes,
                    const CostOptions& opt) {
  if (bytes <= 0 || from.devices.empty() || to.devices.empty()) return 0;
  const long long period = std::lcm(static_cast<long long>(from.dp), static_cast<long long>(to.dp));
  double worst = 0;
  for (long long k = 0; k < period; ++k) worst = std::max(worst, one_transfer(c, from, to, k, bytes, opt));
  return 2.0 * worst;  // activation forward + its gradient backward
}

}  // namespace strata::cost
