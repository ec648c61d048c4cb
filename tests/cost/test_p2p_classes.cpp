// tests/cost/test_p2p_classes: p2p_time by classes of rank pairs (cost/p2p_classes, issue 22) equals the rank-by-
// rank rule it replaces — every rank's p2p_device_time of its message (/tp under sp or across nodes with tp > 1)
// plus, across nodes with tp > 1 and no sp, the all-gather of the receiving tp group set at that group's first
// crossing rank — bit for bit, on random clusters (racks, oversubscription, NIC sharing, intra matrices), random
// stage pairs (node-major slices and shuffled ones), tp, sp and message sizes; and one scan serves every size.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/p2p_classes.hpp"
#include "strata/cost/stage.hpp"

namespace strata::cost {
namespace {

// The rank-by-rank rule, written out independently of cost/p2p_classes.
double reference_p2p(const hw::Cluster& c, int tp, bool sp_flag, std::span<const int> from, std::span<const int> to,
                     double bytes) {
  if (from.empty() || from.size() != to.size() || bytes <= 0) return 0;
  const CostConstants* k = &builtin_constants();
  const CommOptions co{std::max(1, hw::group_links(c, from).max_devices_per_nic), k};
  const bool sp = sp_flag && tp > 1;
  double worst = 0, gather = 0;
  for (std::size_t r = 0; r < from.size(); ++r) {
    if (from[r] == to[r]) continue;
    const bool cross = c.devices[from[r]].node != c.devices[to[r]].node;
    double t = p2p_device_time(c, from[r], to[r], (sp || (cross && tp > 1)) ? bytes / tp : bytes, co);
    if (cross && tp > 1 && !sp) {
      if (r % tp == 0) gather = allgather_time(c, to.subspan(r, tp), bytes, CommOptions{1, k});
      t += gather;
    }
    worst = std::max(worst, t);
  }
  return 2.0 * worst;
}

TEST(P2pClasses, EqualsTheRankByRankRuleBitForBit) {
  std::mt19937_64 rng(2222);
  auto uni = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  static const char* presets[] = {"dgx-a100", "dgx-h100", "p4d.24xlarge", "p3.8xlarge", "g4dn.12xlarge",
                                  "p5.48xlarge", "p3.16xlarge"};
  int checked = 0, fewer = 0;
  for (int i = 0; i < 60; ++i) {
    std::string spec = std::string(presets[uni(0, 6)]) + ":" + std::to_string(uni(1, 8));
    if (uni(0, 1)) spec += std::string("+") + presets[uni(0, 6)] + ":" + std::to_string(uni(1, 8));
    hw::Cluster c = hw::resolve_cluster(spec, hw::builtin_catalog());
    if (uni(0, 1)) {
      c.nodes_per_rack = uni(1, 3);
      c.rack_oversubscription = 1.0 + uni(0, 3);
      for (auto& n : c.nodes) n.rack = n.id / c.nodes_per_rack;
    }
    const int n = c.num_devices();
    std::vector<int> placement(n);
    std::iota(placement.begin(), placement.end(), 0);
    if (uni(0, 3) == 0) std::shuffle(placement.begin(), placement.end(), rng);  // irregular stages
    // Two adjacent stages of `size` devices (tp divides size).
    std::vector<int> sizes;
    for (int s = 1; 2 * s <= n; ++s)
      if (n % s == 0 || uni(0, 2) == 0) sizes.push_back(s);
    const int size = sizes[uni(0, static_cast<int>(sizes.size()) - 1)];
    std::vector<int> tps;
    for (int t = 1; t <= size; ++t)
      if (size % t == 0) tps.push_back(t);
    const int tp = tps[uni(0, static_cast<int>(tps.size()) - 1)];
    const int first = uni(0, n - 2 * size);
    const std::span<const int> from(placement.data() + first, size), to(placement.data() + first + size, size);
    SCOPED_TRACE(spec + " size " + std::to_string(size) + " tp " + std::to_string(tp));
    const P2pClasses k = p2p_classes(c, tp, from, to);
    EXPECT_LE(k.pairs.size(), static_cast<std::size_t>(size));
    fewer += k.pairs.size() < static_cast<std::size_t>(size) ? 1 : 0;
    Strategy s;
    s.tp = tp;
    for (bool sp : {false, true})
      for (double bytes : {1.0, 3.5e6, 7.0e8}) {
        s.sequence_parallel = sp;
        const double ref = reference_p2p(c, tp, sp, from, to, bytes);
        EXPECT_EQ(ref, p2p_time(c, k, sp, bytes));
        EXPECT_EQ(ref, p2p_time(c, s, from, to, bytes));
        ++checked;
      }
  }
  EXPECT_EQ(checked, 360);
  EXPECT_GT(fewer, 20);  // classes do merge ranks
}

}  // namespace
}  // namespace strata::cost
