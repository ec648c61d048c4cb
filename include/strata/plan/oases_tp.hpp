// plan/oases_tp: Oases' per-block tensor-parallel degree (seed_002 §4, notes_002 §4): every layer of the chain
// gets its own tp ∈ powers of two (dp = N/tp, no pipeline), adjacent layers with different degrees pay a
// batch-dimension all-gather (forward when tp grows, backward when it shrinks) plus the overlap it breaks, and the
// whole plan must fit the device memory. The chain is solved exactly by a DP over (layer, degree, memory bin)
// (notes_002 §4.6: a chain needs no ILP). Per-layer costs come from cost::layer_stage_cost (overlap-aware).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::plan {

struct OasesTpOptions {
  std::int64_t global_batch = 0;        // B; the micro-batch of a tp group is B·tp/N / micro_batches
  std::int64_t micro_batches = 1;       // gradient-accumulation steps (Oases: 1)
  std::vector<int> degrees;             // candidate tp; empty = powers of two ≤ N the model allows
  bool overlap = true;                  // Oases' overlapped TP schedule (cost::Strategy::tp_overlap)
  model::Recompute recompute = model::Recompute::oases;
  hw::Dtype dtype = hw::Dtype::fp16;
  cost::CostOptions cost;
  int memory_bins = 2000;               // memory discretisation of the DP (each layer rounded up: conservative)
};

struct OasesTpPlan {
  bool found = false;
  std::vector<int> layer_tp;            // one degree per layer of the chain (embedding and head included)
  std::vector<int> block_tp;            // the same restricted to transformer-type blocks (Oases' Table 6 form)
  double time_s = 0;                    // Σ per-layer fwd+bwd (× micro-batches) + resharding, one iteration
  double memory_bytes = 0;              // Σ per-layer static + activation bytes + workspace + largest recompute
  double memory_limit_bytes = 0;        // the devices' usable memory
  struct Uniform {
    int tp = 0;
    bool fits = false;
    double time_s = 0, memory_bytes = 0;
  };
  std::vector<Uniform> uniform;         // each candidate degree for every layer (same objective, no resharding)
  std::string note;                     // why nothing fits, which degrees were dropped
};

// The plan minimising the objective subject to memory. InputError on bad options (gbs < 1, no degree usable).
OasesTpPlan oases_block_tp(const model::Model& m, const hw::Cluster& c, const OasesTpOptions& opt);
// Oases' Table 3 ablation under the cost model, all with the same objective (Σ layers + resharding, one
// iteration; DP gradient sync and the optimizer step left out as in Oases' planner, notes_002 §6):
//   megatron: the best uniform tp with blocking TP and layer recompute (full) — Oases' baseline, whose
//             schedule (Fig. 3a) recomputes every layer, as foundation-model training needs;
//   megatron_no_recompute: the same without recompute where it fits (not in the paper; for reference);
//   uniform:  the best uniform tp with overlap=on, recompute=oases ("w/o planner");
//   planned:  oases_block_tp ("w/ planner").
struct OasesAblation {
  OasesTpPlan::Uniform megatron, megatron_no_recompute, uniform;
  OasesTpPlan planned;
};
OasesAblation oases_ablation(const model::Model& m, const hw::Cluster& c, OasesTpOptions opt);

// The chain DP itself (oases_block_tp's solver, exposed for tests): node[i][j] = time of layer i at degree j,
// mem[i][j] its memory in bins, edge[i][a][j] = resharding into layer i (i ≥ 1) from degree a to degree j; the
// least Σ node + Σ edge with Σ mem ≤ bins, O(L·K²·bins). `choice` (degree index per layer) is empty when
// nothing fits.
struct ChainResult {
  std::vector<int> choice;
  double time_s = 0;
};
ChainResult solve_tp_chain(const std::vector<std::vector<double>>& node, const std::vector<std::vector<int>>& mem,
                           const std::vector<std::vector<std::vector<double>>>& edge, int bins);

// "[2]*8 + [4]*16" (runs of equal degrees, Oases' Table 6 notation).
std::string tp_runs(const std::vector<int>& tp);

}  // namespace strata::plan
