// tests/plan/test_rank: risk-aware ranking (plan/rank.cpp) — memory margin of a plan, the margin objective's order
// on hand-made candidates, and on real searches: the first plan is within 2 % of the fastest and keeps at least
// its margin; --objective fastest keeps the time order; pruned search equals exhaustive under either objective.
#include <gtest/gtest.h>

#include <algorithm>

#include "strata/core/error.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/memory.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

// A candidate with one stage using `used_gib` of `usable_gib` and iteration time `time_s`.
Candidate cand(double time_s, double used_gib, double usable_gib, std::int64_t order) {
  Candidate c;
  c.estimate.iteration_time_s = time_s;
  cost::StageEstimate st;
  st.memory_bytes = used_gib * (1 << 30);
  st.memory_usable_bytes = usable_gib * (1 << 30);
  c.estimate.stages.push_back(st);
  c.order = order;
  return c;
}

TEST(Rank, MemoryMarginIsTheFullestStagesFreeShare) {
  Candidate c = cand(1.0, 60, 80, 0);
  EXPECT_DOUBLE_EQ(memory_margin(c.estimate), 0.25);
  cost::StageEstimate fuller;
  fuller.memory_bytes = 78.0 * (1 << 30);
  fuller.memory_usable_bytes = 80.0 * (1 << 30);
  c.estimate.stages.push_back(fuller);
  EXPECT_NEAR(memory_margin(c.estimate), 0.025, 1e-12);  // min over stages
  EXPECT_LT(memory_margin(cand(1.0, 90, 80, 0).estimate), 0.0);  // does not fit: negative
}

TEST(Rank, MarginObjectivePrefersTheSafestWithinTwoPercent) {
  // Times 1.000, 1.010 (more margin), 1.019 (most margin), 1.030 (outside the window, most margin of all).
  std::vector<Candidate> top{cand(1.030, 10, 80, 3), cand(1.000, 77, 80, 0), cand(1.019, 40, 80, 2),
                             cand(1.010, 60, 80, 1)};
  PlanOptions opt;
  std::vector<Candidate> fastest = top;
  opt.objective = Objective::fastest;
  rank_by_objective(fastest, opt);
  for (std::size_t i = 0; i < fastest.size(); ++i) EXPECT_EQ(fastest[i].order, static_cast<std::int64_t>(i));
  opt.objective = Objective::margin;
  rank_by_objective(top, opt);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].order, 2);  // 1.9 % slower, 50 % free
  EXPECT_EQ(top[1].order, 1);
  EXPECT_EQ(top[2].order, 0);
  EXPECT_EQ(top[3].order, 3);  // 3 % slower: ranked by time after the window, whatever its margin
}

TEST(Rank, EqualMarginsFallBackToTime) {
  std::vector<Candidate> top{cand(1.01, 40, 80, 1), cand(1.00, 40, 80, 0)};
  PlanOptions opt;
  rank_by_objective(top, opt);
  EXPECT_EQ(top[0].order, 0);
}

TEST(Rank, ObjectiveParsesAndNamesTheFlag) {
  EXPECT_EQ(parse_objective("fastest", "plan: --objective"), Objective::fastest);
  EXPECT_EQ(parse_objective("margin", "plan: --objective"), Objective::margin);
  try {
    parse_objective("safest", "plan: --objective");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("plan: --objective"), std::string::npos);
  }
}

TEST(Rank, SearchUnderEitherObjective) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:1", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 64;
  opt.top_k = 6;
  opt.baselines = false;
  opt.objective = Objective::fastest;
  const PlanResult fast = plan(m, c, opt);
  for (std::size_t i = 1; i < fast.top.size(); ++i)
    EXPECT_LE(fast.top[i - 1].estimate.iteration_time_s, fast.top[i].estimate.iteration_time_s);
  opt.objective = Objective::margin;
  const PlanResult safe = plan(m, c, opt);
  const double t0 = fast.top.front().estimate.iteration_time_s;
  ASSERT_FALSE(safe.top.empty());
  EXPECT_LE(safe.top.front().estimate.iteration_time_s, t0 * (1.0 + opt.margin_tolerance) * (1 + 1e-12));
  EXPECT_GE(memory_margin(safe.top.front().estimate), memory_margin(fast.top.front().estimate) - 1e-3);
  // The pruned search keeps every plan of the window: equal to exhaustive evaluation.
  opt.exhaustive = true;
  const PlanResult all = plan(m, c, opt);
  ASSERT_EQ(all.top.size(), safe.top.size());
  for (std::size_t i = 0; i < all.top.size(); ++i)
    EXPECT_EQ(cost::to_cli_string(all.top[i].strategy), cost::to_cli_string(safe.top[i].strategy)) << i;
}

TEST(Rank, DefaultHeadroomFollowsTheStack) {
  // The allocator gap of the stack (cost/memory.cpp default_headroom_fraction): fragmentation_fraction fused,
  // kEagerAllocatorGapFraction (at least that) eager PyTorch; an explicit --memory-headroom wins over both.
  const auto& k = cost::builtin_constants();
  cost::Strategy fused, eager;
  eager.eager_elementwise = true;
  EXPECT_DOUBLE_EQ(cost::default_headroom_fraction(&fused, k), k.fragmentation_fraction);
  EXPECT_DOUBLE_EQ(cost::default_headroom_fraction(nullptr, k), k.fragmentation_fraction);
  const double eager_gap = std::max(k.fragmentation_fraction, cost::kEagerAllocatorGapFraction);
  EXPECT_DOUBLE_EQ(cost::default_headroom_fraction(&eager, k), eager_gap);
  const double cap = 80.0 * (1 << 30);
  EXPECT_DOUBLE_EQ(cost::usable_memory_bytes(cap, {}, k, &eager), (1 - eager_gap) * cap);
  cost::MemoryHeadroom four_gib;
  four_gib.bytes = 4.0 * (1 << 30);
  EXPECT_DOUBLE_EQ(cost::usable_memory_bytes(cap, four_gib, k, &eager), cap - four_gib.bytes);
}

}  // namespace
}  // namespace strata::plan
