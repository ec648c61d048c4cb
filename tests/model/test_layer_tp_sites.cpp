// tests/model/test_layer_tp_sites: which GEMMs sit around each tensor-parallel collective of a block
// (LayerCost::tp_sites, what overlap=async fuses them with): a Llama-3-8B block under flash and eager attention,
// a GELU block, a decoder with cross-attention, an MoE block, and none on one rank.
#include <gtest/gtest.h>

#include "layer_fixtures.hpp"
#include "strata/model/layer.hpp"

namespace strata::model {
namespace {

using testing::gpt_block;
using testing::llama3_8b_block;

LayerQuery tp_query(int t, AttentionKernel kernel) {
  LayerQuery q;
  q.micro_batch = 2;
  q.tp = t;
  q.sequence_parallel = true;
  q.attention = kernel;
  return q;
}

TEST(TpSites, LlamaBlockUnderFlash) {
  // GEMMs under flash: QKV 0, projection 1, gate 2, up 3, down 4 (the attention core is not a GEMM).
  const LayerCost c = layer_cost(llama3_8b_block(), tp_query(8, AttentionKernel::flash));
  ASSERT_EQ(c.fwd_gemms.size(), 5u);
  ASSERT_EQ(c.tp_sites().size(), 2u);
  EXPECT_EQ(static_cast<int>(c.tp_sites().size()), c.tp_allreduces_fwd);
  EXPECT_EQ(c.tp_sites()[0].gather_first, 0);
  EXPECT_EQ(c.tp_sites()[0].gather_count, 1);
  EXPECT_EQ(c.tp_sites()[0].scatter_gemm, 1);
  EXPECT_EQ(c.tp_sites()[1].gather_first, 2);
  EXPECT_EQ(c.tp_sites()[1].gather_count, 2);
  EXPECT_EQ(c.tp_sites()[1].scatter_gemm, 4);
  // Per-op SAC re-runs wk: one kv head of 128 per rank out of Q (4096/8) + K + V (128 each); and w3, half of
  // the gate/up pair.
  EXPECT_DOUBLE_EQ(c.tp_sites()[0].op_regather_share, 128.0 / (512 + 256));
  EXPECT_DOUBLE_EQ(c.tp_sites()[1].op_regather_share, 0.5);
  // The scatter GEMMs are the row-parallel ones: their output is the full hidden size.
  EXPECT_DOUBLE_EQ(c.fwd_gemms[1].n, 4096);
  EXPECT_DOUBLE_EQ(c.fwd_gemms[4].n, 4096);
}

TEST(TpSites, EagerAttentionShiftsTheProjectionPastTheBatchedProducts) {
  const LayerCost c = layer_cost(llama3_8b_block(), tp_query(8, AttentionKernel::eager));
  ASSERT_EQ(c.fwd_gemms.size(), 7u);  // QKV, scores, values, projection, gate, up, down
  ASSERT_EQ(c.tp_sites().size(), 2u);
  EXPECT_EQ(c.tp_sites()[0].scatter_gemm, 3);
  EXPECT_EQ(c.tp_sites()[1].gather_first, 4);
  EXPECT_EQ(c.tp_sites()[1].scatter_gemm, 6);
}

TEST(TpSites, GeluMlpGathersIntoOneGemmAndRerunsNoneOfIt) {
  const LayerCost c = layer_cost(gpt_block(1024, 16, 512), tp_query(4, AttentionKernel::flash));
  ASSERT_EQ(c.tp_sites().size(), 2u);
  EXPECT_EQ(c.tp_sites()[1].gather_count, 1);
  EXPECT_DOUBLE_EQ(c.tp_sites()[1].op_regather_share, 0.0);  // per-op SAC re-runs fc2, which reads no gathered input
  EXPECT_DOUBLE_EQ(c.tp_sites()[0].op_regather_share, 256.0 / (256 + 512));  // MHA: K of Q/K/V per rank
}

TEST(TpSites, DecoderCrossAttentionGathersIntoItsQueryAndKeyValueGemms) {
  LayerSpec dec = gpt_block(1024, 16, 128);
  dec.kind = LayerKind::decoder;
  dec.encoder_seq = 512;
  const LayerCost c = layer_cost(dec, tp_query(4, AttentionKernel::flash));
  ASSERT_EQ(c.tp_sites().size(), 3u);  // self-attention, cross-attention, MLP
  EXPECT_EQ(c.tp_sites()[1].gather_count, 2);
  EXPECT_DOUBLE_EQ(c.tp_sites()[1].op_regather_share, 0.0);
  EXPECT_EQ(c.tp_sites()[2].scatter_gemm, static_cast<int>(c.fwd_gemms.size()) - 1);
  for (const auto& site : c.tp_sites()) EXPECT_LT(site.gather_first + site.gather_count - 1, site.scatter_gemm);
}

TEST(TpSites, MoeRouterReadsTheGatheredInputToo) {
  LayerSpec l = gpt_block(512, 8, 64);
  l.experts = 8;
  l.top_k = 2;
  const LayerCost c = layer_cost(l, tp_query(2, AttentionKernel::flash));
  ASSERT_EQ(c.tp_sites().size(), 2u);
  EXPECT_EQ(c.tp_sites()[1].gather_count, 2);  // router + fc1
  EXPECT_DOUBLE_EQ(c.fwd_gemms[static_cast<std::size_t>(c.tp_sites()[1].gather_first)].n, 8);  // the router
}

TEST(TpSites, NoneOnOneRank) {
  const LayerCost c = layer_cost(llama3_8b_block(), LayerQuery{});
  EXPECT_TRUE(c.tp_sites().empty());
  EXPECT_EQ(c.tp_allreduces_fwd, 0);
}

}  // namespace
}  // namespace strata::model
