// Tests for cost/strategy_keys: the table is complete (every row has its accessors), every key round-trips
// through the text and JSON forms, every key marked enters_cost changes the planner's cache key, the help lists
// every key, and the `optim` key added through the table costs the optimizer step's temporaries.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "helpers.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/strategy_keys.hpp"

using namespace strata;
using namespace strata::cost;
using cost_test::error_of;

namespace {

// A non-default value of every key (the test below fails for a new row until it has one here).
const std::map<std::string, std::string>& other_values() {
  static const std::map<std::string, std::string> v = {
      {"dp", "3"},          {"tp", "2"},           {"pp", "2"},         {"mbs", "2"},         {"gbs", "128"},
      {"v", "2"},           {"schedule", "gpipe"}, {"zero", "2"},       {"recompute", "full"}, {"sp", "on"},
      {"dtype", "fp16"},    {"rlayers", "1+2"},    {"earlystop", "on"}, {"split", "5+5"},    {"place", "1+0"},
      {"attention", "eager"}, {"overlap", "async"}, {"elementwise", "eager"}, {"loss", "fp32"}, {"fp8cast", "separate"},
      {"cp", "2"},          {"optim", "foreach"},  {"grads", "ondemand"}, {"gradbuf", "bf16"}, {"lpweights", "on"}, {"offload", "2"}, {"stages", "a100:dp1:tp1:4/a100:dp1:tp1:6"},
      {"layers", "tp1*4/tp1.full*6"}};
  return v;
}

Strategy base() { return parse_strategy("dp=2,tp=1,pp=1,gbs=64"); }

}  // namespace

TEST(StrategyKeys, EveryRowHasItsAccessors) {
  std::set<std::string_view> names, json_names, python_names;
  for (const auto& k : strategy_keys()) {
    SCOPED_TRACE(std::string(k.name));
    EXPECT_TRUE(names.insert(k.name).second) << "key listed twice";
    EXPECT_TRUE(python_names.insert(k.python_name).second) << "python keyword listed twice";
    EXPECT_FALSE(k.help.empty());
    EXPECT_FALSE(k.values.empty());
    EXPECT_FALSE(k.default_text.empty());
    EXPECT_NE(k.parse, nullptr);
    EXPECT_NE(k.text, nullptr);
    if (!k.json_name.empty()) {
      EXPECT_TRUE(json_names.insert(k.json_name).second) << "JSON name listed twice";
      EXPECT_NE(k.write_json, nullptr);
      EXPECT_NE(k.read_json, nullptr);
    }
    if (k.enters_cost) {
      EXPECT_NE(k.cost_values, nullptr) << "enters the cost but gives no cache-key numbers";
    }
    if (!k.searched) {
      EXPECT_NE(k.copy, nullptr) << "not searched, so the planner must copy it";
    }
    EXPECT_EQ(find_strategy_key(k.name), &k);
  }
  // The per-stage form's keys close the text form.
  const auto keys = strategy_keys();
  ASSERT_GE(keys.size(), 2u);
  EXPECT_EQ(keys[keys.size() - 2].name, "stages");
  EXPECT_EQ(keys.back().name, "layers");
}

// The planner's layer-cost memo (plan/eval.cpp) keys on append_cost_key: a key that changes a cost but not the
// key would return stale costs.
TEST(StrategyKeys, EveryCostKeyChangesTheCacheKey) {
  for (const auto& k : strategy_keys()) {
    if (!k.enters_cost) continue;
    SCOPED_TRACE(std::string(k.name));
    const auto it = other_values().find(std::string(k.name));
    ASSERT_NE(it, other_values().end()) << "add a non-default value for the new key to other_values()";
    Strategy a = base();
    Strategy b = a;
    set_strategy_key(b, k.name, it->second, "test");
    std::vector<double> ka, kb;
    append_cost_key(a, ka);
    append_cost_key(b, kb);
    EXPECT_NE(ka, kb);
  }
}

TEST(StrategyKeys, UnsearchedKeysAreCopiedSearchedOnesAreNot) {
  Strategy from = parse_strategy("dp=4,gbs=256,elementwise=eager,optim=foreach,dtype=fp16,recompute=full,earlystop=on");
  Strategy to;
  copy_unsearched_keys(from, to);
  EXPECT_TRUE(to.eager_elementwise);
  EXPECT_EQ(to.optim, OptimizerStep::foreach);
  EXPECT_EQ(to.dtype, hw::Dtype::fp16);
  EXPECT_EQ(to.global_batch, 256);
  EXPECT_TRUE(to.recompute_early_stop);
  EXPECT_EQ(to.dp, 1);                              // searched: the planner's own
  EXPECT_EQ(to.recompute, model::Recompute::none);  // searched
}

TEST(StrategyKeys, EveryKeyRoundTripsTextAndJson) {
  for (const auto& k : strategy_keys()) {
    SCOPED_TRACE(std::string(k.name));
    const auto it = other_values().find(std::string(k.name));
    ASSERT_NE(it, other_values().end()) << "add a non-default value for the new key to other_values()";
    // The per-stage keys start from a strategy with no uniform degrees (the per-stage form prints none).
    Strategy s = k.name == "layers"   ? parse_strategy("gbs=64,stages=" + other_values().at("stages"))
                 : k.name == "stages" ? parse_strategy("gbs=64")
                                      : base();
    set_strategy_key(s, k.name, it->second, "test");
    const std::string text = to_cli_string(s);
    EXPECT_EQ(parse_strategy(text), s) << text;
    if (!k.json_name.empty() || k.name == "layers") {
      const auto j = to_json(s);
      EXPECT_EQ(strategy_from_json(nlohmann::json::parse(j.dump()), "s.json"), s) << j.dump();
    }
  }
}

TEST(StrategyKeys, ErrorsAndHelpListEveryKey) {
  const std::string err = error_of([] { parse_strategy("dp=2,nope=1"); });
  const std::string help = strategy_keys_help();
  for (const auto& k : strategy_keys()) {
    EXPECT_NE(err.find(std::string(k.name)), std::string::npos) << k.name;
    EXPECT_NE(help.find(fmt::format("  {}={}: ", k.name, k.values)), std::string::npos) << k.name;
  }
  const std::string json_err =
      error_of([] { strategy_from_json(nlohmann::json::parse(R"({"nope": 1})"), "s.json"); });
  for (const auto& k : strategy_keys()) {
    if (!k.json_name.empty()) {
      EXPECT_NE(json_err.find(std::string(k.json_name)), std::string::npos) << k.json_name;
    }
  }
  EXPECT_NE(error_of([] {
              Strategy x;
              set_strategy_key(x, "nope", "1", "strata.estimate");
            }).find("strata.estimate: unknown key 'nope'"),
            std::string::npos);
}

// --- optim: the key added through the table ----------------------------------------------------------------------
TEST(StrategyKeys, OptimParsesPrintsAndDefaultsToFused) {
  EXPECT_EQ(parse_strategy("gbs=8").optim, OptimizerStep::fused);
  EXPECT_EQ(to_cli_string(parse_strategy("gbs=8")).find("optim"), std::string::npos);  // the default is left out
  const auto s = parse_strategy("gbs=8,optim=foreach");
  EXPECT_EQ(s.optim, OptimizerStep::foreach);
  EXPECT_NE(to_cli_string(s).find(",optim=foreach"), std::string::npos);
  EXPECT_EQ(to_json(s)["optim"], "foreach");
  EXPECT_FALSE(to_json(parse_strategy("gbs=8")).contains("optim"));
  EXPECT_EQ(parse_strategy("gbs=8,optim=forloop").optim, OptimizerStep::forloop);
  EXPECT_NE(error_of([] { parse_strategy("gbs=8,optim=lazy"); }).find("optim: 'lazy' is not fused, foreach or forloop"),
            std::string::npos);
  EXPECT_NE(error_of([] { strategy_from_json(nlohmann::json::parse(R"({"optim": "x"})"), "s.json"); }).find("optim"),
            std::string::npos);
}

TEST(StrategyKeys, OptimizerStepTemporaries) {
  // PyTorch's AdamW (torch/optim/adamw.py): fused in place; foreach one fp32 exp_avg_sq-sized tensor per parameter
  // of the group; for-loop two tensors of one parameter at a time.
  EXPECT_EQ(optimizer_step_temp_bytes(OptimizerStep::fused, 1e9, 1e8), 0.0);
  EXPECT_EQ(optimizer_step_temp_bytes(OptimizerStep::foreach, 1e9, 1e8), 4e9);
  EXPECT_EQ(optimizer_step_temp_bytes(OptimizerStep::forloop, 1e9, 1e8), 8e8);
}

TEST(StrategyKeys, ForeachRaisesThePeakOnlyBeyondTheFreedActivations) {
  const auto m = model::zoo_model("llama2-7b");
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto est = [&](const std::string& text) {
    return estimate(m, c, complete_strategy(parse_strategy(text), m, c), {});
  };
  // Full recompute and mbs 1: few activations, 7B parameters' states over tp 8.
  const std::string base_text = "tp=8,mbs=1,gbs=8,recompute=full,sp=on";
  const auto fused = est(base_text);
  const auto foreach = est(base_text + ",optim=foreach");
  const auto forloop = est(base_text + ",optim=forloop");
  const auto& mf = fused.stages[0].memory;
  const auto& me = foreach.stages[0].memory;
  EXPECT_EQ(mf.optimizer_step_bytes, 0.0);
  const double state_params = mf.optimizer_bytes / 12.0;  // bf16 recipe: 12 bytes of states per parameter
  EXPECT_NEAR(me.optimizer_step_bytes, 4.0 * state_params - mf.activations_bytes - mf.recompute_bytes,
              1e-6 * me.optimizer_step_bytes);
  EXPECT_GT(me.optimizer_step_bytes, 0.0);
  EXPECT_NEAR(foreach.peak_memory_bytes - fused.peak_memory_bytes, me.optimizer_step_bytes, 1.0);
  EXPECT_LE(forloop.peak_memory_bytes, foreach.peak_memory_bytes);
  EXPECT_EQ(foreach.iteration_time_s, fused.iteration_time_s);  // memory only
  // ZeRO-1 shards the states over dp, and the temporaries with them.
  const auto z = est("tp=4,dp=2,mbs=1,gbs=8,recompute=full,sp=on,zero=1,optim=foreach").stages[0].memory;
  EXPECT_NEAR(z.optimizer_step_bytes, 4.0 * z.optimizer_bytes / 12.0 - z.activations_bytes - z.recompute_bytes,
              1e-6 * z.optimizer_bytes);
  // PipeDream steps with other micro-batches' activations live: nothing is freed for the step.
  const auto pd = est("tp=8,mbs=1,gbs=8,recompute=full,sp=on,schedule=pipedream,optim=foreach").stages[0].memory;
  EXPECT_NEAR(pd.optimizer_step_bytes, 4.0 * pd.optimizer_bytes / 12.0, 1e-6 * pd.optimizer_bytes);
}
