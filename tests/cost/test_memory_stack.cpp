// tests/cost/test_memory_stack: activation memory per stack through the estimate — `loss=fused|fp32` parses,
// prints and round-trips; the fp32 loss adds exactly its per-logit bytes on the last stage only; the eager stack
// (`elementwise=eager`) stores what model/layer_eager.cpp says, and the fused stack is unchanged by either key's
// absence (docs/cost-model.md §Activation memory per stack).
#include <gtest/gtest.h>

#include <string>

#include "helpers.hpp"

using namespace strata;
using namespace strata::cost;

TEST(LossKey, ParsesPrintsAndRoundTrips) {
  const auto s = parse_strategy("dp=2,tp=4,pp=1,mbs=1,gbs=8,loss=fp32");
  EXPECT_TRUE(s.fp32_loss);
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8,loss=fused").fp32_loss);
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8").fp32_loss);  // fused is the default
  EXPECT_NE(to_cli_string(s).find(",loss=fp32"), std::string::npos);
  EXPECT_EQ(to_cli_string(parse_strategy("dp=2,gbs=8")).find("loss"), std::string::npos);
  EXPECT_EQ(to_json(s)["loss"], "fp32");
  EXPECT_TRUE(strategy_from_json(nlohmann::json::parse(to_json(s).dump()), "s.json").fp32_loss);
  EXPECT_TRUE(parse_strategy(to_cli_string(s)).fp32_loss);
  EXPECT_NE(cost_test::error_of([] { parse_strategy("gbs=8,loss=bf16"); }).find("loss: 'bf16' is not fused or fp32"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([] { strategy_from_json(nlohmann::json::parse(R"({"loss": "half"})"), "s.json"); })
                .find("loss: 'half' is not fused or fp32"),
            std::string::npos);
}

namespace {
Estimate run(const std::string& spec) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1");
  CostOptions opt;
  return estimate(m, c, complete_strategy(parse_strategy(spec), m, c), opt);
}
}  // namespace

// The fp32 loss: the caller's bf16 logits, log_softmax's gradient pair and the labels on top of the fused path's
// fp32 softmax, 10 B per logit + 8 B per token, on the last stage (1F1B: one micro-batch in flight there).
TEST(LossKey, Fp32LossAddsItsBytesOnTheLastStageOnly) {
  const auto m = model::zoo_model("llama3-8b");
  const double tokens = 2.0 * static_cast<double>(m.seq);
  const double vocab = static_cast<double>(m.layers.back().vocab);
  for (const char* spec : {"pp=1,mbs=2,gbs=16", "pp=2,mbs=2,gbs=16,elementwise=eager"}) {
    const auto fused = run(spec);
    const auto fp32 = run(std::string(spec) + ",loss=fp32");
    const auto& last_f = fused.stages.back().memory;
    const auto& last_p = fp32.stages.back().memory;
    EXPECT_DOUBLE_EQ(last_p.activations_bytes - last_f.activations_bytes, tokens * (10 * vocab + 8)) << spec;
    EXPECT_DOUBLE_EQ(fp32.stages.front().memory.activations_bytes - fused.stages.front().memory.activations_bytes,
                     fused.stages.size() > 1 ? 0.0 : tokens * (10 * vocab + 8))
        << spec;
    EXPECT_DOUBLE_EQ(fp32.iteration_time_s, fused.iteration_time_s) << spec;  // memory only
  }
}

// The eager stack stores more activations (fp32 residual, norms, casts, repeated K/V) but costs the same weights
// and optimizer state; its time is what elementwise=eager already charged.
TEST(EagerStackMemory, MoreActivationsSameStaticState) {
  const auto fused = run("pp=1,mbs=2,gbs=16");
  const auto eager = run("pp=1,mbs=2,gbs=16,elementwise=eager");
  const auto& f = fused.stages[0].memory;
  const auto& e = eager.stages[0].memory;
  EXPECT_GT(e.activations_bytes, 1.5 * f.activations_bytes);
  EXPECT_DOUBLE_EQ(e.gradients_bytes + e.optimizer_bytes, f.gradients_bytes + f.optimizer_bytes);
  // Autocast's 16-bit weights are casts: none for the embedding lookup (a real 16-bit copy on the fused stack).
  EXPECT_LT(e.weights_bytes, f.weights_bytes);
  // Full recompute on the eager stack keeps the fp32 block inputs: twice the fused stack's bf16 ones per block.
  const auto fused_full = run("pp=1,mbs=2,gbs=16,recompute=full");
  const auto eager_full = run("pp=1,mbs=2,gbs=16,recompute=full,elementwise=eager");
  EXPECT_GT(eager_full.stages[0].memory.activations_bytes, fused_full.stages[0].memory.activations_bytes);
  EXPECT_GT(eager_full.stages[0].memory.recompute_bytes, fused_full.stages[0].memory.recompute_bytes);
}
