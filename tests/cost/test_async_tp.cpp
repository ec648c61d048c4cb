// tests/cost/test_async_tp: the chunked collective matmul (overlap=async, cost/overlap.hpp) — its block formula's
// closed forms, the strategy key and its rules, and the per-layer hook against the formula on a real layer
// (the engine exports: tests/export/test_export_async_tp).
#include <gtest/gtest.h>

#include <string>

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

TEST(AsyncLayer, ExposedCommFollowsTheBlockFormula) {
  // One Llama-3-8B block at tp 8 with sp: the async layer's compute equals the blocking one's, and its pass time
  // is n_blocks · async_block_time(compute / n, comm / n) of the blocking layer's numbers.
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100", hw::builtin_catalog());
  const auto blocking = complete_strategy(parse_strategy("dp=1,tp=8,mbs=2,gbs=2,sp=on"), m, c);
  auto async = blocking;
  async.tp_async = true;
  const std::vector<int> devices = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto ctx_b = make_stage_context(m, c, blocking, devices);
  const auto ctx_a = make_stage_context(m, c, async, devices);
  const model::LayerSpec* block = nullptr;
  for (const auto& l : m.layers)
    if (l.kind == model::LayerKind::transformer) block = &l;
  ASSERT_NE(block, nullptr);
  const auto b = layer_stage_cost(m, *block, ctx_b, model::Recompute::none);
  const auto a = layer_stage_cost(m, *block, ctx_a, model::Recompute::none);
  const double gamma = builtin_constants().tp_async_overlap_slowdown;
  ASSERT_GT(b.tp_comm_fwd_s, 0.0);
  EXPECT_DOUBLE_EQ(a.fwd_compute_s, b.fwd_compute_s);
  EXPECT_DOUBLE_EQ(a.bwd_compute_s, b.bwd_compute_s);
  const int nf = 2;  // the block's two sp pairs (attention, MLP)
  EXPECT_NEAR(a.fwd_compute_s + a.tp_comm_fwd_s,
              nf * async_block_time(b.fwd_compute_s / nf, b.tp_comm_fwd_s / nf, 8, gamma), 1e-12);
  EXPECT_LT(a.tp_comm_fwd_s, b.tp_comm_fwd_s);
  EXPECT_LT(a.tp_comm_bwd_s, b.tp_comm_bwd_s);
  // The estimate gets faster by exactly the layers' saved exposure (one stage, no pipeline).
  const auto eb = estimate(m, c, blocking), ea = estimate(m, c, async);
  EXPECT_LT(ea.iteration_time_s, eb.iteration_time_s);
}

}  // namespace
}  // namespace strata::cost
