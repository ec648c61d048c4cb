// tests/cost/test_async_tp: the chunked collective matmul (overlap=async, cost/overlap.hpp) — its block formula's
// closed forms, the strategy key and its rules, and the per-layer hook on a real layer: each collective beside its
// own GEMMs, the re-run collectives of full recompute and per-op SAC, and the block form for a layer without GEMMs
// beside its collective (the engine exports: tests/export/test_export_async_tp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/overlap.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {
namespace {

TEST(AsyncBlock, HiddenCommLeavesOnlyTheContention) {
  // d ≤ c·(n−1)/n: every ring step's transfer fits beside its GEMM chunk, T = c + (γ − 1)·d.
  for (int tp : {2, 4, 8})
    for (double gamma : {1.0, 1.3, 1.61}) {
      const double c = 8.0, d = 2.0;
      EXPECT_NEAR(async_block_time(c, d, tp, gamma), c + (gamma - 1.0) * d, 1e-12) << tp << " " << gamma;
    }
}

TEST(AsyncBlock, CommBoundAndDegenerateCases) {
  // Nothing to hide behind: the collective alone. tp = 1: blocking (c + d).
  EXPECT_DOUBLE_EQ(async_block_time(0.0, 3.0, 8, 1.5), 3.0);
  EXPECT_DOUBLE_EQ(async_block_time(2.0, 3.0, 1, 1.5), 5.0);
  // Comm-bound with n = 4, γ = 1: three steps of max(c/4, d/3) = d/3 each, plus the last chunk c/4.
  EXPECT_DOUBLE_EQ(async_block_time(2.0, 6.0, 4, 1.0), 3 * 2.0 + 0.5);
  // Never slower than blocking while γ ≤ 2 (each step's overlap costs at most its sum), never faster than max.
  for (double c : {0.5, 2.0, 9.0})
    for (double d : {0.1, 2.0, 7.0}) {
      const double t = async_block_time(c, d, 8, 1.61);
      EXPECT_LE(t, c + d + 1e-12);
      EXPECT_GE(t, std::max(c, d) - 1e-12);
    }
}

TEST(AsyncStrategy, KeyParsesPrintsRoundTripsAndChecksRules) {
  const auto s = parse_strategy("dp=1,tp=4,pp=1,mbs=1,gbs=8,sp=on,overlap=async");
  EXPECT_TRUE(s.tp_async);
  EXPECT_FALSE(s.tp_overlap);
  EXPECT_NE(to_cli_string(s).find("overlap=async"), std::string::npos);
  const auto back = strategy_from_json(to_json(s), "t");
  EXPECT_TRUE(back.tp_async);
  EXPECT_EQ(to_json(s)["overlap"], "async");
  EXPECT_TRUE(parse_strategy("tp=2,gbs=8,overlap=oases").tp_overlap);  // the alias of on
  EXPECT_THROW(parse_strategy("tp=2,gbs=8,overlap=async,overlap=off"), core::InputError);  // one value per key
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster("dgx-a100", hw::builtin_catalog());
  EXPECT_NO_THROW(complete_strategy(parse_strategy("dp=2,tp=4,mbs=1,gbs=8,sp=on,overlap=async"), m, c));
  EXPECT_THROW(complete_strategy(parse_strategy("dp=2,tp=4,mbs=1,gbs=8,sp=off,overlap=async"), m, c),
               core::InputError);
  EXPECT_THROW(complete_strategy(parse_strategy("dp=8,tp=1,mbs=1,gbs=8,overlap=async"), m, c), core::InputError);
  try {
    parse_strategy("tp=2,overlap=maybe");
    FAIL() << "overlap=maybe parsed";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("async"), std::string::npos) << e.what();
  }
}

// A Llama-3-8B block at tp 8 with sp on a DGX H100, blocking and async, under one recompute mode.
struct AsyncCase {
  model::Model m = model::zoo_model("llama3-8b");
  hw::Cluster c = hw::resolve_cluster("dgx-h100", hw::builtin_catalog());
  const model::LayerSpec* block = nullptr;
  Strategy blocking, async;
  AsyncCase() {
    for (const auto& l : m.layers)
      if (l.kind == model::LayerKind::transformer) block = &l;
    blocking = complete_strategy(parse_strategy("dp=1,tp=8,mbs=2,gbs=2,sp=on"), m, c);
    async = blocking;
    async.tp_async = true;
  }
  std::vector<int> devices = {0, 1, 2, 3, 4, 5, 6, 7};
  StageContext context(const Strategy& s) const { return make_stage_context(m, c, s, devices); }
  // The forward GEMM times of the block (QKV, projection, gate, up, down: flash has no attention GEMMs) and one
  // blocking all-gather or reduce-scatter (two sp pairs per block).
  std::vector<double> gemm_times() const {
    model::LayerQuery q;
    q.micro_batch = 2;
    q.tp = 8;
    q.sequence_parallel = true;
    q.attention = attention_kernel_for(async, c.gpu_types.front());
    const auto lc = model::layer_cost(*block, q);
    const auto ctx = context(async);
    std::vector<double> g;
    for (const auto& gemm : lc.fwd_gemms) g.push_back(gemm_time_s(ctx, gemm, 2.0));
    return g;
  }
  double collective_s() const {
    return layer_stage_cost(m, *block, context(blocking), model::Recompute::none).tp_comm_fwd_s / 4.0;
  }
};

// The exposed time of one collective of d seconds fused with GEMMs of g seconds.
double exposed(double g, double d) {
  return async_block_time(g, d, 8, builtin_constants().tp_async_overlap_slowdown) - g;
}

TEST(AsyncLayer, EachCollectiveHidesOnlyBehindItsOwnGemms) {
  // Forward: the all-gather beside QKV, the reduce-scatter beside the projection, the all-gather beside gate + up,
  // the reduce-scatter beside down; backward (no recompute) the same four beside the same GEMMs' dgrad.
  AsyncCase k;
  ASSERT_NE(k.block, nullptr);
  const auto ctx_b = k.context(k.blocking), ctx_a = k.context(k.async);
  const auto b = layer_stage_cost(k.m, *k.block, ctx_b, model::Recompute::none);
  const auto a = layer_stage_cost(k.m, *k.block, ctx_a, model::Recompute::none);
  EXPECT_DOUBLE_EQ(a.fwd_compute_s, b.fwd_compute_s);
  EXPECT_DOUBLE_EQ(a.bwd_compute_s, b.bwd_compute_s);
  const double d = k.collective_s();
  const auto g = k.gemm_times();
  ASSERT_EQ(g.size(), 5u);
  const double fwd = exposed(g[0], d) + exposed(g[1], d) + exposed(g[2] + g[3], d) + exposed(g[4], d);
  EXPECT_NEAR(a.tp_comm_fwd_s, fwd, 1e-15);
  EXPECT_NEAR(a.tp_comm_bwd_s, fwd, 1e-15);
  EXPECT_LT(a.tp_comm_fwd_s, b.tp_comm_fwd_s);
  // The attention core and element-wise work hide nothing: the exposure exceeds the block form's, which spreads
  // the collectives over the whole pass compute.
  EXPECT_GT(a.tp_comm_fwd_s, 2 * async_block_time(b.fwd_compute_s / 2, b.tp_comm_fwd_s / 2, 8,
                                                  builtin_constants().tp_async_overlap_slowdown) -
                                 b.fwd_compute_s);
  // The estimate gets faster (one stage, no pipeline).
  EXPECT_LT(estimate(k.m, k.c, k.async).iteration_time_s, estimate(k.m, k.c, k.blocking).iteration_time_s);
}

TEST(AsyncLayer, LayersWithoutSitesHideBehindTheirPassCompute) {
  // The embedding's collective (partial lookups summed) has no GEMM beside it: the block form over its compute.
  AsyncCase k;
  const model::LayerSpec* embedding = nullptr;
  for (const auto& l : k.m.layers)
    if (l.kind == model::LayerKind::embedding) embedding = &l;
  ASSERT_NE(embedding, nullptr);
  const auto b = layer_stage_cost(k.m, *embedding, k.context(k.blocking), model::Recompute::none);
  const auto a = layer_stage_cost(k.m, *embedding, k.context(k.async), model::Recompute::none);
  ASSERT_GT(b.tp_comm_fwd_s, 0.0);
  const double gamma = builtin_constants().tp_async_overlap_slowdown;
  EXPECT_NEAR(a.fwd_compute_s + a.tp_comm_fwd_s, async_block_time(b.fwd_compute_s, b.tp_comm_fwd_s, 8, gamma),
              1e-15);
}

TEST(AsyncLayer, RecomputeAddsItsReRunCollectivesBesideTheReRunGemms) {
  AsyncCase k;
  const auto ctx = k.context(k.async);
  const auto none = layer_stage_cost(k.m, *k.block, ctx, model::Recompute::none);
  const double d = k.collective_s();
  const auto g = k.gemm_times();
  ASSERT_EQ(g.size(), 5u);
  // Full recompute: the forward's four again; with early stop (PyTorch's checkpoint) all but the last
  // reduce-scatter, which follows the GEMM the re-run skips.
  auto full_strategy = k.async;
  full_strategy.recompute_early_stop = false;
  const auto full = layer_stage_cost(k.m, *k.block, k.context(full_strategy), model::Recompute::full);
  EXPECT_NEAR(full.tp_comm_bwd_s, 2 * none.tp_comm_fwd_s, 1e-15);
  auto early_strategy = k.async;
  early_strategy.recompute_early_stop = true;
  const auto early = layer_stage_cost(k.m, *k.block, k.context(early_strategy), model::Recompute::full);
  EXPECT_NEAR(early.tp_comm_bwd_s, 2 * none.tp_comm_fwd_s - exposed(g[4], d), 1e-15);
  // Per-op SAC: each re-run all-gather beside the share of its GEMMs that is re-run (wk of QKV, w3 = up).
  const auto op = layer_stage_cost(k.m, *k.block, ctx, model::Recompute::op);
  const double wk_share = 128.0 / (512 + 256);
  EXPECT_NEAR(op.tp_comm_bwd_s, none.tp_comm_fwd_s + exposed(wk_share * g[0], d) + exposed(g[3], d), 1e-15);
}

}  // namespace
}  // namespace strata::cost
