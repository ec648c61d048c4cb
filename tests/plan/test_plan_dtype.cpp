// tests/plan/test_plan_dtype: `plan --dtype` plans the job in that precision — every candidate is an fp32
// strategy whose memory (16 B/param + fp32 activations, data/precision_recipes.json) fits, as re-estimated.
#include <gtest/gtest.h>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

TEST(PlanDtype, Fp32PlansFitAnFp32Run) {
  model::TransformerConfig cfg;
  cfg.name = "gpt-1.3b";
  cfg.layers = 24;
  cfg.hidden = 2048;
  cfg.heads = 16;
  cfg.vocab = 51200;
  cfg.seq = 2048;
  const auto m = model::build_transformer(cfg, "test");
  const auto c = hw::resolve_cluster("p3.16xlarge:1", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 64;
  opt.dtype = hw::Dtype::fp32;
  opt.space = Space::three_d;
  opt.baselines = false;
  const auto r = plan(m, c, opt);
  ASSERT_FALSE(r.top.empty());
  for (const auto& cand : r.top) {
    EXPECT_EQ(cand.strategy.dtype, hw::Dtype::fp32);
    const auto e = cost::estimate(m, c, cand.strategy);
    EXPECT_TRUE(e.fits);
    EXPECT_DOUBLE_EQ(e.peak_memory_bytes, cand.estimate.peak_memory_bytes);
    // Same strategy in bf16 holds fewer activation bytes (2-byte blocks): the plan was costed in fp32.
    auto bf16 = cand.strategy;
    bf16.dtype = hw::Dtype::bf16;
    const auto eb = cost::estimate(m, c, bf16);
    EXPECT_GT(e.stages[0].memory.activations_bytes, 1.5 * eb.stages[0].memory.activations_bytes);
  }
}

TEST(PlanElementwise, EagerPlansAreCostedEagerAndNeverFasterThanFused) {
  // `plan --elementwise eager`: every candidate (and baseline) carries elementwise=eager, its estimate is the
  // strategy's own, and the best eager plan is no faster than the best fused one (eager only adds traffic).
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:2", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 64;
  opt.space = Space::full;
  const auto fused = plan(m, c, opt);
  opt.eager_elementwise = true;
  const auto eager = plan(m, c, opt);
  ASSERT_FALSE(eager.top.empty());
  for (const auto& cand : eager.top) {
    EXPECT_TRUE(cand.strategy.eager_elementwise);
    const auto e = cost::estimate(m, c, cand.strategy);
    EXPECT_NEAR(e.iteration_time_s, cand.estimate.iteration_time_s, 1e-12 * e.iteration_time_s);
  }
  for (const auto& b : eager.baselines)
    if (b.found) EXPECT_TRUE(b.strategy.eager_elementwise) << b.name;
  EXPECT_GT(eager.top.front().estimate.iteration_time_s, fused.top.front().estimate.iteration_time_s);
  EXPECT_FALSE(fused.top.front().strategy.eager_elementwise);
}

}  // namespace
}  // namespace strata::plan
