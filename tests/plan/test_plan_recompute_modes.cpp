// tests/plan/test_plan_recompute_modes: the search skips selective recompute where every GPU runs a fused
// attention kernel — there it costs exactly what none does (the claim is checked here on the same strategy) —
// and keeps it where a GPU runs eager attention, whose stored scores it drops.
#include <gtest/gtest.h>

#include <algorithm>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

PlanResult plan_top(const model::Model& m, const hw::Cluster& c, int top) {
  PlanOptions opt;
  opt.global_batch = 64;
  opt.top_k = top;
  opt.baselines = false;
  return plan(m, c, opt);
}

bool lists_selective(const PlanResult& r) {
  return std::any_of(r.top.begin(), r.top.end(),
                     [](const Candidate& x) { return x.strategy.recompute == model::Recompute::selective; });
}

TEST(PlanRecomputeModes, FusedAttentionSkipsSelectiveWhichWouldEqualNone) {
  const model::Model m = model::zoo_model("gpt2-xl");
  const auto c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  const PlanResult r = plan_top(m, c, 20);
  ASSERT_FALSE(r.top.empty());
  EXPECT_FALSE(lists_selective(r));
  bool counted = false;
  for (const auto& x : r.rejected) counted = counted || x.reason.find("selective = none") != std::string::npos;
  EXPECT_TRUE(counted);
  // Why skipping loses nothing: the best plan with selective instead of none costs the same time and memory.
  cost::Strategy s = r.top.front().strategy;
  ASSERT_EQ(s.recompute, model::Recompute::none);
  s.recompute = model::Recompute::selective;
  const cost::Estimate e = cost::estimate(m, c, s);
  EXPECT_DOUBLE_EQ(e.iteration_time_s, r.top.front().estimate.iteration_time_s);
  EXPECT_DOUBLE_EQ(e.peak_memory_bytes, r.top.front().estimate.peak_memory_bytes);
}

TEST(PlanRecomputeModes, EagerAttentionKeepsSelective) {
  // V100s have no FlashAttention (no bf16 tensor cores): eager attention stores the scores, selective drops them.
  const model::Model m = model::zoo_model("gpt2-xl");
  const auto c = hw::resolve_cluster("p3.16xlarge:1", hw::builtin_catalog());
  const PlanResult r = plan_top(m, c, 50);
  ASSERT_FALSE(r.top.empty());
  for (const auto& x : r.rejected) EXPECT_EQ(x.reason.find("selective = none"), std::string::npos) << x.reason;
  cost::Strategy s = r.top.front().strategy;
  s.recompute = model::Recompute::none;
  cost::Strategy sel = s;
  sel.recompute = model::Recompute::selective;
  EXPECT_LT(cost::estimate(m, c, sel).peak_memory_bytes, cost::estimate(m, c, s).peak_memory_bytes);
}

}  // namespace
}  // namespace strata::plan
