// tests/plan/test_plan_cp: the planner enumerates context parallelism for long sequences only — its cp
// candidates are complete strategies whose estimate the search reports — and never for short ones.
#include <gtest/gtest.h>

#include <algorithm>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

model::Model small_llama(std::int64_t seq) {
  model::TransformerConfig cfg;
  cfg.name = "cp-plan";
  cfg.layers = 4;
  cfg.hidden = 2048;
  cfg.heads = 16;
  cfg.kv_heads = 4;
  cfg.ffn = 5632;
  cfg.vocab = 32000;
  cfg.seq = seq;
  cfg.activation = model::Activation::swiglu;
  cfg.norm = model::Norm::rmsnorm;
  return model::build_transformer(cfg, "test");
}

PlanResult plan_all(const model::Model& m, const hw::Cluster& c) {
  PlanOptions opt;
  opt.global_batch = 8;
  opt.space = Space::full;
  opt.top_k = 100000;
  opt.exhaustive = true;
  opt.baselines = false;
  return plan(m, c, opt);
}

TEST(PlanContextParallel, LongSequencesSearchCp) {
  const auto c = hw::resolve_cluster("dgx-h100:1", hw::builtin_catalog());
  const auto m = small_llama(32768);
  const auto r = plan_all(m, c);
  int with_cp = 0;
  for (const auto& cand : r.top) {
    if (cand.strategy.cp <= 1) continue;
    ++with_cp;
    // seq/cp ≥ 4096 tokens per rank (plan/context_parallel.cpp): cp ≤ 8 here.
    EXPECT_LE(cand.strategy.cp, 8);
    EXPECT_EQ(cand.strategy.num_devices(), 8);
    const auto e = cost::estimate(m, c, cand.strategy);
    EXPECT_DOUBLE_EQ(e.iteration_time_s, cand.estimate.iteration_time_s);
  }
  EXPECT_GT(with_cp, 0);
}

TEST(PlanContextParallel, ShortSequencesKeepCpOne) {
  const auto c = hw::resolve_cluster("dgx-h100:1", hw::builtin_catalog());
  const auto r = plan_all(small_llama(4096), c);
  ASSERT_FALSE(r.top.empty());
  EXPECT_TRUE(std::all_of(r.top.begin(), r.top.end(), [](const Candidate& x) { return x.strategy.cp == 1; }));
}

}  // namespace
}  // namespace strata::plan
