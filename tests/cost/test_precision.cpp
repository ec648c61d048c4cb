// tests/cost/test_precision: precision recipes as data — the built-in file parses and agrees with the bf16
// constants, bad files are InputErrors, an fp32 run holds 16 B/param + fp32 activations, and fp8 is not a plain
// 2× (GEMM-only speed-up at the fitted efficiency, bf16 non-GEMM work, scaling traffic).
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "strata/cost/precision.hpp"
#include "strata/cost/stage.hpp"

using namespace strata;
using namespace strata::cost;

TEST(PrecisionRecipes, BuiltInFileAndTheBf16ConstantsAgree) {
  EXPECT_TRUE(recipe_matches(builtin_constants(), precision_recipe(hw::Dtype::bf16)));
  EXPECT_TRUE(recipe_matches(builtin_constants(), precision_recipe(hw::Dtype::fp16)));
  const auto& fp32 = precision_recipe(hw::Dtype::fp32);
  EXPECT_DOUBLE_EQ(fp32.state_bytes_per_param(), 16.0);  // 4 + 4 + 8 (Adam m, v), no master copy
  EXPECT_DOUBLE_EQ(fp32.activation_bytes_per_element, 4.0);
  EXPECT_EQ(precision_recipe(hw::Dtype::fp8).non_gemm_dtype, hw::Dtype::bf16);
  EXPECT_DOUBLE_EQ(precision_recipe(hw::Dtype::fp8).activation_bytes_per_element, 2.0);
}

TEST(PrecisionRecipes, BadFilesAreInputErrors) {
  const auto recipe = nlohmann::json::parse(R"({"dtype": "fp32", "weight_bytes_per_param": 4,
    "grad_bytes_per_param": 4, "optimizer_bytes_per_param": 8, "grad_comm_bytes_per_param": 4,
    "optimizer_traffic_bytes_per_param": 36, "activation_bytes_per_element": 4, "non_gemm_dtype": "fp32",
    "fp8_scaling_bytes_per_gemm_input_element": 0, "source": "test"})");
  EXPECT_EQ(recipes_from_json({{"recipes", {recipe}}}, "r.json").size(), 1u);
  EXPECT_NE(cost_test::error_of([&] { recipes_from_json({{"recipes", {recipe, recipe}}}, "r.json"); })
                .find("duplicate"),
            std::string::npos);
  auto bad = recipe;
  bad["weight_bytes_per_param"] = -1;
  EXPECT_NE(cost_test::error_of([&] { recipes_from_json({{"recipes", {bad}}}, "r.json"); })
                .find("weight_bytes_per_param"),
            std::string::npos);
  bad = recipe;
  bad["dtype"] = "fp2";  // not a dtype (fp4 is one since the block-scaled formats)
  EXPECT_NE(cost_test::error_of([&] { recipes_from_json({{"recipes", {bad}}}, "r.json"); }), "");
}

TEST(PrecisionRecipes, Fp32RunHoldsSixteenBytesPerParamAndFp32Activations) {
  const auto m = cost_test::gpt(4, 1024, 16, 512);
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto e = cost_test::run(m, c, "dp=8,mbs=2,gbs=16,dtype=fp32,attention=eager");
  const auto& mem = e.stages[0].memory;
  double params = 0, act = 0, act16 = 0;
  for (const auto& l : m.layers) {
    model::LayerQuery q;
    q.micro_batch = 2;
    q.seq = m.seq;
    q.bytes_per_element = 4;
    const auto lc = model::layer_cost(l, q);
    params += lc.params_per_tp_rank;
    act += lc.act_total_bytes();
    q.bytes_per_element = 2;
    act16 += model::layer_cost(l, q).act_total_bytes();
  }
  EXPECT_NEAR(mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes, 16 * params, 1e-6 * params);
  EXPECT_NEAR(mem.activations_bytes, act, 1e-9 * act);
  // The same strategy in bf16: 18 B/param and 2-byte activations (the head's fp32 logits stay fp32).
  const auto b = cost_test::run(m, c, "dp=8,mbs=2,gbs=16,dtype=bf16,attention=eager");
  const auto& mb = b.stages[0].memory;
  EXPECT_NEAR(mb.weights_bytes + mb.gradients_bytes + mb.optimizer_bytes, 18 * params, 1e-6 * params);
  EXPECT_NEAR(mb.activations_bytes, act16, 1e-9 * act);
  EXPECT_GT(act, 1.5 * act16);
}

TEST(PrecisionRecipes, Fp8IsNotAPlainDoubling) {
  const auto m = cost_test::gpt(8, 8192, 64, 4096);
  const auto c = cost_test::cluster("dgx-h100:1");
  const auto bf16 = cost_test::run(m, c, "tp=8,mbs=1,gbs=8,sp=on,dtype=bf16");
  const auto fp8 = cost_test::run(m, c, "tp=8,mbs=1,gbs=8,sp=on,dtype=fp8");
  EXPECT_LT(fp8.stages[0].compute_s, bf16.stages[0].compute_s);
  EXPECT_GT(fp8.stages[0].compute_s, 0.5 * bf16.stages[0].compute_s);
  // Activations stay bf16 except the linear layers' saved GEMM inputs (TransformerEngine keeps their fp8 casts):
  // 7·b·s·h/t bytes less per block (QKV, projection, fc1, fc2 inputs), 8 blocks.
  EXPECT_NEAR(bf16.stages[0].memory.activations_bytes - fp8.stages[0].memory.activations_bytes,
              8 * 7.0 * 4096 * 8192 / 8, 1.0);
}
