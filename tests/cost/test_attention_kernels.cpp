// tests/cost/test_attention_kernels: the fused attention kernels differ only in speed — the iteration time of
// attention=flash1 / flash / cudnn differs from one another by exactly the executed (causal) attention FLOPs
// at each kernel's efficiency (forward + 2× backward, cost/constants flash_attention_time), their memory is
// equal, and a kernel on a GPU without 16-bit tensor cores is refused with one line.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.hpp"
#include "strata/cost/constants.hpp"

using namespace strata;

namespace {

double attention_time_per_layer(const cost::CostConstants& k, double eff_of_kernel, double b, double s, double h,
                                int t, double peak_flops) {
  const double n = std::ceil(s / 128);
  const double work = 4 * b * s * s * h / t * (n + 1) / (2 * n);  // causal tiles on and below the diagonal
  return 3 * work / (peak_flops * cost::gpu_compute_factor(k, "h100-sxm") * eff_of_kernel);
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
  const auto per_layer = [&](double eff) { return attention_time_per_layer(k, eff, 2, 4096, 2048, 8, peak); };
  const double layers = 4;
  EXPECT_NEAR(flash1.iteration_time_s - flash.iteration_time_s,
              layers * (per_layer(k.flash1_attention_efficiency) - per_layer(k.flash_attention_efficiency)),
              1e-9 * flash.iteration_time_s);
  EXPECT_NEAR(cudnn.iteration_time_s - flash.iteration_time_s,
              layers * (per_layer(k.cudnn_attention_efficiency) - per_layer(k.flash_attention_efficiency)),
              1e-9 * flash.iteration_time_s);
  EXPECT_DOUBLE_EQ(flash1.peak_memory_bytes, flash.peak_memory_bytes);
  EXPECT_DOUBLE_EQ(cudnn.peak_memory_bytes, flash.peak_memory_bytes);
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
