// tests/model/test_layer_other: embedding, LM/classifier head, patch embedding, conv blocks and generic layers
// against hand-computed values (formulas in docs/models.md).
#include <gtest/gtest.h>

#include "strata/core/error.hpp"
#include "strata/model/layer.hpp"

namespace strata::model {
namespace {

LayerQuery query(std::int64_t b, int t, bool sp = false, Recompute rc = Recompute::none) {
  LayerQuery q;
  q.micro_batch = b;
  q.tp = t;
  q.sequence_parallel = sp;
  q.recompute = rc;
  return q;
}

TEST(Embedding, VocabParallel) {
  LayerSpec l;
  l.kind = LayerKind::embedding;
  l.hidden = 1024;
  l.vocab = 50000;
  l.seq = 2048;
  const double h = 1024, V = 50000, s = 2048;
  const LayerCost c = layer_cost(l, query(2, 4));
  EXPECT_DOUBLE_EQ(c.params, V * h + s * h);
  EXPECT_DOUBLE_EQ(c.params_per_tp_rank, V * h / 4 + s * h);
  EXPECT_EQ(c.fwd_flops, 0);
  EXPECT_TRUE(c.fwd_gemms.empty());
  EXPECT_EQ(c.tp_allreduces_fwd, 1);
  EXPECT_EQ(c.tp_allreduces_bwd, 0);
  EXPECT_DOUBLE_EQ(c.output_bytes, 2 * s * h * 2);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, 2 * s * 8);        // int64 token ids
  EXPECT_DOUBLE_EQ(c.act_intermediate_bytes, 2 * s * h);    // 1-byte dropout mask
  l.learned_positions = false;
  EXPECT_DOUBLE_EQ(layer_cost(l, query(1, 1)).params, V * h);
}

TEST(LmHead, LogitsGemmAndTying) {
  LayerSpec l;
  l.kind = LayerKind::lm_head;
  l.hidden = 1024;
  l.vocab = 51200;
  l.seq = 2048;
  l.tied_embeddings = true;
  l.bias = false;
  const double h = 1024, V = 51200, s = 2048, b = 4;
  const LayerCost c = layer_cost(l, query(4, 8));
  EXPECT_DOUBLE_EQ(c.params, 2 * h);  // final LayerNorm only; the matrix belongs to the embedding
  EXPECT_DOUBLE_EQ(c.shared_params, V * h);
  EXPECT_DOUBLE_EQ(c.shared_params_per_tp_rank, V * h / 8);
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2 * b * s * h * V / 8);
  EXPECT_DOUBLE_EQ(c.bwd_flops, 4 * b * s * h * V / 8);
  EXPECT_EQ(c.tp_allreduces_bwd, 1);
  EXPECT_EQ(c.output_bytes, 0);
  // Boundary (norm input), norm output and the fp32 softmax of the vocab-parallel logits.
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, b * s * h * 2);
  EXPECT_DOUBLE_EQ(c.act_intermediate_bytes, b * s * h * 2 + b * s * V / 8 * 4);
  l.tied_embeddings = false;
  EXPECT_DOUBLE_EQ(layer_cost(l, query(1, 1)).params, 2 * h + V * h);
  EXPECT_DOUBLE_EQ(layer_cost(l, query(1, 4)).params_per_tp_rank, 2 * h + V * h / 4);
}

TEST(LmHead, PooledClassifier) {
  LayerSpec l;
  l.kind = LayerKind::lm_head;
  l.hidden = 1280;
  l.vocab = 1000;
  l.seq = 257;
  l.pooled = true;
  l.bias = true;
  const LayerCost c = layer_cost(l, query(8, 1));
  EXPECT_DOUBLE_EQ(c.params, 2 * 1280.0 + 1280.0 * 1000 + 1000);
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2.0 * 8 * 1280 * 1000);  // one token per sample
}

TEST(PatchEmbedding, VitPatchesClsAndPositions) {
  LayerSpec l;
  l.kind = LayerKind::patch_embedding;
  l.hidden = 1280;
  l.patch = 14;
  l.channels = 3;
  l.seq = 257;
  l.cls_token = true;
  const double k = 14 * 14 * 3, h = 1280;
  const LayerCost c = layer_cost(l, query(2, 4));
  EXPECT_DOUBLE_EQ(c.params, k * h + h + 257 * h + h);
  EXPECT_DOUBLE_EQ(c.params_per_tp_rank, c.params);  // replicated
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2 * 2 * 256 * k * h);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, 2 * 256 * k * 2);
  EXPECT_DOUBLE_EQ(c.output_bytes, 2 * 257 * h * 2);
}

TEST(PatchEmbedding, SwinPatchMerging) {
  LayerSpec l;
  l.kind = LayerKind::patch_embedding;
  l.hidden = 640;
  l.patch = 2;
  l.channels = 320;
  l.seq = 784;
  l.pre_norm = true;
  l.bias = false;
  l.learned_positions = false;
  l.dropout = false;
  const double k = 4 * 320;
  const LayerCost c = layer_cost(l, query(1, 1));
  EXPECT_DOUBLE_EQ(c.params, k * 640 + 2 * k);
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2 * 784 * k * 640);
  EXPECT_DOUBLE_EQ(c.act_total_bytes(), 2 * 784 * k * 2);  // input and its LayerNorm output
}

TEST(Conv, VggStack) {
  LayerSpec l;
  l.kind = LayerKind::conv;
  l.conv.in_channels = 3;
  l.conv.out_channels = 64;
  l.conv.kernel = 3;
  l.conv.height = l.conv.width = 224;
  l.conv.convs = 2;
  l.conv.out_height = l.conv.out_width = 112;
  const double px = 224.0 * 224;
  const LayerCost c = layer_cost(l, query(2, 1));
  EXPECT_DOUBLE_EQ(c.params, 3 * 9 * 64 + 64 + 64 * 9 * 64 + 64);
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2 * 2 * px * (3 * 9 * 64 + 64 * 9 * 64));
  EXPECT_DOUBLE_EQ(c.fwd_gemms[0].m, 2 * px);
  EXPECT_DOUBLE_EQ(c.fwd_gemms[0].k, 27);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, 2 * 3 * px * 2);
  EXPECT_DOUBLE_EQ(c.act_intermediate_bytes, 2 * 2 * 64 * px * 2);  // ReLU output of each conv
  EXPECT_DOUBLE_EQ(c.output_bytes, 2 * 64 * 112.0 * 112 * 2);
}

TEST(Conv, ResnetBottleneckWithProjection) {
  LayerSpec l;
  l.kind = LayerKind::conv;
  l.bias = false;
  l.conv.in_channels = 256;
  l.conv.mid_channels = 128;
  l.conv.out_channels = 512;
  l.conv.kernel = 3;
  l.conv.height = l.conv.width = 56;
  l.conv.stride = 2;
  l.conv.out_height = l.conv.out_width = 28;
  l.conv.bottleneck = true;
  l.conv.batch_norm = true;
  const double in = 56.0 * 56, out = 28.0 * 28;
  const LayerCost c = layer_cost(l, query(1, 1));
  EXPECT_DOUBLE_EQ(c.params, 256 * 128 + 128 * 128 * 9 + 128 * 512 + 256 * 512 + 2 * (128 + 128 + 512 + 512));
  EXPECT_DOUBLE_EQ(c.fwd_flops, 2 * (in * 256 * 128 + out * 128 * 128 * 9 + out * 128 * 512 + out * 256 * 512));
  EXPECT_DOUBLE_EQ(c.act_intermediate_bytes, 2 * (2 * 128 * in + 2 * 128 * out + 512 * out + 512 * out));
  const LayerCost full = layer_cost(l, query(1, 1, false, Recompute::full));
  EXPECT_DOUBLE_EQ(full.act_intermediate_bytes, 0);
  EXPECT_DOUBLE_EQ(full.recompute_flops, c.fwd_flops);
}

TEST(Conv, NoTensorParallelism) {
  LayerSpec l;
  l.kind = LayerKind::conv;
  l.name = "conv1";
  l.conv.in_channels = 3;
  l.conv.out_channels = 8;
  l.conv.height = l.conv.width = 8;
  l.conv.out_height = l.conv.out_width = 8;
  EXPECT_THROW(layer_cost(l, query(1, 2)), core::InputError);
  EXPECT_NE(tensor_parallel_problem(l, 2).find("tp must be 1"), std::string::npos);
}

TEST(Generic, ScalesWithMicroBatchOnly) {
  LayerSpec l;
  l.kind = LayerKind::generic;
  l.generic.params = 1000;
  l.generic.fwd_flops_per_sample = 1e6;
  l.generic.activation_bytes_per_sample = 500;
  l.generic.input_bytes_per_sample = 100;
  l.generic.output_bytes_per_sample = 64;
  const LayerCost c = layer_cost(l, query(4, 8));
  EXPECT_DOUBLE_EQ(c.params_per_tp_rank, 1000);
  EXPECT_DOUBLE_EQ(c.fwd_flops, 4e6);
  EXPECT_DOUBLE_EQ(c.bwd_flops, 8e6);  // default 2x forward
  EXPECT_DOUBLE_EQ(c.act_total_bytes(), 2000);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, 400);
  EXPECT_DOUBLE_EQ(c.output_bytes, 256);
  const LayerCost full = layer_cost(l, query(4, 1, false, Recompute::full));
  EXPECT_DOUBLE_EQ(full.act_total_bytes(), 400);
  EXPECT_DOUBLE_EQ(full.recompute_flops, 4e6);
}

TEST(Enums, ParseAndPrint) {
  EXPECT_EQ(parse_recompute("Selective", "--x"), Recompute::selective);
  EXPECT_EQ(to_string(Recompute::full), "full");
  EXPECT_EQ(to_string(LayerKind::patch_embedding), "patch_embedding");
  try {
    parse_norm("batchnorm", "m.json: norm");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_STREQ(e.what(), "m.json: norm: unknown norm 'batchnorm' (valid: layernorm, rmsnorm, none)");
  }
  EXPECT_THROW(parse_activation("tanh", "x"), core::InputError);
  EXPECT_THROW(parse_layer_kind("lstm", "x"), core::InputError);
}

}  // namespace
}  // namespace strata::model
