// cost/validate_internal: the per-source row builders of cost/validate shared between validate.cpp (Korthikanti,
// MosaicML) and validate_public.cpp (the public training rows). Not a public header.
#pragma once
#include <string>
#include <vector>

#include "strata/cost/constants.hpp"
#include "strata/cost/validate.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::cost::detail {

// One row per measured run of data/calibration/public_training_rows.json that strata can express (rows without a
// published parallel layout go to `skipped` with the reason), dataset = the row's source name ("llm-foundry",
// "megatron-bridge", "nemo-long-seq", "torchtitan"), metric = the source's published throughput metric.
// Filters for fitting: `only_dtype` (non-empty) keeps the rows of that precision ("fp8"), `gpu_contains` the rows
// whose published GPU type contains it ("H100"). Rows measured with asynchronous TP (torchtitan "async TP") are
// costed with overlap=async under dataset "<source> async-TP"; with `async_tp_speedups`, each one's predicted and
// measured speedup over the "vanilla TP" row before it is added there.
// The fused attention kernel that the stack of a calibration source ran (validate_public.cpp).
model::AttentionKernel attention_of_source(const std::string& source);

void public_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                 std::vector<SkippedRow>& skipped, const std::string& only_dtype = {},
                 const std::string& gpu_contains = {},
                 std::vector<ValidationRow>* async_tp_speedups = nullptr, const std::string& source_only = {});

double pct_error(double predicted, double measured);

// Per-layer forward/backward (and projection-GEMM) times measured on GPUs by scripts/gpu_layer_profile.py
// (data/calibration/gpu_layer_*.json) against layer_stage_cost's compute of the same shard, in ms
// (validate_layers.cpp). Never fitted.
void measured_layer_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out);

// The eager stack's saved-tensor closed forms against data/calibration/saved_tensors_cpu.json (torch 1.13, CPU;
// validate_saved.cpp): one row per module or block, metric saved_bytes, dataset kSavedTensorsDataset (a memory
// source: target ≤ 5 % mean, not part of the throughput overall). Never fitted.
inline constexpr const char* kSavedTensorsDataset = "PyTorch saved tensors (CPU)";
void saved_tensor_rows(std::vector<ValidationRow>& out);

// Whole models trained on one H100 by a plain PyTorch loop (scripts/gpu_train_probe.py;
// data/calibration/gpu_train_h100-sxm.json) against estimate() on the pytorch engine's stack (validate_train.cpp):
// peak allocated GiB (a memory source: target ≤ 5 % mean) and step time in ms (target ≤ 10 % mean); neither is
// part of the throughput overall. Runs that ran out of memory go to `skipped`, saying whether strata agrees.
inline constexpr const char* kTrainMemoryDataset = "PyTorch training H100 (memory)";
inline constexpr const char* kTrainTimeDataset = "PyTorch training H100 (time)";
// The same loop on one H200 with gradient accumulation 1-8, torch.compile, fp32 and both sides of the memory limit
// (data/calibration/gpu_train_h200_accum.json, issue 50 item 5); same targets.
inline constexpr const char* kTrainH200MemoryDataset = "PyTorch training H200 accum (memory)";
inline constexpr const char* kTrainH200TimeDataset = "PyTorch training H200 accum (time)";
inline bool is_probe_memory(const std::string& d) { return d == kTrainMemoryDataset || d == kTrainH200MemoryDataset; }
inline bool is_probe_time(const std::string& d) { return d == kTrainTimeDataset || d == kTrainH200TimeDataset; }
void train_probe_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                      std::vector<SkippedRow>& skipped);

// Dense Llama pre-training on Blackwell (Megatron-Bridge performance summaries, data/calibration/
// megatron_bridge_perf.json: B200, B300, GB200, GB300 in fp8, mxfp8 and nvfp4) and on MI350X/MI355X (AMD's MLPerf
// Training v5.1 results, data/calibration/amd_training_rows.json), tokens/s per GPU (validate_blackwell.cpp).
inline constexpr const char* kBlackwellDataset = "megatron-bridge blackwell";
inline constexpr const char* kAmdDataset = "amd mlperf";
// Filters of the fits: GPU name prefix ("gb200", "mi35"), precision ("fp8" = per-tensor FP8, "mxfp8", "nvfp4").
struct RowFilter {
  std::string gpu;
  std::string precision;
};
void blackwell_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                    std::vector<SkippedRow>& skipped, const RowFilter& filter = {});
// Mean absolute % error of the rows that pass `filter`.
double blackwell_error(const CostConstants& k, const hw::Catalog& catalog, const RowFilter& filter);

}  // namespace strata::cost::detail
