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
void train_probe_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                      std::vector<SkippedRow>& skipped);

}  // namespace strata::cost::detail
