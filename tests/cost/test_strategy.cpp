// Tests for cost/strategy: CLI syntax and JSON round trips, defaults, plan-file loading, and one clear error per
// validity rule (the message names the rule).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>

#include "helpers.hpp"

using namespace strata;
using namespace strata::cost;
using cost_test::error_of;

TEST(CostStrategy, ParsesEveryKey) {
  const auto s = parse_strategy(
      "dp=2,tp=4,pp=2,mbs=2,gbs=64,v=2,schedule=interleaved,zero=1,recompute=full,sp=on,dtype=fp16,rlayers=1+2,"
      "split=3+3+3+3");
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.pp, 2);
  EXPECT_EQ(s.micro_batch, 2);
  EXPECT_EQ(s.global_batch, 64);
  EXPECT_EQ(s.virtual_stages, 2);
  EXPECT_EQ(s.schedule, Schedule::interleaved);
  EXPECT_EQ(s.zero_stage, 1);
  EXPECT_EQ(s.recompute, model::Recompute::full);
  EXPECT_TRUE(s.sequence_parallel);
  EXPECT_EQ(s.dtype, hw::Dtype::fp16);
  EXPECT_EQ(s.recompute_layers, (std::vector<int>{1, 2}));
  EXPECT_EQ(s.split, (std::vector<int>{3, 3, 3, 3}));
}

TEST(CostStrategy, CliAndJsonRoundTrip) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto s = complete_strategy(parse_strategy("dp=2,tp=2,pp=2,mbs=1,gbs=16,zero=2,recompute=selective"), m, c);
  const auto again = complete_strategy(parse_strategy(to_cli_string(s)), m, c);
  EXPECT_EQ(to_json(s).dump(), to_json(again).dump());
  const auto from_json = strategy_from_json(nlohmann::json::parse(to_json(s).dump()), "s.json");
  EXPECT_EQ(to_json(s).dump(), to_json(from_json).dump());
}

TEST(CostStrategy, DefaultsFillDegreesSplitAndPlacement) {
  const auto m = model::zoo_model("small-gpt");  // embedding + 8 blocks + head
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto s = complete_strategy(parse_strategy("tp=2,pp=2,gbs=8"), m, c);
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.split, (std::vector<int>{5, 5}));  // Megatron: 4 blocks each, embedding first, head last
  ASSERT_EQ(s.placement.size(), 8u);
  EXPECT_EQ(s.device(1, 1, 1), 7);  // tp fastest, then dp, then pp
  EXPECT_EQ(parse_strategy("v=2,gbs=4").schedule, Schedule::interleaved);
}

TEST(CostStrategy, LoadsPlanFileBestStrategy) {
  const std::string path = ::testing::TempDir() + "/strata_plan_test.json";
  {
    std::ofstream f(path);
    f << R"({"best": {"strategy": {"dp": 2, "tp": 4, "pp": 1, "mbs": 2, "gbs": 32}, "estimate": {}},
             "candidates": []})";
  }
  const auto s = load_strategy_file(path);
  EXPECT_EQ(s.dp, 2);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.global_batch, 32);
  std::remove(path.c_str());
}

TEST(CostStrategy, ErrorsNameTheRule) {
  const auto m = model::zoo_model("small-gpt");  // 8 heads, 10 layers in the chain
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto check = [&](const std::string& text, const std::string& rule) {
    const auto msg = error_of([&] { complete_strategy(parse_strategy(text), m, c); });
    EXPECT_NE(msg.find(rule), std::string::npos) << text << " -> " << msg;
  };
  check("dp=2,tp=2,pp=3,gbs=8", "dp·tp·pp = devices");
  check("dp=8,gbs=12", "gbs divisible by dp·mbs");
  check("dp=3,gbs=9", "dp·tp·pp = devices");
  check("dp=8", "gbs given");
  check("dp=1,pp=8,v=2,gbs=16", "pp·v <= layers");
  check("dp=2,pp=4,v=2,gbs=12", "interleaving needs m % pp == 0");
  check("dp=8,v=2,schedule=1f1b,gbs=8", "v > 1 needs schedule=interleaved");
  check("dp=4,pp=2,gbs=8,split=3+3", "split sums to the layer count");
  check("dp=4,pp=2,gbs=8,split=10", "split has pp·v entries");
  check("dp=8,gbs=8,place=0+1+2+3+4+5+6+6", "placement is a permutation");
  const auto big = cost_test::cluster("dgx-a100:2");  // 16 devices, small-gpt has 8 heads
  const auto msg = error_of([&] { complete_strategy(parse_strategy("dp=1,tp=16,gbs=4"), m, big); });
  EXPECT_NE(msg.find("tp divides heads"), std::string::npos) << msg;
  const auto more_stages = error_of([&] { complete_strategy(parse_strategy("dp=1,pp=16,gbs=16"), m, big); });
  EXPECT_NE(more_stages.find("pp·v <= layers"), std::string::npos) << more_stages;
}

TEST(CostStrategy, SyntaxErrorsNameTheKey) {
  EXPECT_NE(error_of([] { parse_strategy("dp=2,foo=3"); }).find("unknown key 'foo'"), std::string::npos);
  EXPECT_NE(error_of([] { parse_strategy("dp=x"); }).find("dp"), std::string::npos);
  EXPECT_NE(error_of([] { parse_strategy("dp=2,dp=2"); }).find("given twice"), std::string::npos);
  EXPECT_NE(error_of([] { parse_strategy("schedule=zigzag"); }).find("unknown schedule"), std::string::npos);
  EXPECT_NE(error_of([] { parse_strategy("zero=4"); }).find("zero"), std::string::npos);
  EXPECT_NE(error_of([] { parse_strategy("sp=maybe"); }).find("sp"), std::string::npos);
  EXPECT_NE(error_of([] { parse_strategy(""); }).find("empty"), std::string::npos);
  EXPECT_NE(error_of([] { strategy_from_json(nlohmann::json::parse(R"({"dp": 0})"), "s.json"); }).find("s.json: dp"),
            std::string::npos);
  EXPECT_NE(error_of([] { strategy_from_json(nlohmann::json::parse(R"({"dpp": 1})"), "s.json"); }).find("unknown field"),
            std::string::npos);
}

TEST(CostStrategy, RandomInputsOnlyEverThrowInputError) {
  // A cheap in-test version of fuzz/fuzz_strategy: random key=value soups through parse → complete → estimate.
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("dgx-a100:1");
  const std::vector<std::string> keys = {"dp", "tp", "pp", "mbs", "gbs", "v", "schedule", "zero", "recompute",
                                         "rlayers", "sp", "dtype", "split", "place", "bogus", ""};
  const std::vector<std::string> values = {"0", "1", "2", "3", "4", "8", "16", "1000000", "99999999999", "-1", "x",
                                           "1+1", "5+5", "2+3+3+2", "on", "off", "full", "selective", "none",
                                           "interleaved", "gpipe", "2bw", "pipedream", "fp16", "", "+", "0+1+2+3+4+5+6+7"};
  std::mt19937 rng(123);
  int ok = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int j = 0; j < n; ++j) {
      if (j) text += rng() % 10 ? "," : ",,";
      text += keys[rng() % keys.size()];
      if (rng() % 10) text += "=";
      text += values[rng() % values.size()];
    }
    try {
      const auto s = complete_strategy(parse_strategy(text), m, c);
      (void)estimate(m, c, s);
      ++ok;
    } catch (const core::InputError&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << text << " threw a non-InputError: " << e.what();
    }
  }
  EXPECT_GT(ok, 0);  // some random strategies are valid and get estimated
}
