// tests/plan: plan --engine (issue 37) — the search keeps only strategies the engine can run (filtered before
// costing, counted per feature), costs them with its traits (torchtitan's early stop and compiled kernels, plain
// PyTorch's eager kernels, fp32 attention unfused), records the engine in the plan file, and refuses up front what
// the engine cannot run at all. The restricted search equals the full search filtered by the same predicate.
#include <gtest/gtest.h>

#include "strata/core/error.hpp"
#include "strata/cost/engine.hpp"
#include "strata/plan/search.hpp"

namespace cost = strata::cost;
namespace hw = strata::hw;
namespace model = strata::model;
namespace plan = strata::plan;

namespace {

plan::PlanOptions options(std::int64_t gbs, const char* engine) {
  plan::PlanOptions opt;
  opt.global_batch = gbs;
  opt.top_k = 4;
  opt.baselines = false;
  if (engine) opt.engine = cost::engine_profile(engine);
  return opt;
}

}  // namespace

TEST(EnginePlan, OnlyRunnableStrategiesWithTheEnginesTraits) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-a100:2", hw::builtin_catalog());
  for (const char* name : {"megatron", "torchtitan-toml", "torchtitan", "deepspeed", "pytorch"}) {
    const auto opt = options(128, name);
    const auto r = plan::plan(m, c, opt);
    ASSERT_FALSE(r.top.empty()) << name;
    for (const auto& cand : r.top) {
      EXPECT_FALSE(cost::engine_cannot_run(*opt.engine, m, c, cand.strategy).has_value()) << name;
      cost::Strategy traits = cand.strategy;
      cost::apply_engine_traits(*opt.engine, c, traits);
      EXPECT_EQ(traits, cand.strategy) << name << ": costed without the engine's stack";
    }
    const auto j = plan::plan_to_json(r, m, c, opt);
    EXPECT_EQ(j.at("engine").get<std::string>(), name);
  }
  // torchtitan's full recompute stops early; the plain loop runs eager kernels and no tp/pp.
  const auto pt = plan::plan(m, c, options(128, "pytorch"));
  for (const auto& cand : pt.top) {
    EXPECT_TRUE(cand.strategy.eager_elementwise);
    EXPECT_EQ(cand.strategy.tp, 1);
    EXPECT_EQ(cand.strategy.pp, 1);
  }
}

TEST(EnginePlan, RestrictedSearchIsTheFullSearchFiltered) {
  // Megatron's traits are the search's defaults, so its best plan is the best runnable plan of the full space.
  const auto m = model::zoo_model("gpt2-medium");
  const auto c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  // The `all` space has what Megatron cannot run (gpipe, pipedream, 2bw, Oases' overlap and recompute).
  auto full = options(64, nullptr);
  full.space = plan::Space::all;
  full.top_k = 100000;
  full.exhaustive = true;
  full.objective = plan::Objective::fastest;  // by time: the margin rule may put a slower plan first
  const auto all = plan::plan(m, c, full);
  const auto& meg = cost::engine_profile("megatron");
  const plan::Candidate* best = nullptr;
  for (const auto& cand : all.top)
    if (!cost::engine_cannot_run(meg, m, c, cand.strategy)) {
      best = &cand;
      break;
    }
  ASSERT_NE(best, nullptr);
  auto restricted = options(64, "megatron");
  restricted.space = plan::Space::all;
  restricted.objective = plan::Objective::fastest;
  const auto r = plan::plan(m, c, restricted);
  EXPECT_DOUBLE_EQ(r.top.front().estimate.iteration_time_s, best->estimate.iteration_time_s);
  bool counted = false;
  for (const auto& x : r.rejected) counted = counted || x.reason.rfind("engine megatron: ", 0) == 0;
  EXPECT_TRUE(counted) << "the filtered configurations are counted per feature";
}

TEST(EnginePlan, RefusesUpFrontWhatTheEngineCannotRun) {
  const auto c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  auto expect_refusal = [&](const char* mdl, const char* engine, const char* word) {
    try {
      plan::plan(model::zoo_model(mdl), c, options(64, engine));
      ADD_FAILURE() << engine << " planned " << mdl;
    } catch (const strata::core::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(word), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(engine), std::string::npos) << e.what();
    }
  };
  expect_refusal("mpt-7b", "megatron", "ALiBi");
  expect_refusal("gpt2-medium", "torchtitan", "gpt2-medium");
  expect_refusal("gpt2-medium", "strata-exec", "GPU devices");
  // bf16 on V100: refused with the dtype to use instead; fp16 plans.
  const auto v100 = hw::resolve_cluster("p3.8xlarge:2", hw::builtin_catalog());
  const auto m = model::zoo_model("gpt2-medium");
  try {
    plan::plan(m, v100, options(32, "megatron"));
    ADD_FAILURE() << "bf16 on V100 planned";
  } catch (const strata::core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--dtype fp16"), std::string::npos) << e.what();
  }
  auto fp16 = options(32, "megatron");
  fp16.dtype = hw::Dtype::fp16;
  EXPECT_EQ(plan::plan(m, v100, fp16).top.front().strategy.dtype, hw::Dtype::fp16);
}
