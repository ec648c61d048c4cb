// tests/exec/test_options: the torch-free side — which models and strategies the runtime accepts (with errors
// naming the rule), the option and record JSON round trips, the steady-median and fault-spec parsing.
#include <gtest/gtest.h>

#include "strata/core/error.hpp"
#include "strata/exec/run.hpp"

namespace strata::exec {
namespace {

cost::Strategy complete(const std::string& s, const model::Model& m, int world) {
  return cost::complete_strategy(cost::parse_strategy(s), m, local_cpu_cluster(world));
}

TEST(Options, GptDimsOfTheZooModels) {
  const auto d = gpt_dims_of(model::zoo_model("tiny-gpt"));
  EXPECT_EQ(d.layers, 4);
  EXPECT_EQ(d.hidden, 64);
  EXPECT_EQ(d.heads, 4);
  EXPECT_EQ(d.ffn, 256);
  EXPECT_EQ(d.seq, 32);
  EXPECT_EQ(d.vocab, 256);
  EXPECT_EQ(d.chain_length(), 6);
  const auto s = gpt_dims_of(model::zoo_model("small-gpt"));
  EXPECT_EQ(s.layers, 8);
  EXPECT_EQ(s.hidden, 256);
  EXPECT_EQ(s.seq, 128);
  EXPECT_EQ(s.vocab, 1024);
}

TEST(Options, NonGptModelsAreRejectedWithTheReason) {
  try {
    gpt_dims_of(model::zoo_model("resnet50"));
    FAIL() << "resnet50 accepted";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("GPT-style"), std::string::npos);
  }
}

TEST(Options, RuntimeRulesOnTopOfTheCostRules) {
  const auto m = model::zoo_model("tiny-gpt");
  const auto d = gpt_dims_of(m);
  EXPECT_EQ(unsupported_reason(d, complete("dp=1,tp=2,pp=1,gbs=4,sp=on", m, 2)), "");
  EXPECT_NE(unsupported_reason(d, complete("dp=1,tp=1,pp=2,mbs=2,gbs=2,schedule=2bw", m, 2)).find("2bw"),
            std::string::npos);
  EXPECT_NE(unsupported_reason(d, complete("dp=2,tp=1,pp=1,gbs=4,schedule=pipedream,zero=1", m, 2)).find("zero"),
            std::string::npos);
  // No --world-size: a missing dp or pp counts as 1 (docs/strategy.md's defaults), so tp=2 runs on 2 ranks.
  EXPECT_EQ(make_run_options(m, cost::parse_strategy("tp=2,gbs=4"), 0).strategy.dp, 1);
  const auto o = make_run_options(m, cost::parse_strategy("tp=2,gbs=4"), 4);
  EXPECT_EQ(o.strategy.dp, 2);
  EXPECT_EQ(o.strategy.split, std::vector<int>{6});
}

TEST(Options, RunOptionsRoundTripThroughJson) {
  auto o = make_run_options(model::zoo_model("tiny-gpt"), cost::parse_strategy("dp=2,tp=1,pp=2,mbs=1,gbs=8,zero=1"), 0);
  o.steps = 7;
  o.seed = 123456789012345ULL;
  o.optimizer = Optimizer::sgd;
  o.lr = 0.25;
  o.fault = parse_fault("3:2:hang", "--fault");
  const auto back = run_options_from_json(nlohmann::json::parse(to_json(o).dump()), "config");
  EXPECT_EQ(to_json(back).dump(), to_json(o).dump());
  EXPECT_EQ(back.fault.rank, 3);
  EXPECT_EQ(back.fault.mode, "hang");
}

TEST(Options, BadFaultAndOptimizerAreInputErrors) {
  EXPECT_THROW(parse_fault("1", "--fault"), core::InputError);
  EXPECT_THROW(parse_fault("a:2", "--fault"), core::InputError);
  EXPECT_THROW(parse_fault("1:2:explode", "--fault"), core::InputError);
  EXPECT_THROW(parse_optimizer("lamb", "--optimizer"), core::InputError);
}

TEST(Options, RecordRoundTripAndSteadyMedian) {
  RunRecord r;
  r.world_size = 2;
  r.losses = {5.5, 5.25};
  r.iteration_times_s = {9.0, 1.0, 3.0, 2.0};
  r.iteration_time_s = steady_median(r.iteration_times_s);
  EXPECT_DOUBLE_EQ(r.iteration_time_s, 2.0);  // the first (warm-up) step is dropped
  r.stages = {{0, 0.5, 0.25}};
  r.ranks = {{0, 0, 0, 0, {1.0}, 2.0, 3.0, 4e6, 5, 4}};
  const auto back = run_record_from_json(nlohmann::json::parse(to_json(r).dump()), "record");
  EXPECT_EQ(to_json(back).dump(), to_json(r).dump());
  EXPECT_DOUBLE_EQ(steady_median({4.0}), 4.0);
  EXPECT_DOUBLE_EQ(steady_median({}), 0.0);
}

}  // namespace
}  // namespace strata::exec
