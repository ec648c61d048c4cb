// tests/model/test_layer_transformer: transformer-type blocks against closed forms — PTD-P forward FLOPs
// (24bsh² + 4bs²h, notes_003 §3.7), Korthikanti et al. 2022 activation bytes for every tp/sp/recompute mode,
// GQA/MQA, SwiGLU, MoE, windowed attention, T5 encoder/decoder, and the Megatron all-reduce counts.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/core/error.hpp"
#include "layer_fixtures.hpp"
#include "strata/model/layer.hpp"

namespace strata::model {
namespace {

using testing::gpt_block;

LayerQuery query(std::int64_t b, int t, bool sp, Recompute rc) {
  LayerQuery q;
  q.micro_batch = b;
  q.tp = t;
  q.sequence_parallel = sp;
  q.recompute = rc;
  return q;
}

void expect_rel(double got, double want, double tol = 1e-12) {
  EXPECT_NEAR(got, want, std::fabs(want) * tol) << "got " << got << " want " << want;
}

TEST(TransformerBlock, ForwardFlopsMatchPtdp) {
  const double h = 1024, a = 16, s = 512;
  for (std::int64_t b : {1, 4}) {
    for (int t : {1, 2, 4, 8}) {
      const LayerCost c = layer_cost(gpt_block(1024, 16, 512), query(b, t, false, Recompute::none));
      const double ptdp = 24 * b * s * h * h + 4 * b * s * s * h;  // notes_003 §3.7
      expect_rel(c.fwd_flops, ptdp / t);
      expect_rel(c.bwd_flops, 2 * ptdp / t);
      double gemm_sum = 0;
      for (const Gemm& g : c.fwd_gemms) gemm_sum += g.flops();
      expect_rel(gemm_sum, c.fwd_flops);
      ASSERT_EQ(c.fwd_gemms.size(), 6u);  // QKV, scores, values, projection, fc1, fc2
      EXPECT_DOUBLE_EQ(c.fwd_gemms[1].count, b * a / t);  // batched score products
      EXPECT_DOUBLE_EQ(c.fwd_gemms[1].m, s);
      EXPECT_DOUBLE_EQ(c.fwd_gemms[1].n, s);
      EXPECT_DOUBLE_EQ(c.fwd_gemms[1].k, h / a);
      EXPECT_DOUBLE_EQ(c.fwd_gemms[0].n, 3 * h / t);
    }
  }
}

TEST(TransformerBlock, ParamsTwelveHSquaredPlusThirteenH) {
  const LayerCost c = layer_cost(gpt_block(768, 12, 1024), LayerQuery{});
  EXPECT_DOUBLE_EQ(c.params, 12.0 * 768 * 768 + 13.0 * 768);
  // Per tp rank: weights and column biases split, row-parallel biases (2h) and the 2 LayerNorms (4h) replicated.
  const LayerCost c4 = layer_cost(gpt_block(768, 12, 1024), query(1, 4, false, Recompute::none));
  EXPECT_DOUBLE_EQ(c4.params_per_tp_rank, (12.0 * 768 * 768 + 7.0 * 768) / 4 + 6.0 * 768);
}

// Korthikanti et al. 2022, Table 2 and §5: activation bytes per layer (16-bit, dropout).
TEST(TransformerBlock, ActivationBytesMatchKorthikanti) {
  const double h = 2048, a = 16, s = 1024;
  for (double b : {1.0, 2.0}) {
    const double sbh = s * b * h, attn = 5 * a * s / h;
    for (int t : {1, 2, 4, 8}) {
      for (bool sp : {false, true}) {
        const bool split = sp && t > 1;
        const auto bytes = [&](Recompute rc) {
          const LayerCost c = layer_cost(gpt_block(2048, 16, 1024), query(b, t, sp, rc));
          EXPECT_DOUBLE_EQ(c.act_boundary_bytes, 2 * sbh / (split ? t : 1));
          return c.act_total_bytes();
        };
        const double none = split ? sbh / t * (34 + attn) : sbh * (10 + 24.0 / t + attn / t);
        const double selective = split ? sbh * 34 / t : sbh * (10 + 24.0 / t);
        const double full = split ? 2 * sbh / t : 2 * sbh;
        expect_rel(bytes(Recompute::none), none);
        expect_rel(bytes(Recompute::selective), selective);
        expect_rel(bytes(Recompute::full), full);
      }
    }
    // t = 1: the original sbh(34 + 5as/h).
    expect_rel(layer_cost(gpt_block(2048, 16, 1024), query(b, 1, false, Recompute::none)).act_total_bytes(),
               sbh * (34 + attn));
  }
}

TEST(TransformerBlock, RecomputeFlops) {
  const double b = 2, s = 512, h = 1024, t = 2;
  const LayerCost none = layer_cost(gpt_block(1024, 16, 512), query(2, 2, false, Recompute::none));
  const LayerCost sel = layer_cost(gpt_block(1024, 16, 512), query(2, 2, false, Recompute::selective));
  const LayerCost full = layer_cost(gpt_block(1024, 16, 512), query(2, 2, false, Recompute::full));
  EXPECT_EQ(none.recompute_flops, 0);
  expect_rel(sel.recompute_flops, 4 * b * s * s * h / t);  // QK^T and attention over V (Korthikanti §5)
  expect_rel(full.recompute_flops, none.fwd_flops);
  EXPECT_DOUBLE_EQ(full.act_intermediate_bytes, 0);
}

TEST(TransformerBlock, TensorParallelAllReduces) {
  const LayerCost one = layer_cost(gpt_block(1024, 16, 512), query(4, 1, false, Recompute::none));
  EXPECT_EQ(one.tp_allreduces_fwd, 0);  // nothing to reduce on one rank
  const LayerCost c = layer_cost(gpt_block(1024, 16, 512), query(4, 8, false, Recompute::none));
  EXPECT_EQ(c.tp_allreduces_fwd, 2);
  EXPECT_EQ(c.tp_allreduces_bwd, 2);
  EXPECT_DOUBLE_EQ(c.tp_message_bytes, 4.0 * 512 * 1024 * 2);
  EXPECT_DOUBLE_EQ(c.output_bytes, 4.0 * 512 * 1024 * 2);
}

TEST(TransformerBlock, GroupedQueryAttention) {
  const LayerSpec l = testing::llama3_8b_block();
  const double h = 4096, kvw = 2 * 8 * 128, f = 14336, s = 8192;
  const LayerCost c = layer_cost(l, LayerQuery{});
  EXPECT_DOUBLE_EQ(c.params, 2 * h * h + h * kvw + 3 * h * f + 2 * h);
  EXPECT_DOUBLE_EQ(c.fwd_gemms[0].n, h + kvw);
  ASSERT_EQ(c.fwd_gemms.size(), 7u);  // QKV, scores, values, projection, gate, up, down
  expect_rel(c.fwd_flops, 2 * s * h * (h + kvw) + 4 * s * s * h + 2 * s * h * h + 6 * s * h * f);
  // t = 8 = kv_heads: one kv head per rank; t = 16 > kv_heads: kv heads replicated, still one per rank.
  EXPECT_DOUBLE_EQ(layer_cost(l, query(1, 8, false, Recompute::none)).fwd_gemms[0].n, h / 8 + 2 * 128);
  EXPECT_DOUBLE_EQ(layer_cost(l, query(1, 16, false, Recompute::none)).fwd_gemms[0].n, h / 16 + 2 * 128);
  // Stored: replicated 4h elements (no dropout masks), split Q, K, V, proj input and 3·ffn (SwiGLU), softmax
  // output without dropout: B·a·s².
  const double B = 2;
  expect_rel(c.act_total_bytes(), s * (4 * h * B + (2 * h + kvw) * B + 3 * f * B) + 32 * s * s * B);
}

TEST(TransformerBlock, MultiQueryAttentionReplicatesKv) {
  LayerSpec l = gpt_block(1024, 16, 128);
  l.kv_heads = 1;
  const LayerCost c = layer_cost(l, query(1, 4, false, Recompute::none));
  EXPECT_DOUBLE_EQ(c.fwd_gemms[0].n, 1024.0 / 4 + 2 * 64);
  EXPECT_DOUBLE_EQ(layer_cost(l, LayerQuery{}).params, 1024.0 * (1024 + 128) + 1024.0 * 1024 + (2048 + 128) +
                                                           8.0 * 1024 * 1024 + 5 * 1024 + 4 * 1024);
}

TEST(TransformerBlock, MixtureOfExperts) {
  LayerSpec l = gpt_block(512, 8, 64);
  l.experts = 8;
  l.top_k = 2;
  const double h = 512, f = 2048, s = 64;
  const LayerCost c = layer_cost(l, LayerQuery{});
  EXPECT_DOUBLE_EQ(c.params, 4 * h * h + 4 * h + 8 * (8 * h * h + 5 * h) + h * 8 + 4 * h);
  const double attn = 8 * s * h * h + 4 * s * s * h;
  expect_rel(c.fwd_flops, attn + 2 * s * h * 8 + 2 * (2 * 2 * s * h * f));  // router + 2 experts per token
}

TEST(TransformerBlock, WindowedAttention) {
  LayerSpec l = gpt_block(320, 10, 3136);  // Swin stage 1
  l.attention_window = 49;
  const LayerCost c = layer_cost(l, query(2, 2, false, Recompute::none));
  const Gemm& score = c.fwd_gemms[1];
  EXPECT_DOUBLE_EQ(score.m, 49);
  EXPECT_DOUBLE_EQ(score.n, 49);
  EXPECT_DOUBLE_EQ(score.count, 2.0 * 5 * 64);  // b · heads/t · windows
  expect_rel(c.fwd_flops, (24.0 * 2 * 3136 * 320 * 320 + 4.0 * 2 * 3136 * 49 * 320) / 2);
}

TEST(EncoderDecoder, T5DecoderHasCrossAttention) {
  LayerSpec dec = gpt_block(1024, 16, 128);
  dec.kind = LayerKind::decoder;
  dec.encoder_seq = 512;
  dec.bias = false;
  dec.norm = Norm::rmsnorm;
  dec.activation = Activation::relu;
  LayerSpec enc = dec;
  enc.kind = LayerKind::encoder;
  const double h = 1024, s = 128, se = 512, b = 2;
  const LayerCost d = layer_cost(dec, query(2, 1, false, Recompute::none));
  const LayerCost e = layer_cost(enc, query(2, 1, false, Recompute::none));
  EXPECT_DOUBLE_EQ(e.params, 12 * h * h + 2 * h);
  EXPECT_DOUBLE_EQ(d.params, 16 * h * h + 3 * h);
  const double self = 8 * b * s * h * h + 4 * b * s * s * h;
  const double cross = 4 * b * s * h * h + 4 * b * se * h * h + 4 * b * s * se * h;
  const double mlp = 16 * b * s * h * h;
  expect_rel(e.fwd_flops, self + mlp);
  expect_rel(d.fwd_flops, self + cross + mlp);
  EXPECT_EQ(layer_cost(dec, query(2, 4, false, Recompute::none)).tp_allreduces_fwd, 3);
  EXPECT_EQ(layer_cost(dec, query(2, 4, false, Recompute::none)).tp_allreduces_bwd, 3);
  EXPECT_EQ(layer_cost(enc, query(2, 4, false, Recompute::none)).tp_allreduces_fwd, 2);
  // The decoder forwards its hidden state and the encoder output.
  EXPECT_DOUBLE_EQ(d.output_bytes, b * (s + se) * h * 2);
  // Cross-attention stores Q, K, V over the encoder length and a·s·se probabilities (+mask, +dropout output).
  const double B = 2;
  const double self_bytes = b * s * h * (10 + 24) + 5 * 16 * s * s * b;
  const double cross_bytes = b * s * (2 * h * B + h) + b * s * h * 2 * B + b * se * 2 * h * B + 16 * s * se * b * 5;
  expect_rel(d.act_total_bytes(), self_bytes + cross_bytes);
}

TEST(TransformerBlock, TensorParallelMustDivideHeads) {
  EXPECT_THROW(layer_cost(gpt_block(1024, 16, 128), query(1, 3, false, Recompute::none)), core::InputError);
  EXPECT_FALSE(tensor_parallel_problem(gpt_block(1024, 16, 128), 3).empty());
  EXPECT_TRUE(tensor_parallel_problem(gpt_block(1024, 16, 128), 8).empty());
  LayerSpec l = gpt_block(1024, 16, 128);
  l.kv_heads = 4;
  EXPECT_TRUE(tensor_parallel_problem(l, 16).empty());  // kv heads replicated
  LayerSpec odd = gpt_block(1536, 24, 128);
  odd.kv_heads = 6;
  EXPECT_FALSE(tensor_parallel_problem(odd, 4).empty());  // 4 ∤ 6 and 6 ∤ 4
  EXPECT_THROW(layer_cost(gpt_block(1024, 16, 128), query(0, 1, false, Recompute::none)), std::invalid_argument);
}

TEST(TransformerBlock, SeqOverrideAndBytesPerElement) {
  LayerQuery q;
  q.seq = 256;
  q.bytes_per_element = 4;
  const LayerCost c = layer_cost(gpt_block(512, 8, 1024), q);
  expect_rel(c.fwd_flops, 24.0 * 256 * 512 * 512 + 4.0 * 256 * 256 * 512);
  EXPECT_DOUBLE_EQ(c.output_bytes, 256.0 * 512 * 4);
  // fp32: 16 elements + 2 mask bytes per token·h, softmax 2·4+1 bytes per probability.
  expect_rel(c.act_total_bytes(), 256.0 * 512 * (16 * 4 + 2) + 8.0 * 256 * 256 * 9);
}

}  // namespace
}  // namespace strata::model
