// tests/cost/test_train_probe: what strata's own single-GPU training rows (data/calibration/gpu_train_h100-sxm.json,
// issue 38) taught the memory model — gradients on demand vs a persistent buffer vs DDP's buckets, autocast's casts
// under full recompute, SDPA's fp32 backend (attention=efficient), the eager host floor — and that the rows meet
// their `strata validate` targets.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "helpers.hpp"
#include "strata/cost/engine.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/validate.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

Estimate run(const std::string& model, const std::string& cluster, const std::string& strategy) {
  const auto m = model::zoo_model(model);
  const auto c = cost_test::cluster(cluster);
  return estimate(m, c, complete_strategy(parse_strategy(strategy), m, c), CostOptions{});
}

const SourceSummary& source(const ValidationReport& r, const std::string& name) {
  const auto it = std::find_if(r.sources.begin(), r.sources.end(), [&](const auto& s) { return s.dataset == name; });
  EXPECT_NE(it, r.sources.end()) << name;
  return *it;
}

}  // namespace

TEST(TrainProbe, GradientsOnDemandPeakAtTheLargerOfActivationsAndGradients) {
  Strategy s = parse_strategy("dp=1,mbs=4,gbs=4,grads=ondemand");
  // One micro-batch per step: only the gradients beyond the activations raise the peak.
  EXPECT_DOUBLE_EQ(gradient_peak_bytes(s, 4e9, 10e9), 0.0);
  EXPECT_DOUBLE_EQ(gradient_peak_bytes(s, 10e9, 4e9), 6e9);
  // Gradient accumulation holds the first micro-batch's gradients while later activations build up.
  s.global_batch = 8;
  EXPECT_DOUBLE_EQ(gradient_peak_bytes(s, 4e9, 10e9), 4e9);
  // A persistent buffer (Megatron, DeepSpeed, FSDP) always counts them.
  EXPECT_DOUBLE_EQ(gradient_peak_bytes(parse_strategy("dp=1,mbs=4,gbs=4"), 4e9, 10e9), 4e9);
  // DDP's buckets add the gradients' size once there is more than one replica at ZeRO 0.
  Strategy ddp = parse_strategy("dp=2,mbs=4,gbs=8,grads=ddp");
  EXPECT_DOUBLE_EQ(gradient_peak_bytes(ddp, 4e9, 10e9), 4e9);
  ddp.dp = 1;
  ddp.global_batch = 4;
  EXPECT_DOUBLE_EQ(gradient_peak_bytes(ddp, 4e9, 10e9), 0.0);  // one process: no DDP wrapper
}

TEST(TrainProbe, PytorchEngineSetsItsStackTraits) {
  const auto& p = engine_profile("pytorch");
  const auto c = cost_test::cluster("dgx-h100:1");
  Strategy s = parse_strategy("dp=8,gbs=64");
  apply_engine_traits(p, c, s);
  EXPECT_EQ(s.grads, GradBuffer::ddp);
  EXPECT_TRUE(s.fp32_loss);
  EXPECT_EQ(attention_kernel_for(s, c.gpu_types.front()), model::AttentionKernel::flash);  // bf16 on an H100
  // fp32 on an H100: SDPA's memory-efficient backend (FlashAttention has no fp32 kernel), not the s² math path.
  Strategy f = parse_strategy("dp=8,gbs=64,dtype=fp32");
  apply_engine_traits(p, c, f);
  ASSERT_TRUE(f.attention.has_value());
  EXPECT_EQ(*f.attention, model::AttentionKernel::efficient);
  // fp16 on a V100 (no FlashAttention 2): the memory-efficient backend too.
  Strategy v = parse_strategy("dp=8,gbs=64,dtype=fp16");
  apply_engine_traits(p, cost_test::cluster("p3.16xlarge:1"), v);
  ASSERT_TRUE(v.attention.has_value());
  EXPECT_EQ(*v.attention, model::AttentionKernel::efficient);
}

TEST(TrainProbe, EfficientAttentionKeepsNoScoresAndRunsFp32) {
  // The efficient kernel stores what flash stores; eager keeps the s² scores.
  const auto eager = run("gpt2-medium", "dgx-a100:1", "dp=8,mbs=8,gbs=64,dtype=fp32,attention=eager");
  const auto eff = run("gpt2-medium", "dgx-a100:1", "dp=8,mbs=8,gbs=64,dtype=fp32,attention=efficient");
  EXPECT_LT(eff.stages[0].memory.activations_bytes, 0.6 * eager.stages[0].memory.activations_bytes);
  // Flash refuses fp32; efficient runs on a V100 (no bf16 tensor cores) in fp16.
  EXPECT_NE(cost_test::error_of([] { run("gpt2-medium", "dgx-a100:1", "dp=8,gbs=64,dtype=fp32,attention=flash"); })
                .find("no fp32 kernel"),
            std::string::npos);
  EXPECT_GT(run("gpt2-medium", "p3.16xlarge:1", "dp=8,mbs=1,gbs=64,dtype=fp16,attention=efficient").iteration_time_s,
            0.0);
}

TEST(TrainProbe, FullRecomputeUnderAutocastHoldsNoWeightCasts) {
  // elementwise=eager at dp 1 is the autocast stack: a fully recomputed block's bf16 casts are re-made in its
  // recompute, so the weights row holds only the head's casts (the embedding lookup makes none).
  const auto none = run("gpt2-medium", "dgx-a100:1", "dp=8,mbs=4,gbs=32,elementwise=eager");
  const auto full = run("gpt2-medium", "dgx-a100:1", "dp=8,mbs=4,gbs=32,elementwise=eager,recompute=full");
  EXPECT_LT(full.stages[0].memory.weights_bytes, 0.2 * none.stages[0].memory.weights_bytes);
  // Megatron's fused stack keeps real 16-bit parameters: unchanged by recompute.
  const auto fused_none = run("gpt2-medium", "dgx-a100:1", "dp=8,mbs=4,gbs=32");
  const auto fused_full = run("gpt2-medium", "dgx-a100:1", "dp=8,mbs=4,gbs=32,recompute=full");
  EXPECT_DOUBLE_EQ(fused_full.stages[0].memory.weights_bytes, fused_none.stages[0].memory.weights_bytes);
}

TEST(TrainProbe, EagerHostFloorBoundsSmallSteps) {
  // tiny-gpt on an H100: its kernels are far shorter than their launches. The eager stack pays at least the host's
  // per-block time (0.66 ms forward, 2x backward per LayerNorm block); the fused stack is not floored.
  const auto eager = run("tiny-gpt", "dgx-h100:1", "dp=8,mbs=1,gbs=8,elementwise=eager");
  const auto fused = run("tiny-gpt", "dgx-h100:1", "dp=8,mbs=1,gbs=8");
  const auto& k = builtin_constants();
  EXPECT_GE(eager.stages[0].fwd_s, 4 * k.eager_host_block_s);
  EXPECT_GE(eager.stages[0].bwd_s, 4 * 2 * k.eager_host_block_s);
  EXPECT_LT(fused.stages[0].fwd_s, 4 * k.eager_host_block_s);
}

TEST(TrainProbe, RowsMeetTheirValidateTargets) {
  const auto r = validate_calibration(builtin_constants());
  const auto& mem = source(r, "PyTorch training H100 (memory)");
  const auto& time = source(r, "PyTorch training H100 (time)");
  EXPECT_GE(mem.rows, 19);
  EXPECT_TRUE(mem.met()) << mem.mean_abs_pct << " % mean";
  EXPECT_TRUE(time.met()) << time.mean_abs_pct << " % mean";
  // The run that ran out of memory is predicted not to fit.
  int oom = 0;
  for (const auto& sk : r.skipped)
    if (sk.dataset == "PyTorch training H100 (memory)") {
      ++oom;
      EXPECT_NE(sk.reason.find("(agrees)"), std::string::npos) << sk.name << ": " << sk.reason;
    }
  EXPECT_EQ(oom, 1);
}
