// tests/cost/test_context_parallel: context parallelism (cp) — cp = 1 is the old model byte for byte, the ring
// attention K/V exchange against its closed forms (cost/context_parallel.hpp), per-rank work and activations /cp,
// the DP group over dp·cp, the strategy syntax and rules.
#include <gtest/gtest.h>

#include <vector>

#include "helpers.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/context_parallel.hpp"
#include "strata/cost/stage.hpp"
#include "strata/model/layer.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

model::Model llama_like(std::int64_t seq) {
  model::TransformerConfig cfg;
  cfg.name = "cp-test";
  cfg.layers = 4;
  cfg.hidden = 4096;
  cfg.heads = 32;
  cfg.kv_heads = 8;
  cfg.ffn = 14336;
  cfg.vocab = 128256;
  cfg.seq = seq;
  cfg.activation = model::Activation::swiglu;
  cfg.norm = model::Norm::rmsnorm;
  cfg.bias = false;
  cfg.dropout = false;
  return model::build_transformer(cfg, "test");
}

}  // namespace

TEST(ContextParallel, CpOneIsTheOldModel) {
  const auto m = llama_like(8192);
  const auto c = cost_test::cluster("dgx-h100:2");
  const std::string text = "dp=4,tp=4,pp=1,mbs=1,gbs=16,zero=1,sp=on";
  const auto a = complete_strategy(parse_strategy(text), m, c);
  const auto b = complete_strategy(parse_strategy(text + ",cp=1"), m, c);
  EXPECT_EQ(a, b);
  EXPECT_EQ(to_cli_string(b).find("cp"), std::string::npos);  // cp = 1 is not written: same bytes as before
  EXPECT_FALSE(to_json(b).contains("cp"));
  EXPECT_EQ(to_json(estimate(m, c, a)).dump(), to_json(estimate(m, c, b)).dump());
  // The layer formulas with cp = 1 are the query without it.
  model::LayerQuery q;
  q.seq = 8192;
  q.tp = 4;
  q.attention = model::AttentionKernel::flash;
  model::LayerQuery q1 = q;
  q1.cp = 1;
  const auto l0 = model::layer_cost(m.layers[1], q), l1 = model::layer_cost(m.layers[1], q1);
  EXPECT_EQ(l0.fwd_flops, l1.fwd_flops);
  EXPECT_EQ(l0.act_total_bytes(), l1.act_total_bytes());
}

TEST(ContextParallel, PerRankWorkAndActivationsAreDividedByCp) {
  const auto m = llama_like(32768);
  model::LayerQuery q;
  q.seq = 32768;
  q.tp = 2;
  q.sequence_parallel = true;
  q.attention = model::AttentionKernel::flash;
  const auto whole = model::layer_cost(m.layers[1], q);
  for (int cp : {2, 4, 8}) {
    q.cp = cp;
    const auto part = model::layer_cost(m.layers[1], q);
    // Every per-token term and the attention core (queries s/cp against all s keys) are 1/cp of the whole.
    EXPECT_NEAR(part.fwd_flops * cp, whole.fwd_flops, 1e-9 * whole.fwd_flops) << cp;
    EXPECT_NEAR(part.flash_attention_flops * cp, whole.flash_attention_flops, 1e-9 * whole.fwd_flops) << cp;
    EXPECT_NEAR(part.act_total_bytes() * cp, whole.act_total_bytes(), 1e-9 * whole.act_total_bytes()) << cp;
    EXPECT_NEAR(part.output_bytes * cp, whole.output_bytes, 1e-9 * whole.output_bytes) << cp;
    EXPECT_NEAR(part.tp_message_bytes * cp, whole.tp_message_bytes, 1e-9 * whole.tp_message_bytes) << cp;
  }
}

TEST(ContextParallel, KvBlockBytesClosedForm) {
  const auto m = llama_like(65536);
  // 2 (K, V) · b · s/cp · kv/t · head_dim · bytes = 2 · 2 · 8192 · 2 · 128 · 2
  EXPECT_DOUBLE_EQ(cp_kv_block_bytes(m.layers[1], 2, 65536, Dims{.tp = 4, .cp = 8}, 2.0), 2.0 * 2 * 8192 * 2 * 128 * 2);
  // tp above the kv heads: one (replicated) kv head per rank.
  EXPECT_DOUBLE_EQ(cp_kv_block_bytes(m.layers[1], 1, 65536, Dims{.tp = 16, .cp = 8}, 2.0), 2.0 * 8192 * 1 * 128 * 2);
  EXPECT_EQ(cp_kv_block_bytes(m.layers[0], 1, 65536, Dims{.cp = 8}, 2.0), 0.0);  // the embedding has no attention
}

TEST(ContextParallel, RingAttentionExchangeClosedForms) {
  const double a = 2e-6, beta = 1.0 / 100e9, kv = 64e6, g = 1.3;
  // Attention long enough to hide every step: only the contention share of each step and the final dK/dV return.
  {
    const int cp = 4;
    const double fwd = 0.04, bwd = 0.08;
    const auto r = ring_attention_comm(cp, fwd, bwd, kv, a, beta, g);
    const double x_f = a + beta * kv, x_b = a + beta * 2 * kv;
    EXPECT_EQ(r.transfers_fwd, 3);
    EXPECT_EQ(r.transfers_bwd, 4);
    EXPECT_NEAR(r.fwd_exposed_s, 3 * (g - 1) * x_f, 1e-15);
    EXPECT_NEAR(r.bwd_exposed_s, 3 * (g - 1) * x_b + x_f, 1e-15);
    EXPECT_NEAR(r.busy_s, 3 * (x_f + x_b) + x_f, 1e-15);
  }
  // Attention too short: each step waits for its block.
  {
    const int cp = 8;
    const double fwd = 1e-4, bwd = 2e-4;
    const auto r = ring_attention_comm(cp, fwd, bwd, kv, a, beta, g);
    const double c_f = fwd / cp, c_b = bwd / cp, x_f = a + beta * kv, x_b = a + beta * 2 * kv;
    EXPECT_NEAR(r.fwd_exposed_s, 7 * (x_f + (g - 1) * c_f - c_f), 1e-15);
    EXPECT_NEAR(r.bwd_exposed_s, 7 * (x_b + (g - 1) * c_b - c_b) + x_f, 1e-15);
  }
  const auto none = ring_attention_comm(1, 1.0, 2.0, kv, a, beta, g);
  EXPECT_EQ(none.fwd_exposed_s + none.bwd_exposed_s + none.busy_s, 0.0);
}

TEST(ContextParallel, RingStepIsOneStepOfTheCpGroupsAllGather) {
  const auto m = llama_like(16384);
  const auto c = cost_test::cluster("dgx-h100:4");
  const auto k = cost_test::ideal_links();
  CostOptions opt;
  opt.constants = &k;
  // tp 4 inside the node, cp 4 over the 4 nodes (dp 2 would not fit 32 ranks: dp 2 · cp 4 · tp 4 = 32).
  const auto s = complete_strategy(parse_strategy("dp=2,cp=4,tp=4,pp=1,mbs=1,gbs=8,zero=1,sp=on"), m, c);
  std::vector<int> devs;
  for (int d = 0; d < s.dp_cp(); ++d)
    for (int r = 0; r < s.tp; ++r) devs.push_back(s.device(0, d, r));
  const StageContext ctx = make_stage_context(m, c, s, devs, opt);
  // The first replica's cp group of tp rank 0: ranks 0, 4, 8, 12 — devices 0, 4 (node 0), 8, 12 (node 1).
  const std::vector<int> group = {0, 4, 8, 12};
  CommOptions co;
  co.constants = &k;
  co.concurrent_groups_per_nic = 1;  // each member has its own NIC
  const double kv = 3e7;
  const double step = ctx.cp_step_latency_s + ctx.cp_step_s_per_byte * kv;
  EXPECT_NEAR(step, allgather_time(c, group, 4 * kv, co) / 3, 1e-12);
  EXPECT_GT(ctx.cp_step_s_per_byte, 0.0);
}

TEST(ContextParallel, EstimateShardsOverDpTimesCpAndHalvesActivations) {
  const auto m = llama_like(32768);
  const auto c = cost_test::cluster("dgx-h100:2");
  const auto no_cp = cost_test::run(m, c, "dp=4,tp=4,pp=1,mbs=1,gbs=8,zero=1,sp=on");
  const auto with_cp = cost_test::run(m, c, "dp=2,cp=2,tp=4,pp=1,mbs=1,gbs=8,zero=1,sp=on");
  const auto& a = no_cp.stages[0].memory;
  const auto& b = with_cp.stages[0].memory;
  // Same dp·cp = 4 replicas of the weights: the same ZeRO-1 shards; activations of half the tokens per micro-batch,
  // and twice the micro-batches per replica (m = gbs/(dp·mbs) = 4 vs 2), 1 in flight without a pipeline.
  EXPECT_DOUBLE_EQ(a.optimizer_bytes, b.optimizer_bytes);
  EXPECT_DOUBLE_EQ(a.weights_bytes, b.weights_bytes);
  EXPECT_NEAR(b.activations_bytes * 2, a.activations_bytes, 1e-6 * a.activations_bytes);
  // Same tokens per iteration through the same 8 GPUs: the cp run pays the K/V exchange on top.
  EXPECT_GT(with_cp.iteration_time_s, 0.0);
  EXPECT_EQ(with_cp.stages[0].devices.size(), 16u);
}

TEST(ContextParallel, StrategyRules) {
  const auto m = llama_like(8192);
  const auto c = cost_test::cluster("dgx-h100:2");
  const auto s = complete_strategy(parse_strategy("tp=4,cp=2,pp=1,mbs=1,gbs=4"), m, c);
  EXPECT_EQ(s.dp, 2);  // dp takes the rest: 16 / (cp·tp·pp)
  EXPECT_EQ(s.num_devices(), 16);
  EXPECT_NE(to_cli_string(s).find(",cp=2"), std::string::npos);
  EXPECT_EQ(strategy_from_json(to_json(s), "test"), s);
  EXPECT_EQ(parse_strategy(to_cli_string(s)).cp, 2);
  EXPECT_NE(cost_test::error_of([&] { complete_strategy(parse_strategy("tp=4,cp=3,mbs=1,gbs=4"), m, c); })
                .find("cp"),
            std::string::npos);
  const auto odd = llama_like(8190);
  EXPECT_NE(cost_test::error_of([&] { complete_strategy(parse_strategy("tp=8,cp=2,mbs=1,gbs=4"), odd, c); })
                .find("seq divisible by 2·cp"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_strategy("cp=0"); }).find("cp"), std::string::npos);
}
