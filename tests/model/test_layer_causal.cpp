// tests/model/test_layer_causal: causal masking and the per-op checkpointing policy against closed forms —
// a causal flash kernel executes the score/value tiles on and below the diagonal, n(n+1)/2 of n² tiles of 128
// (FlashAttention-2 §3.1.1), while the model FLOPs keep the full 4bs²h (the MFU convention); a bidirectional
// block and the eager kernel execute everything; the fused kernel's backward executes 2.5× its forward's work
// (FlashAttention-2, Algorithm 2: five tile products against two) while bwd_flops keep 2×. recompute=op
// (torchtitan's per-op SAC) re-runs wk, wo and the MLP's second matmul and keeps the other matmul outputs.
#include <gtest/gtest.h>

#include <cmath>

#include "layer_fixtures.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::model {
namespace {

using testing::gpt_block;

LayerQuery query(int t, Recompute rc, AttentionKernel k, bool sp = false) {
  LayerQuery q;
  q.micro_batch = 2;
  q.tp = t;
  q.sequence_parallel = sp;
  q.recompute = rc;
  q.attention = k;
  return q;
}

void expect_rel(double got, double want) { EXPECT_NEAR(got, want, std::fabs(want) * 1e-12) << got << " vs " << want; }

TEST(CausalAttention, FlashExecutesTheLowerTriangleOfTiles) {
  for (std::int64_t s : {128, 1000, 4096, 8192}) {
    auto block = gpt_block(1024, 16, s);
    block.causal = true;
    for (int t : {1, 4}) {
      const auto lc = layer_cost(block, query(t, Recompute::none, AttentionKernel::flash));
      const double b = 2, h = 1024;
      const double model_flops = 4 * b * double(s) * double(s) * h / t;  // scores + values, one tp rank
      expect_rel(lc.flash_attention_flops, model_flops);
      const double n = std::ceil(double(s) / 128);
      expect_rel(lc.flash_attention_work_flops, model_flops * (n + 1) / (2 * n));
      expect_rel(lc.flash_attention_bwd_work_flops, 2.5 * model_flops * (n + 1) / (2 * n));
      expect_rel(lc.bwd_flops, 2 * lc.fwd_flops);
      // The model FLOPs (fwd_flops) keep the full count: PTD-P's 24bsh² + 4bs²h per layer.
      expect_rel(lc.fwd_flops, (24 * b * s * h * h + 4 * b * double(s) * s * h) / t);
    }
  }
}

TEST(CausalAttention, BidirectionalAndEagerExecuteEverything) {
  auto block = gpt_block(1024, 16, 4096);
  block.causal = false;
  const auto lc = layer_cost(block, query(2, Recompute::none, AttentionKernel::flash));
  expect_rel(lc.flash_attention_work_flops, lc.flash_attention_flops);
  block.causal = true;
  const auto eager = layer_cost(block, query(2, Recompute::none, AttentionKernel::eager));
  EXPECT_EQ(eager.flash_attention_work_flops, 0.0);  // eager: the products are GEMMs over the full s² matrix
  EXPECT_EQ(eager.flash_attention_bwd_work_flops, 0.0);
  // Every fused generation has the same memory (flash1, flash, cudnn differ only in speed).
  for (auto k : {AttentionKernel::flash1, AttentionKernel::cudnn})
    expect_rel(layer_cost(block, query(2, Recompute::none, k)).act_total_bytes(),
               layer_cost(block, query(2, Recompute::none, AttentionKernel::flash)).act_total_bytes());
}

TEST(CausalAttention, ZooDecodersAreCausalEncodersAreNot) {
  EXPECT_TRUE(zoo_model("llama3-8b").layers[1].causal);
  EXPECT_TRUE(zoo_model("gpt2-small").layers[1].causal);
  const Model t5 = zoo_model("t5-large-32");  // encoder blocks first, then the decoder
  EXPECT_FALSE(t5.layers[1].causal);
  EXPECT_TRUE(t5.layers[t5.layers.size() - 2].causal);
  EXPECT_FALSE(zoo_model("bert-large").layers[1].causal);
  for (const auto& l : zoo_model("vit-huge-32").layers) EXPECT_FALSE(l.causal);
}

TEST(PerOpCheckpointing, RecomputesEverySecondMatmul) {
  // A Llama-shaped block: GQA (8 kv heads of 32), SwiGLU ffn; per-op SAC re-runs wk, wo and w3.
  LayerSpec l = gpt_block(4096, 32, 2048);
  l.kv_heads = 8;
  l.ffn = 14336;
  l.activation = Activation::swiglu;
  l.dropout = false;
  l.causal = true;
  for (int t : {1, 8}) {
    const auto lc = layer_cost(l, query(t, Recompute::op, AttentionKernel::flash, t > 1));
    const double tokens = 2 * 2048.0, h = 4096, kv = 8.0 / t * 128, f = 14336;
    const double wk = 2 * tokens * h * std::max(kv, 128.0), wo = 2 * tokens * (h / t) * h, w3 = 2 * tokens * h * f / t;
    expect_rel(lc.recompute_flops, wk + wo + w3);
    // Kept: the block input, wq/wv/attention outputs, the log-sum-exp, w1's output, the reduce-scattered output.
    const double B = 2, sp = t > 1 ? t : 1;
    const double kept = tokens * h * B / sp + tokens * (h / t + std::max(kv, 128.0) + h / t) * B +
                        2 * (32.0 / t) * 2048 * 4 + tokens * (f / t) * B + tokens * h * B / sp;
    expect_rel(lc.act_total_bytes(), kept);
    // Less memory than no recompute, more than full recompute.
    EXPECT_LT(lc.act_total_bytes(), layer_cost(l, query(t, Recompute::none, AttentionKernel::flash, t > 1)).act_total_bytes());
    EXPECT_GT(lc.act_total_bytes(), layer_cost(l, query(t, Recompute::full, AttentionKernel::flash, t > 1)).act_total_bytes());
  }
  EXPECT_EQ(parse_recompute("op", "--strategy"), Recompute::op);
  EXPECT_EQ(to_string(Recompute::op), "op");
}

}  // namespace
}  // namespace strata::model
