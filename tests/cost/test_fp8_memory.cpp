// tests/cost/test_fp8_memory: the fp8 recipe stores the linear layers' GEMM inputs as the fp8 casts
// TransformerEngine computed with (1 byte), everything else in bf16 — against the closed form of a GPT block —
// and the other recipes keep every activation at activation_bytes_per_element.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "strata/cost/precision.hpp"
#include "strata/model/layer.hpp"

using namespace strata;

TEST(Fp8Memory, GemmInputsStoredInOneByte) {
  const auto& fp8 = cost::precision_recipe(hw::Dtype::fp8);
  EXPECT_EQ(fp8.gemm_input_activation_bytes_per_element, 1.0);
  EXPECT_EQ(fp8.activation_bytes_per_element, 2.0);
  for (auto d : {hw::Dtype::fp32, hw::Dtype::bf16, hw::Dtype::fp16})
    EXPECT_EQ(cost::precision_recipe(d).gemm_input_activation_bytes_per_element,
              cost::precision_recipe(d).activation_bytes_per_element);
  // GPT block (GELU, ffn 4h), tp 4 with sp, flash: the GEMM inputs are the QKV input h, the projection input h/t,
  // the fc1 input h and the fc2 input 4h/t per token (the replicated ones /t under sp): 7·b·s·h/t elements.
  const auto m = cost_test::gpt(2, 4096, 32, 2048);
  model::LayerQuery q;
  q.micro_batch = 2;
  q.seq = 2048;
  q.tp = 4;
  q.sequence_parallel = true;
  q.attention = model::AttentionKernel::flash;
  const double bf16 = model::layer_cost(m.layers[1], q).act_total_bytes();
  q.gemm_input_bytes_per_element = 1;
  const double f8 = model::layer_cost(m.layers[1], q).act_total_bytes();
  EXPECT_NEAR(bf16 - f8, 7.0 * 2 * 2048 * 4096 / 4 * (2 - 1), 1e-6 * bf16);
  // Full recompute keeps only the block input (not a GEMM input): no change.
  q.recompute = model::Recompute::full;
  const double full8 = model::layer_cost(m.layers[1], q).act_total_bytes();
  q.gemm_input_bytes_per_element = 0;
  EXPECT_EQ(full8, model::layer_cost(m.layers[1], q).act_total_bytes());
}
