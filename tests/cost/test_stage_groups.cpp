// tests/cost/test_stage_groups: make_stage_context's periodic group scan (cost/stage.cpp group_window, issue 22:
// a stage of whole identical nodes fits the groups of its first two periods only) gives the tp, dp and cp α–β of
// fitting every group (detail::make_stage_context_every_group) bit for bit: on random clusters (one or two node
// kinds, racks, NIC sharing), random (dp, cp, tp) and stage offsets, node-major stages and shuffled ones, and on
// hand-picked large stages where the window is far smaller than the stage.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "strata/cost/stage.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::cost {
namespace {

void expect_same_groups(const hw::Cluster& c, const Strategy& s, std::span<const int> devices) {
  const StageContext a = make_stage_context(model::Model{}, c, s, devices);
  const StageContext b = detail::make_stage_context_every_group(c, s, devices);
  EXPECT_EQ(a.tp_allreduce_latency_s, b.tp_allreduce_latency_s);
  EXPECT_EQ(a.tp_allreduce_s_per_byte, b.tp_allreduce_s_per_byte);
  EXPECT_EQ(a.tp_rs_latency_s, b.tp_rs_latency_s);
  EXPECT_EQ(a.tp_rs_s_per_byte, b.tp_rs_s_per_byte);
  EXPECT_EQ(a.dp_allreduce_latency_s, b.dp_allreduce_latency_s);
  EXPECT_EQ(a.dp_allreduce_s_per_byte, b.dp_allreduce_s_per_byte);
  EXPECT_EQ(a.dp_allgather_latency_s, b.dp_allgather_latency_s);
  EXPECT_EQ(a.dp_allgather_s_per_byte, b.dp_allgather_s_per_byte);
  EXPECT_EQ(a.cp_step_latency_s, b.cp_step_latency_s);
  EXPECT_EQ(a.cp_step_s_per_byte, b.cp_step_s_per_byte);
}

Strategy degrees(int dp, int cp, int tp) {
  Strategy s;
  s.dp = dp;
  s.cp = cp;
  s.tp = tp;
  return s;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

TEST(StageGroups, PeriodicScanEqualsEveryGroupOnRandomClusters) {
  std::mt19937_64 rng(2207);
  auto uni = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)); };
  static const char* presets[] = {"dgx-a100", "dgx-h100", "p4d.24xlarge", "p3.8xlarge", "g4dn.12xlarge",
                                  "p5.48xlarge", "p3.16xlarge"};
  int checked = 0;
  for (int i = 0; i < 150; ++i) {
    std::string spec = std::string(presets[uni(0, 6)]) + ":" + std::to_string(uni(1, 24));
    if (uni(0, 2) == 0) spec += std::string("+") + presets[uni(0, 6)] + ":" + std::to_string(uni(1, 8));
    hw::Cluster c = hw::resolve_cluster(spec, hw::builtin_catalog());
    if (uni(0, 3) == 0) {
      c.nodes_per_rack = uni(1, 4);
      c.rack_oversubscription = 1.0 + uni(0, 3);
      for (auto& n : c.nodes) n.rack = n.id / c.nodes_per_rack;
    }
    const int n = c.num_devices();
    std::vector<int> placement(n);
    std::iota(placement.begin(), placement.end(), 0);
    if (uni(0, 4) == 0) std::shuffle(placement.begin(), placement.end(), rng);
    const auto pps = divisors(n);
    const int pp = pps[uni(0, static_cast<int>(pps.size()) - 1)], size = n / pp;
    const auto tps = divisors(size);
    const int tp = tps[uni(0, static_cast<int>(tps.size()) - 1)];
    const auto cps = divisors(size / tp);
    const int cp = cps[uni(0, static_cast<int>(cps.size()) - 1)], dp = size / tp / cp;
    const int stage = uni(0, pp - 1);
    SCOPED_TRACE(spec + " dp " + std::to_string(dp) + " cp " + std::to_string(cp) + " tp " + std::to_string(tp) +
                 " stage " + std::to_string(stage) + "/" + std::to_string(pp));
    expect_same_groups(c, degrees(dp, cp, tp), std::span<const int>(placement.data() + stage * size, size));
    ++checked;
  }
  EXPECT_EQ(checked, 150);
}

TEST(StageGroups, LargeRegularStagesScanTwoPeriods) {
  // Windows far smaller than the stage: 16 and 64 nodes, blocks and residues, multi-node tp groups, shared NICs
  // (p3.8xlarge: 4 GPUs on one NIC), and a stage that starts mid-cluster.
  const std::pair<const char*, std::array<int, 4>> cases[] = {
      {"dgx-h100:16", {16, 1, 8, 0}},  {"dgx-h100:16", {8, 2, 8, 0}},  {"dgx-h100:64", {32, 2, 4, 1}},
      {"dgx-a100:64", {4, 1, 16, 3}},  {"dgx-a100:64", {2, 4, 32, 1}}, {"p3.8xlarge:48", {24, 1, 2, 1}},
      {"p5.48xlarge:32", {64, 1, 2, 1}}, {"g4dn.12xlarge:40", {10, 2, 4, 1}}};
  for (const auto& [spec, d] : cases) {
    const hw::Cluster c = hw::resolve_cluster(spec, hw::builtin_catalog());
    const int size = d[0] * d[1] * d[2];
    std::vector<int> devices(size);
    std::iota(devices.begin(), devices.end(), d[3] * size);
    ASSERT_LE(static_cast<int>(devices.back()), c.num_devices() - 1) << spec;
    SCOPED_TRACE(std::string(spec) + " dp " + std::to_string(d[0]) + " cp " + std::to_string(d[1]) + " tp " +
                 std::to_string(d[2]));
    expect_same_groups(c, degrees(d[0], d[1], d[2]), devices);
  }
}

TEST(StageGroups, IdenticalWholeNodes) {
  const hw::Cluster c = hw::resolve_cluster("dgx-a100:4+dgx-h100:4", hw::builtin_catalog());
  EXPECT_EQ(hw::identical_whole_nodes(c, 0, 32), 8);
  EXPECT_EQ(hw::identical_whole_nodes(c, 8, 16), 8);
  EXPECT_EQ(hw::identical_whole_nodes(c, 0, 40), 0);  // A100 and H100 nodes
  EXPECT_EQ(hw::identical_whole_nodes(c, 4, 16), 0);  // not whole nodes
  EXPECT_EQ(hw::identical_whole_nodes(c, 0, 12), 0);
  hw::Cluster racks = hw::resolve_cluster("dgx-h100:4", hw::builtin_catalog());
  racks.nodes_per_rack = 2;
  for (auto& n : racks.nodes) n.rack = n.id / 2;
  EXPECT_EQ(hw::identical_whole_nodes(racks, 0, 16), 8);
  EXPECT_EQ(hw::identical_whole_nodes(racks, 0, 32), 0);  // two racks
}

}  // namespace
}  // namespace strata::cost
