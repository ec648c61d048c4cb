// tests/cost/test_fit_fixed_point: data/cost_constants.json says its public-row constants are a fixed point of
// `strata validate --fit`. At a fixed point of that coordinate search every one-constant fit returns the value it
// starts from, so each fit run once on the built-in constants must leave them unchanged. A model change that
// moves any row without re-fitting the file fails here (re-fit: docs/cost-model.md, Constants and provenance).
#include <gtest/gtest.h>

#include <string>

#include "strata/cost/constants.hpp"
#include "strata/cost/validate.hpp"

using namespace strata;

namespace {

// Every fitted public-row constant, flattened (the per-GPU maps by entry).
void expect_same_fitted_values(const cost::CostConstants& want, const cost::CostConstants& got, const std::string& fit) {
  EXPECT_DOUBLE_EQ(got.eager_elementwise_efficiency, want.eager_elementwise_efficiency) << fit;
  EXPECT_DOUBLE_EQ(got.flash1_attention_efficiency, want.flash1_attention_efficiency) << fit;
  EXPECT_DOUBLE_EQ(got.cudnn_attention_efficiency, want.cudnn_attention_efficiency) << fit;
  EXPECT_DOUBLE_EQ(got.fp8_gemm_relative_efficiency, want.fp8_gemm_relative_efficiency) << fit;
  EXPECT_DOUBLE_EQ(got.tp_async_overlap_slowdown, want.tp_async_overlap_slowdown) << fit;
  EXPECT_DOUBLE_EQ(got.mxfp8_gemm_relative_efficiency, want.mxfp8_gemm_relative_efficiency) << fit;
  for (const char* gpu : {"h100-sxm", "h200", "h100-sxm-96gb-500w", "b200", "gb200", "gb300", "b300", "mi355x"})
    EXPECT_DOUBLE_EQ(cost::gpu_compute_factor(got, gpu), cost::gpu_compute_factor(want, gpu)) << fit << " " << gpu;
  for (const char* gpu : {"b200", "gb200", "gb300", "b300"})
    EXPECT_DOUBLE_EQ(cost::fp4_gemm_gpu_factor(got, gpu), cost::fp4_gemm_gpu_factor(want, gpu)) << fit << " " << gpu;
  for (const char* gpu : {"h100-sxm", "h200"})
    EXPECT_DOUBLE_EQ(cost::attention_gpu_factor(got, model::AttentionKernel::flash, gpu),
                     cost::attention_gpu_factor(want, model::AttentionKernel::flash, gpu))
        << fit << " " << gpu;
}

}  // namespace

TEST(FitFixedPoint, EveryPublicRowFitReturnsTheDataFilesValues) {
  const auto& k = cost::builtin_constants();
  expect_same_fitted_values(k, cost::fit_eager_to_foundry_a100_rows(k), "eager element-wise");
  expect_same_fitted_values(k, cost::fit_h100_to_public_rows(k), "h100 factor");
  expect_same_fitted_values(k, cost::fit_flash1_to_foundry_rows(k), "flash1");
  expect_same_fitted_values(k, cost::fit_ampere_attention_to_foundry_h100_rows(k), "ampere attention on Hopper");
  expect_same_fitted_values(k, cost::fit_torchtitan_gpu_to_its_rows(k), "torchtitan GPU factor");
  expect_same_fitted_values(k, cost::fit_cudnn_to_nemo_rows(k), "cudnn");
  expect_same_fitted_values(k, cost::fit_fp8_to_public_rows(k), "fp8");
  expect_same_fitted_values(k, cost::fit_tp_overlap_to_async_rows(k), "async-TP slowdown");
}

TEST(FitFixedPoint, EveryBlackwellAndMi3xxFitReturnsTheDataFilesValues) {
  const auto& k = cost::builtin_constants();
  for (const char* gpu : {"b200", "gb200", "gb300"})
    expect_same_fitted_values(k, cost::fit_blackwell_gpu_to_bridge_rows(k, gpu), std::string("factor ") + gpu);
  expect_same_fitted_values(k, cost::fit_mxfp8_to_bridge_rows(k), "mxfp8");
  expect_same_fitted_values(k, cost::fit_fp4_to_bridge_rows(k), "nvfp4");
  expect_same_fitted_values(k, cost::fit_cdna4_to_mlperf_rows(k), "cdna4 factor");
}
