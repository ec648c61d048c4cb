// cost/validate: runs the cost model on every measured case of the embedded calibration data
// (data/calibration/*.json, copied unchanged from the public sources) and reports predicted vs measured:
// Korthikanti et al. 2022 Table 5 iteration times (full, seqsel), Figure 1 first-stage memory (parameters +
// optimizer, activations; none and seqsel) and the MosaicML llm-foundry FSDP rows (tokens/s per GPU), the last
// reported separately. `strata validate` prints it; `--fit` re-fits the efficiency constants to Table 5.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/constants.hpp"

namespace strata::cost {

struct ValidationRow {
  std::string dataset;   // "korthikanti_table5", "korthikanti_fig1", "mosaicml"
  std::string name;      // "gpt3-175B full", "mpt-7b 8xA100-80GB", ...
  std::string metric;    // "iteration_time_s", "par_opt_gib", "activations_gib", "tokens_per_s_per_gpu"
  double predicted = 0, measured = 0;
  double error_pct = 0;  // 100·(predicted − measured)/measured
  bool fits = true;      // predicted to fit in the GPUs' memory (every row is a run that did)
  // Predicted peak memory per GPU over the GPU's capacity (throughput rows; 0 = not computed): how close to full
  // the model thinks the run was.
  double memory_fraction = 0;
};

// A measured row strata cannot express yet (e.g. context parallelism), with the reason.
struct SkippedRow {
  std::string dataset, name, reason;
};

// Errors of one calibration source on its metric, against the acceptance targets of issue 13.
struct SourceSummary {
  std::string dataset, metric;
  int rows = 0, skipped = 0, not_fit = 0;      // rows predicted not to fit although a real system ran them
  double mean_abs_pct = 0, max_abs_pct = 0;
  double target_mean_pct = 0, target_max_pct = 0;  // 0 = no target
  bool met() const {
    return (target_mean_pct <= 0 || mean_abs_pct <= target_mean_pct) &&
           (target_max_pct <= 0 || max_abs_pct <= target_max_pct) && not_fit == 0;
  }
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double time_mean_abs_pct = 0, time_max_abs_pct = 0;          // Table 5
  double memory_mean_abs_pct = 0, memory_max_abs_pct = 0;      // Figure 1
  double mosaicml_mean_abs_pct = 0, mosaicml_max_abs_pct = 0;  // MosaicML tokens/s per GPU
  std::vector<SkippedRow> skipped;
  std::vector<SourceSummary> sources;  // one per dataset, then "overall" (every throughput row)
  // Async (overlapped) TP rows against their vanilla-TP twins: predicted vs measured speedup (cost/overlap).
  std::vector<ValidationRow> async_tp_speedup;
  // Per-layer times strata measured on GPUs (data/calibration/gpu_layer_*.json; a check, never fitted), in ms.
  std::vector<ValidationRow> measured_layers;
};

ValidationReport validate_calibration(const CostConstants& constants);
nlohmann::ordered_json to_json(const ValidationReport& r);

// Fits gemm_max_efficiency, gemm_half_flops, intra_node_bw_efficiency and memory_bw_efficiency to Table 5 iteration times only
// (coordinate grid search minimising the mean absolute % error); the other constants are kept.
CostConstants fit_constants_to_table5(const CostConstants& start);
// Fits the h100-sxm entry of gpu_compute_efficiency alone to the bf16 H100 rows of the public training rows
// (grid 0.30..1.00); the other constants are kept.
CostConstants fit_h100_to_public_rows(const CostConstants& start);
// The h100-sxm-96gb-500w entry of gpu_compute_efficiency (torchtitan's 500 W Grand Teton H100) fitted to the
// torchtitan rows, the only rows on that GPU.
CostConstants fit_torchtitan_gpu_to_its_rows(const CostConstants& start);
// Fits fp8_gemm_relative_efficiency alone to the fp8 rows of the public training rows (mean absolute % error on
// their throughput metric; grid 0.30..1.50 in steps of 0.01); the other constants are kept.
CostConstants fit_fp8_to_public_rows(const CostConstants& start);
// flash1_attention_efficiency fitted to the llm-foundry rows (FlashAttention v1 stack), and
// cudnn_attention_efficiency to the NeMo long-sequence rows (cuDNN fused attention on H100).
CostConstants fit_flash1_to_foundry_rows(const CostConstants& start);
CostConstants fit_cudnn_to_nemo_rows(const CostConstants& start);
// The h100 and h200 entries of ampere_attention_gpu_efficiency (FlashAttention v1/v2 on Hopper) fitted to the
// llm-foundry H100 rows (grid 0.30..1.00).
CostConstants fit_ampere_attention_to_foundry_h100_rows(const CostConstants& start);
// eager_elementwise_efficiency fitted to the A100 llm-foundry rows (eager PyTorch element-wise ops; no H100 factor).
CostConstants fit_eager_to_foundry_a100_rows(const CostConstants& start);
// Every fit to the public rows in order (the async-TP slowdown, eager element-wise with the H100 factor, flash1,
// its Hopper factor and torchtitan's GPU factor, cudnn with fp8 and torchtitan's GPU factor, then the async-TP
// slowdown again), starting from constants already fitted to Table 5.
CostConstants fit_public_constants(const CostConstants& start);
// Issue 47 (cost/validate_blackwell.cpp): the Blackwell GPU factors (b200, gb200, gb300; b300 takes gb300's) on
// their per-tensor fp8 Megatron-Bridge rows, the MXFP8 and NVFP4 GEMM efficiencies on their rows, the CDNA 4
// factor (mi35*) on AMD's two MLPerf pre-training rows; fit_blackwell_constants alternates them (run last by
// fit_public_constants: no other fit sees these rows).
CostConstants fit_blackwell_gpu_to_bridge_rows(const CostConstants& start, const std::string& gpu);
CostConstants fit_mxfp8_to_bridge_rows(const CostConstants& start);
CostConstants fit_fp4_to_bridge_rows(const CostConstants& start);
CostConstants fit_cdna4_to_mlperf_rows(const CostConstants& start);
CostConstants fit_blackwell_constants(const CostConstants& start);
// Fits tp_async_overlap_slowdown (overlap=async) alone to the async-TP rows of the public training rows: the mean absolute % error of
// their predicted speedup over the vanilla-TP twin (grid 1.00..3.00, step 0.01); the other constants are kept.
CostConstants fit_tp_overlap_to_async_rows(const CostConstants& start);

}  // namespace strata::cost
