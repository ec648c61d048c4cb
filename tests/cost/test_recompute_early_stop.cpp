// tests/cost/test_recompute_early_stop: `earlystop=on` — full recompute as PyTorch's non-reentrant checkpoint runs
// it. The backward of a block needs the output projection's input, not its output, so the re-run forward stops
// before the block's last GEMM and the collective after it (docs/cost-model.md §Recompute early stop). Checked
// against closed forms: the skipped FLOPs are the MLP output projection's 2·b·s·f·h/t, the skipped time is that
// GEMM's roofline time, one reduce-scatter (sp) or all-reduce is not re-run, and the stored bytes do not change.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "strata/cost/stage.hpp"
#include "strata/model/layer.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

model::LayerQuery full_query(int tp, bool sp, bool early_stop) {
  model::LayerQuery q;
  q.micro_batch = 2;
  q.tp = tp;
  q.sequence_parallel = sp;
  q.recompute = model::Recompute::full;
  q.recompute_early_stop = early_stop;
  q.attention = model::AttentionKernel::flash;
  return q;
}

}  // namespace

TEST(RecomputeEarlyStop, SkipsTheMlpOutputProjectionAndNothingElse) {
  // A GELU block (ffn 4h, two MLP GEMMs) and a Llama block (SwiGLU, GQA: three MLP GEMMs).
  for (const char* name : {"gpt2-medium", "llama3-8b"}) {
    const auto m = model::zoo_model(name);
    const model::LayerSpec& block = m.layers[1];
    const double b = 2, s = static_cast<double>(m.seq), h = static_cast<double>(block.hidden),
                 f = static_cast<double>(block.ffn);
    for (int t : {1, 4}) {
      const auto whole = model::layer_cost(block, full_query(t, t > 1, false));
      const auto early = model::layer_cost(block, full_query(t, t > 1, true));
      EXPECT_FALSE(whole.recompute_skips_last_gemm);
      EXPECT_TRUE(early.recompute_skips_last_gemm);
      EXPECT_DOUBLE_EQ(whole.recompute_flops, whole.fwd_flops);
      const double down_proj = 2 * b * s * (f / t) * h;  // the MLP's output projection on one tp rank
      EXPECT_NEAR(whole.recompute_flops - early.recompute_flops, down_proj, 1e-9 * down_proj) << name << " t=" << t;
      // Memory, forward and backward work are those of full recompute.
      EXPECT_DOUBLE_EQ(early.act_total_bytes(), whole.act_total_bytes());
      EXPECT_DOUBLE_EQ(early.fwd_flops, whole.fwd_flops);
      EXPECT_DOUBLE_EQ(early.bwd_flops, whole.bwd_flops);
    }
    // Other modes ignore the flag.
    auto sel = full_query(1, false, true);
    sel.recompute = model::Recompute::selective;
    EXPECT_FALSE(model::layer_cost(block, sel).recompute_skips_last_gemm);
  }
}

TEST(RecomputeEarlyStop, StageCostDropsThatGemmsTimeAndOneCollective) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1");
  for (const char* spec : {"dp=8,mbs=1,gbs=8,recompute=full", "dp=2,tp=4,mbs=2,gbs=8,sp=on,recompute=full",
                           "dp=2,tp=4,mbs=2,gbs=8,sp=off,recompute=full"}) {
    const auto whole_s = complete_strategy(parse_strategy(spec), m, c);
    const auto early_s = complete_strategy(parse_strategy(std::string(spec) + ",earlystop=on"), m, c);
    const auto ctx_w = make_stage_context(m, c, whole_s, cost_test::first_devices(8));
    const auto ctx_e = make_stage_context(m, c, early_s, ctx_w.devices);
    const model::LayerSpec& block = m.layers[1];
    const auto w = layer_stage_cost(m, block, ctx_w, model::Recompute::full);
    const auto e = layer_stage_cost(m, block, ctx_e, model::Recompute::full);
    const bool sp = whole_s.sequence_parallel && whole_s.tp > 1;
    const auto lc_stage = model::layer_cost(block, cost_test::stage_query(early_s, m, model::Recompute::full));
    const double down_s = gemm_time_s(ctx_e, lc_stage.fwd_gemms.back(), 2.0);
    EXPECT_GT(down_s, 0);
    EXPECT_NEAR(w.recompute_s - e.recompute_s, down_s, 1e-9 * w.recompute_s) << spec;
    EXPECT_DOUBLE_EQ(e.fwd_s, w.fwd_s) << spec;  // the forward is unchanged
    EXPECT_DOUBLE_EQ(e.activation_bytes, w.activation_bytes) << spec;
    // One collective fewer in backward: the reduce-scatter after the projection (sp) or its all-reduce.
    const double msg = lc_stage.tp_message_bytes;
    const double one = whole_s.tp == 1 ? 0.0
                       : sp            ? ctx_e.tp_rs_latency_s + ctx_e.tp_rs_s_per_byte * msg
                                       : ctx_e.tp_allreduce_latency_s + ctx_e.tp_allreduce_s_per_byte * msg;
    EXPECT_NEAR(w.tp_comm_bwd_s - e.tp_comm_bwd_s, one, 1e-9 * (w.tp_comm_bwd_s + 1e-12)) << spec;
  }
}

TEST(RecomputeEarlyStop, KeyParsesPrintsRoundTripsAndNeedsFullRecompute) {
  const auto s = parse_strategy("dp=2,tp=4,pp=1,mbs=1,gbs=8,recompute=full,earlystop=on");
  EXPECT_TRUE(s.recompute_early_stop);
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8,recompute=full").recompute_early_stop);  // off is the default
  EXPECT_NE(to_cli_string(s).find(",earlystop=on"), std::string::npos);
  EXPECT_EQ(to_cli_string(parse_strategy("dp=2,gbs=8,recompute=full")).find("earlystop"), std::string::npos);
  EXPECT_EQ(to_json(s)["recompute_early_stop"], true);
  EXPECT_FALSE(to_json(parse_strategy("dp=2,gbs=8")).contains("recompute_early_stop"));
  EXPECT_TRUE(strategy_from_json(nlohmann::json::parse(to_json(s).dump()), "s.json").recompute_early_stop);
  EXPECT_TRUE(parse_strategy(to_cli_string(s)).recompute_early_stop);
  EXPECT_NE(cost_test::error_of([] { parse_strategy("gbs=8,earlystop=maybe"); }).find("earlystop"), std::string::npos);
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1");
  EXPECT_NE(cost_test::error_of([&] { complete_strategy(parse_strategy("dp=8,gbs=8,recompute=selective,earlystop=on"), m, c); })
                .find("earlystop=on needs recompute=full"),
            std::string::npos);
}

TEST(RecomputeEarlyStop, IterationIsFasterByTheSkippedWorkAndFitsTheSame) {
  // Llama 3 70B as torchtitan's row r0061 runs it (FSDP 32 x TP 8, full AC), on DGX H100s.
  const auto m = model::with_seq(model::zoo_model("llama3-70b"), 8192);
  const auto c = cost_test::cluster("dgx-h100:32");
  const std::string spec = "dp=32,tp=8,mbs=16,gbs=512,zero=3,recompute=full,sp=on";
  const auto whole = estimate(m, c, complete_strategy(parse_strategy(spec), m, c));
  const auto early = estimate(m, c, complete_strategy(parse_strategy(spec + ",earlystop=on"), m, c));
  EXPECT_LT(early.iteration_time_s, whole.iteration_time_s);
  // Saved: the output projections' share of the recompute, 2·h·f of the block's 2·h·(h + 2·kv·d) + 2·h² + 6·h·f
  // GEMM FLOPs per token (27 % for Llama 3 70B), i.e. a few percent of fwd + bwd + recompute, never all of it.
  const double saved = 1 - early.iteration_time_s / whole.iteration_time_s;
  EXPECT_GT(saved, 0.03);
  EXPECT_LT(saved, 0.25);
  EXPECT_EQ(early.peak_memory_bytes, whole.peak_memory_bytes);
  EXPECT_EQ(early.fits, whole.fits);
}
