// Tests for cost/strategy_keys: the table is complete (every row has its accessors), every key round-trips
// through the text and JSON forms, every key marked enters_cost changes the planner's cache key, and the help and
// the error messages list every key.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "helpers.hpp"
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
      {"attention", "eager"}, {"overlap", "async"}, {"elementwise", "eager"}, {"fp8cast", "separate"},
      {"cp", "2"},          {"stages", "a100:dp1:tp1:4/a100:dp1:tp1:6"},
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
  Strategy from = parse_strategy("dp=4,gbs=256,elementwise=eager,dtype=fp16,recompute=full,earlystop=on");
  Strategy to;
  copy_unsearched_keys(from, to);
  EXPECT_TRUE(to.eager_elementwise);
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
