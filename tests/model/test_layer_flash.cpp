// tests/model/test_layer_flash: the flash attention kernel against closed forms — activation bytes are
// Korthikanti's selective-recompute bytes plus one fp32 log-sum-exp per head and query (4·a·s·b / t), with no
// recompute FLOPs; forward FLOPs stay the PTD-P count (24bsh² + 4bs²h) with the attention core outside the GEMMs.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/core/error.hpp"
#include "layer_fixtures.hpp"
#include "strata/model/layer.hpp"

namespace strata::model {
namespace {

using testing::gpt_block;

LayerQuery query(double b, int t, bool sp, Recompute rc, AttentionKernel k) {
  LayerQuery q;
  q.micro_batch = static_cast<std::int64_t>(b);
  q.tp = t;
  q.sequence_parallel = sp;
  q.recompute = rc;
  q.attention = k;
  return q;
}

void expect_rel(double got, double want) { EXPECT_NEAR(got, want, std::fabs(want) * 1e-12) << got << " vs " << want; }

TEST(FlashAttention, ActivationBytesClosedForm) {
  const double h = 2048, a = 16, s = 1024;
  const auto block = gpt_block(2048, 16, 1024);
  for (double b : {1.0, 2.0})
    for (int t : {1, 2, 4, 8})
      for (bool sp : {false, true}) {
        const bool split = sp && t > 1;
        const double sbh = s * b * h, lse = 4 * a * s * b / t;
        const double eager = split ? sbh / t * (34 + 5 * a * s / h) : sbh * (10 + 24.0 / t + 5 * a * s / (h * t));
        const double flash = (split ? sbh * 34 / t : sbh * (10 + 24.0 / t)) + lse;
        expect_rel(layer_cost(block, query(b, t, sp, Recompute::none, AttentionKernel::eager)).act_total_bytes(),
                   eager);
        expect_rel(layer_cost(block, query(b, t, sp, Recompute::none, AttentionKernel::flash)).act_total_bytes(),
                   flash);
        // Selective recompute has nothing left to drop under flash; full keeps the 2sbh input either way.
        expect_rel(layer_cost(block, query(b, t, sp, Recompute::selective, AttentionKernel::flash)).act_total_bytes(),
                   flash);
        expect_rel(layer_cost(block, query(b, t, sp, Recompute::full, AttentionKernel::flash)).act_total_bytes(),
                   split ? 2 * sbh / t : 2 * sbh);
      }
}

TEST(FlashAttention, FlopsStillCountedWithoutRecompute) {
  const double b = 2, s = 512, h = 1024, t = 2;
  const auto block = gpt_block(1024, 16, 512);
  const LayerCost eager = layer_cost(block, query(b, 2, false, Recompute::selective, AttentionKernel::eager));
  const LayerCost flash = layer_cost(block, query(b, 2, false, Recompute::selective, AttentionKernel::flash));
  const double ptdp = (24 * b * s * h * h + 4 * b * s * s * h) / t;
  expect_rel(flash.fwd_flops, ptdp);
  expect_rel(flash.bwd_flops, 2 * ptdp);
  expect_rel(flash.flash_attention_flops, 4 * b * s * s * h / t);
  EXPECT_EQ(flash.fwd_gemms.size(), 4u);  // QKV, projection, fc1, fc2: the core is the fused kernel
  EXPECT_EQ(flash.recompute_flops, 0);
  expect_rel(eager.recompute_flops, 4 * b * s * s * h / t);
  // No s² softmax/dropout traffic outside the kernel.
  EXPECT_LT(flash.fwd_elementwise_bytes, eager.fwd_elementwise_bytes);
  const LayerCost full = layer_cost(block, query(b, 2, false, Recompute::full, AttentionKernel::flash));
  expect_rel(full.recompute_flops, ptdp);
}

TEST(FlashAttention, ParsesAndNames) {
  EXPECT_EQ(parse_attention_kernel("Flash", "--strategy"), AttentionKernel::flash);
  EXPECT_EQ(to_string(AttentionKernel::eager), "eager");
  EXPECT_THROW(parse_attention_kernel("sdpa", "--strategy"), core::InputError);
}

}  // namespace
}  // namespace strata::model
