// tests/cost/test_attention_kernels: the fused attention kernels differ only in speed — the iteration time of
// attention=flash1 / flash / cudnn differs from one another by exactly the executed (causal) attention FLOPs
// at each kernel's efficiency (forward + its 2.5× backward, model::kFlashBackwardWorkRatio; cost/constants
// flash_attention_time), their memory is
// equal, the Ampere-generation kernels (flash1, flash) take the Hopper factor on an H100 and only there, and a
// kernel on a GPU without 16-bit tensor cores is refused with one line.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.hpp"
#include "strata/cost/constants.hpp"

using namespace strata;

namespace {

// `gpu_factor`: the share of the peak the kernel's efficiency applies to on that GPU.
double attention_time_per_layer(double gpu_factor, double eff_of_kernel, double b, double s, double h, int t,
                                double peak_flops) {
  const double n = std::ceil(s / 128);
  const double work = 4 * b * s * s * h / t * (n + 1) / (2 * n);  // causal tiles on and below the diagonal
  static_assert(model::kFlashBackwardWorkRatio == 2.5);               // 5 tile products in backward, 2 forward
  return (1 + model::kFlashBackwardWorkRatio) * work / (peak_flops * gpu_factor * eff_of_kernel);
}

// The ampere_attention_gpu_efficiency entry named `prefix` (the data file keys Hopper GPUs by "h100"/"h200").
double ampere_entry(const cost::CostConstants& k, const std::string& prefix) {
  for (const auto& [name, v] : k.ampere_attention_gpu_efficiency)
    if (name == prefix) return v;
  ADD_FAILURE() << "no ampere_attention_gpu_efficiency entry " << prefix;
  return 1.0;
}

}  // namespace

TEST(AttentionKernels, KernelsDifferByTheExecutedAttentionFlopsAtTheirEfficiency) {
  const auto m = cost_test::gpt(4, 2048, 16, 4096);
  const auto c = cost_test::cluster("dgx-h100:1");
  const auto& k = cost::builtin_constants();
  const std::string base = "dp=1,tp=8,mbs=2,gbs=2,sp=on,attention=";
  const auto flash = cost_test::run(m, c, base + "flash");
  const auto flash1 = cost_test::run(m, c, base + "flash1");
  const auto cudnn = cost_test::run(m, c, base + "cudnn");
  const double peak = c.gpu_types[0].peak(hw::Dtype::bf16);
  const double hopper = cost::gpu_compute_factor(k, "h100-sxm");
  const double ampere = hopper * ampere_entry(k, "h100");  // FlashAttention v1/v2 on an H100
  const auto per_layer = [&](double factor, double eff) {
    return attention_time_per_layer(factor, eff, 2, 4096, 2048, 8, peak);
  };
  const double layers = 4;
  EXPECT_NEAR(flash1.iteration_time_s - flash.iteration_time_s,
              layers * (per_layer(ampere, k.flash1_attention_efficiency) - per_layer(ampere, k.flash_attention_efficiency)),
              1e-9 * flash.iteration_time_s);
  EXPECT_NEAR(cudnn.iteration_time_s - flash.iteration_time_s,
              layers * (per_layer(hopper, k.cudnn_attention_efficiency) - per_layer(ampere, k.flash_attention_efficiency)),
              1e-9 * flash.iteration_time_s);
  EXPECT_DOUBLE_EQ(flash1.peak_memory_bytes, flash.peak_memory_bytes);
  EXPECT_DOUBLE_EQ(cudnn.peak_memory_bytes, flash.peak_memory_bytes);
}

TEST(AttentionKernels, AmpereKernelsTakeTheHopperFactorOnlyOnHopper) {
  // Halving the Hopper entry doubles exactly the FlashAttention v1/v2 time on an H100; on an A100 (no entry) and for
  // cuDNN's Hopper-native kernel nothing changes.
  const auto m = cost_test::gpt(4, 2048, 16, 4096);
  auto k = cost::builtin_constants();
  k.ampere_attention_gpu_efficiency = {{"h100", 1.0}};
  auto half = k;
  half.ampere_attention_gpu_efficiency = {{"h100", 0.5}};
  cost::CostOptions one, slow;
  one.constants = &k;
  slow.constants = &half;
  const std::string base = "dp=1,tp=8,mbs=2,gbs=2,sp=on,attention=";
  const auto h100 = cost_test::cluster("dgx-h100:1");
  const double peak = h100.gpu_types[0].peak(hw::Dtype::bf16);
  const double factor = cost::gpu_compute_factor(k, "h100-sxm");
  for (const std::string kernel : {"flash", "flash1"}) {
    const double eff = kernel == "flash1" ? k.flash1_attention_efficiency : k.flash_attention_efficiency;
    const double t1 = cost_test::run(m, h100, base + kernel, one).iteration_time_s;
    const double t_half = cost_test::run(m, h100, base + kernel, slow).iteration_time_s;
    EXPECT_NEAR(t_half - t1, 4 * attention_time_per_layer(factor, eff, 2, 4096, 2048, 8, peak), 1e-9 * t1) << kernel;
  }
  EXPECT_DOUBLE_EQ(cost_test::run(m, h100, base + "cudnn", one).iteration_time_s,
                   cost_test::run(m, h100, base + "cudnn", slow).iteration_time_s);
  const auto a100 = cost_test::cluster("dgx-a100:1");
  EXPECT_DOUBLE_EQ(cost_test::run(m, a100, base + "flash", one).iteration_time_s,
                   cost_test::run(m, a100, base + "flash", slow).iteration_time_s);
  // The prefix covers every H100 variant and nothing else.
  EXPECT_DOUBLE_EQ(cost::attention_gpu_factor(half, model::AttentionKernel::flash, "h100-pcie"),
                   0.5 * cost::gpu_compute_factor(half, "h100-pcie"));
  EXPECT_DOUBLE_EQ(cost::attention_gpu_factor(half, model::AttentionKernel::flash1, "a100-80gb"),
                   cost::gpu_compute_factor(half, "a100-80gb"));
  EXPECT_DOUBLE_EQ(cost::attention_gpu_factor(half, model::AttentionKernel::cudnn, "h100-sxm"),
                   cost::gpu_compute_factor(half, "h100-sxm"));
}

TEST(AttentionKernels, FusedKernelsNeedSixteenBitTensorCores) {
  const auto m = cost_test::gpt(4, 1024, 16, 1024);
  const auto c = cost_test::cluster("p3.16xlarge:1");  // V100: no bf16, no FlashAttention
  for (const std::string kernel : {"flash", "flash1", "cudnn"}) {
    const auto err = cost_test::error_of([&] { cost_test::run(m, c, "dp=8,mbs=1,gbs=8,attention=" + kernel); });
    EXPECT_NE(err.find("attention=" + kernel), std::string::npos) << err;
    EXPECT_NE(err.find("eager"), std::string::npos) << err;
  }
  EXPECT_NO_THROW(cost_test::run(m, c, "dp=8,mbs=1,gbs=8,attention=eager"));
}

TEST(AttentionKernels, DefaultFollowsGpuAndDtype) {
  // Issue 38: FlashAttention has no fp32 kernel and V100/T4 have no FlashAttention 2, so the default kernel is
  // fused only for a 16-bit attention dtype on an sm80+ GPU; fp8 runs its attention in bf16 (fused).
  const auto catalog = hw::builtin_catalog();
  const auto kernel = [&](const std::string& gpu, hw::Dtype d) {
    cost::Strategy s;
    s.dtype = d;
    return cost::attention_kernel_for(s, catalog.gpu(gpu));
  };
  for (const hw::Dtype d : {hw::Dtype::bf16, hw::Dtype::fp16, hw::Dtype::fp8})
    EXPECT_EQ(kernel("a100-80gb", d), model::AttentionKernel::flash) << hw::to_string(d);
  for (const hw::Dtype d : {hw::Dtype::fp32, hw::Dtype::tf32}) {
    EXPECT_EQ(kernel("a100-80gb", d), model::AttentionKernel::eager) << hw::to_string(d);
    EXPECT_EQ(kernel("h100-sxm", d), model::AttentionKernel::eager) << hw::to_string(d);
  }
  for (const std::string gpu : {"v100-16gb", "v100-32gb", "t4"})
    for (const hw::Dtype d : {hw::Dtype::fp16, hw::Dtype::fp32})
      EXPECT_EQ(kernel(gpu, d), model::AttentionKernel::eager) << gpu;
}

TEST(AttentionKernels, ExplicitFlashWithFp32IsARuleError) {
  const auto m = cost_test::gpt(4, 1024, 16, 1024);
  const auto c = cost_test::cluster("dgx-a100:1");
  for (const std::string kernel : {"flash", "flash1", "cudnn"}) {
    const auto err =
        cost_test::error_of([&] { cost_test::run(m, c, "dp=8,mbs=1,gbs=8,dtype=fp32,attention=" + kernel); });
    EXPECT_NE(err.find("FlashAttention has no fp32 kernel"), std::string::npos) << err;
    EXPECT_NE(err.find("attention=eager"), std::string::npos) << err;
  }
  const auto v100 = cost_test::error_of(
      [&] { cost_test::run(m, cost_test::cluster("p3.16xlarge:1"), "dp=8,mbs=1,gbs=8,dtype=fp16,attention=flash"); });
  EXPECT_NE(v100.find("no FlashAttention 2 kernel"), std::string::npos) << v100;
  // The fp32 default is eager attention (the s² scores stored): the same estimate as attention=eager.
  const auto fp32 = cost_test::run(m, c, "dp=8,mbs=1,gbs=8,dtype=fp32");
  const auto fp32_eager = cost_test::run(m, c, "dp=8,mbs=1,gbs=8,dtype=fp32,attention=eager");
  EXPECT_EQ(fp32.peak_memory_bytes, fp32_eager.peak_memory_bytes);
  EXPECT_EQ(fp32.iteration_time_s, fp32_eager.iteration_time_s);
}
