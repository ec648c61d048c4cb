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
};

struct ValidationReport {
  std::vector<ValidationRow> rows;
  double time_mean_abs_pct = 0, time_max_abs_pct = 0;          // Table 5
  double memory_mean_abs_pct = 0, memory_max_abs_pct = 0;      // Figure 1
  double mosaicml_mean_abs_pct = 0, mosaicml_max_abs_pct = 0;  // MosaicML tokens/s per GPU
};

ValidationReport validate_calibration(const CostConstants& constants);
nlohmann::ordered_json to_json(const ValidationReport& r);

// Fits gemm_max_efficiency, gemm_half_flops, intra_node_bw_efficiency and memory_bw_efficiency to Table 5 iteration times only
// (coordinate grid search minimising the mean absolute % error); the other constants are kept.
CostConstants fit_constants_to_table5(const CostConstants& start);

}  // namespace strata::cost
