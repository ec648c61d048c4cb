// Tests for cost/estimate and cost/stage: TP bytes per layer (Megatron), PTD-P FLOPs and parameter formulas,
// memory of a known configuration by hand (Korthikanti), the layer-sum identity the planner relies on, and the
// calibration targets of `strata validate`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "helpers.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/validate.hpp"

using namespace strata;
using namespace strata::cost;

TEST(CostEstimate, TensorParallelBytesPerLayer) {
  // Megatron: 2 all-reduces forward + 2 backward of b·s·h elements; a ring moves 2(t−1)/t of the message per
  // rank each time, so 8·b·s·h·(t−1)/t elements per layer. With ideal links and no latency the TP time × link
  // bandwidth is exactly those bytes.
  auto k = cost_test::ideal_links();
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto m = cost_test::gpt(4, 1024, 16, 512);
  for (int t : {2, 4, 8}) {
    const auto s = complete_strategy(parse_strategy(fmt::format("dp={},tp={},gbs={}", 8 / t, t, 8 / t * 2)), m, c);
    CostOptions opt;
    opt.constants = &k;
    std::vector<int> devs(8);
    std::iota(devs.begin(), devs.end(), 0);
    const auto ctx = make_stage_context(m, c, s, devs, opt);
    const auto lc = layer_stage_cost(m, m.layers[1], ctx, model::Recompute::none);
    const double b = 1, sq = 512, h = 1024, bytes = 2;
    const double B = hw::link_bandwidth(c, 0, 1), alpha = hw::link_latency(c, 0, 1);
    const double latency = 4 * 2.0 * (t - 1) * alpha;  // 4 all-reduces of 2(t−1) steps
    EXPECT_NEAR((lc.tp_comm_fwd_s + lc.tp_comm_bwd_s - latency) * B, 8.0 * b * sq * h * bytes * (t - 1) / t, 1.0)
        << "t=" << t;
    // Full recompute adds the forward's two all-reduces again.
    const auto full = layer_stage_cost(m, m.layers[1], ctx, model::Recompute::full);
    EXPECT_NEAR(full.tp_comm_bwd_s, 2 * lc.tp_comm_bwd_s, 1e-12);
  }
}

TEST(CostEstimate, PtdpFlopsAndParameterFormulas) {
  // The one FLOPs source is the per-layer formula (model::layer_cost summed by the model); for a GPT its sums
  // must be the PTD-P / Korthikanti closed forms.
  const auto m = model::zoo_model("gpt3-175b");
  const double l = 96, h = 12288, s = 2048, V = 51200;
  // Narayanan et al. 2021 eq. 3 per sample (B = 1).
  EXPECT_NEAR(model::ptdp_flops_per_sample(m) / (96 * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))), 1.0,
              1e-9);
  // Model FLOPs for MFU drop the recompute forward: blocks 72·s·h²(1 + s/6h) per layer, logits 6·s·h·V.
  EXPECT_NEAR(model::train_flops_per_sample(m) / (72 * s * l * h * h * (1 + s / (6 * h)) + 6 * s * h * V), 1.0,
              1e-9);
  // Parameters P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h)) (PTD-P §5.1).
  EXPECT_NEAR(model::total_params(m) / (12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))), 1.0, 1e-3);
  // Any model: the PTD-P count adds exactly one forward of every block to the training FLOPs.
  const auto llama = model::zoo_model("llama2-7b");
  const double block_fwd = model::layer_cost(llama.layers[1], model::LayerQuery{}).fwd_flops;
  EXPECT_NEAR(model::ptdp_flops_per_sample(llama) - model::train_flops_per_sample(llama),
              llama.num_blocks() * block_fwd, 1e-6 * block_fwd);
}

TEST(CostEstimate, MemoryOfAKnownConfigurationByHand) {
  // GPT-3 175B, tp 8, pp 8, interleaved v = 3, mbs 1, gbs 64, no recompute (Korthikanti Figure 1 setup).
  const auto m = model::zoo_model("gpt3-175b");
  const auto c = cost_test::cluster("dgx-a100:8");
  auto s = parse_strategy("dp=1,tp=8,pp=8,v=3,mbs=1,gbs=64,dtype=fp16,attention=eager");  // 2022 Megatron
  s = complete_strategy(s, m, c);
  const auto e = estimate(m, c, s);
  const auto& mem = e.stages[0].memory;
  const double h = 12288, a = 96, sq = 2048, t = 8, b = 1, p = 8, v = 3, V = 51200;
  // First stage: 12 blocks (3 chunks of 4) + the embedding.
  const double block_params = 12 * h * h / t + 13 * h;  // per tp rank incl. biases/norms (replicated parts ≈)
  const double emb_params = V * h / t + sq * h;
  const double params = 12 * block_params + emb_params;
  EXPECT_NEAR((mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes) / (18 * params), 1.0, 0.01);
  // Activations: sbh(10 + 24/t + 5as/(ht)) per layer × 12 layers × p(1 + (p−1)/(pv)) micro-batches in flight.
  const double per_layer = sq * b * h * (10 + 24 / t + 5 * a * sq / (h * t));
  const double in_flight = p * (1 + (p - 1) / (p * v));
  EXPECT_NEAR(mem.activations_bytes / (12 * per_layer * in_flight), 1.0, 0.01);
  EXPECT_TRUE(e.fits == (e.peak_memory_bytes <= 80.0 * (1ull << 30)));
}

TEST(CostEstimate, EstimateIsTheSumOfTheBuildingBlocks) {
  // The planner's identity: stage time = Σ layer_stage_costs over the stage's layers; iteration =
  // iteration_time(t, e, dp sync + optimizer) = pipeline_time(t, e) + max(dp sync + optimizer) for 1F1B.
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("p3.8xlarge:2+g4dn.12xlarge:2");
  auto s = complete_strategy(parse_strategy("dp=2,tp=2,pp=4,mbs=2,gbs=32,zero=1,recompute=selective,split=2+3+3+2"),
                             m, c);
  const auto e = estimate(m, c, s);
  std::vector<double> t, ev;
  const auto bounds = chunk_boundaries(s);
  double tail = 0;
  std::vector<double> sync;
  for (int st = 0; st < s.pp; ++st) {
    std::vector<int> devs;
    for (int d = 0; d < s.dp; ++d)
      for (int r = 0; r < s.tp; ++r) devs.push_back(s.device(st, d, r));
    const auto costs = layer_stage_costs(m, c, s, devs);
    double sum = 0, params = 0;
    for (int l = bounds[st]; l < bounds[st + 1]; ++l) {
      sum += costs[l].time_s();
      params += costs[l].params_per_device;
    }
    EXPECT_DOUBLE_EQ(sum, e.stages[st].time_s);
    t.push_back(sum);
    if (st + 1 < s.pp) {
      std::vector<int> next;
      for (int d = 0; d < s.dp; ++d)
        for (int r = 0; r < s.tp; ++r) next.push_back(s.device(st + 1, d, r));
      ev.push_back(p2p_time(c, s, devs, next, costs[bounds[st + 1] - 1].output_bytes));
      EXPECT_DOUBLE_EQ(ev.back(), e.stages[st].p2p_s);
    }
    const auto ctx = make_stage_context(m, c, s, devs);
    sync.push_back(dp_sync_exposed_time(ctx, params, e.stages[st].bwd_s) + optimizer_step_time(ctx, params));
    tail = std::max(tail, sync.back());
  }
  EXPECT_DOUBLE_EQ(pipeline_time(s.schedule, s.num_micro_batches(), 1, t, ev) + tail, e.iteration_time_s);
  EXPECT_DOUBLE_EQ(iteration_time(s.schedule, s.num_micro_batches(), 1, t, ev, sync), e.iteration_time_s);
  // Slower T4 stages take longer per layer than V100 stages for the same layer.
  EXPECT_EQ(e.stages[0].gpu, "v100-16gb");
  EXPECT_EQ(e.stages[3].gpu, "t4");
}

TEST(CostEstimate, OutputsAreConsistent) {
  const auto m = model::zoo_model("gpt3-175b");
  const auto c = cost_test::cluster("dgx-a100:8");
  const auto e = cost_test::run(m, c, "tp=8,pp=8,mbs=1,gbs=64,v=3,recompute=selective,sp=on");
  EXPECT_NEAR(e.samples_per_s * e.iteration_time_s, 64, 1e-9);
  EXPECT_NEAR(e.tokens_per_s, e.samples_per_s * 2048, 1e-6);
  // tflops_per_gpu uses the PTD-P count (recompute forward included); MFU the model FLOPs without it.
  EXPECT_NEAR(e.tflops_per_gpu * 1e12 / 312e12 * model::train_flops_per_sample(m) / model::ptdp_flops_per_sample(m),
              e.mfu, 1e-9);
  EXPECT_GT(e.mfu, 0.3);
  EXPECT_LT(e.mfu, 0.8);
  const auto j = to_json(e);
  for (const char* key : {"iteration_time_s", "samples_per_s", "tokens_per_s", "tflops_per_gpu", "mfu", "fits",
                          "peak_memory_bytes", "stages"})
    EXPECT_TRUE(j.contains(key)) << key;
  for (const char* key : {"time_s", "compute_s", "tp_comm_s", "p2p_s", "dp_comm_s", "memory_bytes", "devices"})
    EXPECT_TRUE(j["stages"][0].contains(key)) << key;
}

TEST(CostEstimate, CalibrationTargetsAreMet) {
  const auto r = validate_calibration(builtin_constants());
  EXPECT_LE(r.time_mean_abs_pct, 8.0);
  EXPECT_LE(r.time_max_abs_pct, 15.0);
  EXPECT_LE(r.memory_mean_abs_pct, 10.0);
  int table5 = 0, fig1 = 0, mosaic = 0;
  for (const auto& row : r.rows) {
    table5 += row.dataset == "korthikanti_table5";
    fig1 += row.dataset == "korthikanti_fig1";
    mosaic += row.dataset == "mosaicml";
  }
  EXPECT_EQ(table5, 8);
  EXPECT_EQ(fig1, 16);
  EXPECT_EQ(mosaic, 8);
  // The sources whose issue-13 targets (<= 8 % mean, <= 15 % max, every row fits) are met today stay met; the
  // missed ones (llm-foundry's max, overall max) are listed in docs/cost-model.md, Validation.
  for (const char* met : {"korthikanti_table5", "korthikanti_fig1", "mosaicml", "megatron-bridge", "nemo-long-seq",
                          "torchtitan", "torchtitan async-TP"}) {
    const auto it = std::find_if(r.sources.begin(), r.sources.end(), [&](const auto& s) { return s.dataset == met; });
    ASSERT_NE(it, r.sources.end()) << met;
    EXPECT_TRUE(it->met()) << met << ": " << it->mean_abs_pct << " % mean, " << it->max_abs_pct << " % max";
  }
}

TEST(CostEstimate, DpSyncExposesAtLeastTheLastBucket) {
  // Buckets are released as the backward runs; the last one starts when the backward ends (sim/from_cost does
  // the same), so even an infinitely long backward leaves one bucket's collective exposed.
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("dgx-a100:2");
  const auto s = complete_strategy(parse_strategy("dp=16,tp=1,pp=1,mbs=1,gbs=16"), m, c);
  std::vector<int> devs(16);
  for (int i = 0; i < 16; ++i) devs[i] = s.device(0, i, 0);
  const auto ctx = make_stage_context(m, c, s, devs);
  const auto& k = builtin_constants();
  // One bucket (small gradients): the whole all-reduce is exposed however long the backward.
  const double small = 1e6;
  const double one = ctx.dp_allreduce_latency_s + ctx.dp_allreduce_s_per_byte * small * k.grad_comm_bytes_per_param;
  EXPECT_NEAR(dp_sync_exposed_time(ctx, small, 1e3), one, 1e-12 * one);
  // 16 buckets of a large gradient under a long backward: the last bucket, plus the contention slowdown
  // (γ − 1) of the 15 overlapped ones (Galvatron).
  const double big = 16 * k.dp_bucket_bytes / k.grad_comm_bytes_per_param;
  const double last = ctx.dp_allreduce_latency_s + ctx.dp_allreduce_s_per_byte * k.dp_bucket_bytes;
  EXPECT_NEAR(dp_sync_exposed_time(ctx, big, 1e3), last + (k.overlap_slowdown - 1) * 15 * last, 1e-9 * last);
  // No overlap window: every bucket in sequence.
  EXPECT_NEAR(dp_sync_exposed_time(ctx, big, 0.0), 16 * last, 1e-9 * last);
}

TEST(CostEstimate, StageSyncLowerBoundHoldsForEveryLargerStageAndShorterWindow) {
  // The planner prunes with stage_sync_lower_bound_s(ctx, P_min, W) before any split exists: it must be at most
  // dp_sync_exposed_time + optimizer_step_time of every P ≥ P_min and window w ≤ W, for every ZeRO stage and
  // bucket count (one bucket, several, capped at dp_max_buckets).
  const auto m = model::zoo_model("small-gpt");
  const auto c = cost_test::cluster("dgx-a100:2");
  const auto& k = builtin_constants();
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  int checked = 0, exact_at_min = 0;
  for (int zero : {0, 1, 2, 3}) {
    const auto s = complete_strategy(
        parse_strategy(fmt::format("dp=16,tp=1,pp=1,mbs=1,gbs=16,zero={}", zero)), m, c);
    std::vector<int> devs(16);
    for (int i = 0; i < 16; ++i) devs[i] = s.device(0, i, 0);
    const auto ctx = make_stage_context(m, c, s, devs);
    for (int trial = 0; trial < 400; ++trial) {
      // Gradients from far below one bucket to far above dp_max_buckets buckets.
      const double p_min = std::pow(10.0, 3 + 8 * u01(rng)) * k.dp_bucket_bytes / 1e9;
      const double window = u01(rng) < 0.2 ? 0.0 : std::pow(10.0, -4 + 4 * u01(rng));
      const double bound = stage_sync_lower_bound_s(ctx, p_min, window);
      // ZeRO-3 syncs inside the layers: the bound is the optimizer step alone, exactly.
      if (zero == 3) EXPECT_EQ(bound, optimizer_step_time(ctx, p_min));
      for (int probe = 0; probe < 8; ++probe) {
        const double p = p_min * (probe == 0 ? 1.0 : 1.0 + 10 * u01(rng));
        const double w = window * (probe == 0 ? 1.0 : u01(rng));
        const double actual = dp_sync_exposed_time(ctx, p, w) + optimizer_step_time(ctx, p);
        EXPECT_LE(bound, actual * (1 + 1e-12)) << "zero " << zero << " P " << p << " w " << w;
        ++checked;
        if (probe == 0 && bound >= 0.5 * actual) ++exact_at_min;
      }
    }
  }
  EXPECT_EQ(checked, 4 * 400 * 8);
  EXPECT_GT(exact_at_min, 4 * 400 / 2);  // not a vacuous bound: within 2x at P_min in most draws
}
