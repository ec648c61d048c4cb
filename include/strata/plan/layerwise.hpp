// plan/layerwise: the Galvatron-BMW search (seed_001 §3, Algorithms 1–3; notes_001 §2–5) — per-layer strategies
// inside each pipeline stage chosen by a dynamic programme over (layer, memory budget, previous layout), stage
// ranges from the memory-balanced split moved towards time balance (BMW) and re-solved with strata's exact split,
// over pipeline degrees, micro-batch sizes and (--gbs auto) global batch sizes. docs/planner.md §Per-layer.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {

// ---- the search space (seed_001 §3.2 "decision trees") -------------------------------------------------------
// One of Galvatron's decision trees over a device group: levels from the innermost (fastest links) outwards, each
// a paradigm 'd' (DP), 't' (TP) or 's' (SDP) with a power-of-2 degree ≥ 2, no paradigm twice, degrees multiplying
// to the group size (the group of 1 device has one empty tree).
struct DecisionTree {
  std::vector<std::pair<char, int>> levels;
};
// Every tree over `group` devices (group a power of 2); allow_dp_sdp_mix = false drops trees that hold both DP and
// SDP (Takeaway #3: "using SDP is always better than integrating DP and SDP").
std::vector<DecisionTree> decision_trees(int group, bool allow_dp_sdp_mix);
// The LayerChoice of a tree (recompute none), nullopt for DP+SDP mixes (strata's LayerChoice has one data-parallel
// kind per layer). TP inside (the first level) = consecutive tp groups; TP outside a data-parallel level = strided.
std::optional<cost::LayerChoice> choice_of_tree(const DecisionTree& t, int group);

struct LayerSpaceOptions {
  bool sdp = true;          // SDP (ZeRO-3) layers
  bool ckpt = true;         // recompute=full layers (Galvatron's CKPT)
  bool selective = false;   // also recompute=selective layers (strata's extension; the planner's default space)
  bool tp = true;           // tp > 1
  bool strided = true;      // strided tp groups
  int max_tp = 0;           // 0 = the group
};
// strata's per-layer candidates for a group of `group` devices: the trees without DP+SDP mixes, × CKPT on/off,
// restricted by `o` and to tp degrees every layer of `m` accepts (model::tensor_parallel_problem). 22 / 44 over
// the pipeline degrees of 8 GPUs (docs/planner.md).
std::vector<cost::LayerChoice> layer_choice_space(const model::Model& m, int group, const LayerSpaceOptions& o);

// ---- the per-stage dynamic programme (seed_001 Eq. 4, with the previous layer's layout in the state) -----------
// Pure integer problem: layer l under choice s takes time_ps[l][s] (≥ kInfinitePs = unusable) and mem_units[l][s]
// of the stage's budget; a layer whose layout differs from the previous layer's pays trans_ps[l][a·layouts + b]
// (a = previous layout, b = this one). Minimise Σ time + Σ trans subject to Σ mem ≤ budget_units.
struct StageDpProblem {
  int layers = 0, choices = 0, layouts = 0;
  std::vector<int> layout_of;                       // [choice]
  std::vector<std::vector<std::int64_t>> time_ps;   // [layer][choice]
  std::vector<std::vector<int>> mem_units;          // [layer][choice], ≥ 0
  std::vector<std::vector<std::int64_t>> trans_ps;  // [layer][a·layouts + b]; layer 0 unused
  int budget_units = 0;
};
struct StageDpResult {
  bool feasible = false;
  std::int64_t time_ps = 0;
  int mem_units = 0;
  std::vector<int> choice;  // [layer]; ties: the smallest memory, then the first choices in index order
};
// O(layers · budget · (choices + layouts²)).
StageDpResult solve_stage_dp(const StageDpProblem& p);
// Every assignment (tests: choices^layers ≤ a few million).
StageDpResult brute_force_stage_dp(const StageDpProblem& p);

// ---- the search ------------------------------------------------------------------------------------------------
struct LayerwiseOptions {
  std::int64_t global_batch = 0;   // 0 = auto: sweep (auto_batch_sizes) and keep the largest throughput
  std::int64_t max_global_batch = 4096;  // auto sweep upper end
  // Micro-batches per pipeline at most (0 = no cap with a given gbs; with --gbs auto 2·pp, 1 without pipelining:
  // Galvatron accumulates gradients only over the pipeline's micro-batches, so a larger batch has to fit memory).
  std::int64_t max_micro_batches = 0;
  LayerSpaceOptions space{.selective = true};
  int max_pp = 0;                  // 0 = no limit (powers of 2 up to the devices and the layers)
  int min_pp = 1;
  int memory_units = 256;          // DP budget resolution per stage
  hw::Dtype dtype = hw::Dtype::bf16;
  cost::CostOptions cost;          // profile, constants, headroom, memory budget
  bool zero2 = true;               // also try ZeRO-2 for the plain-DP layers (optimizer states + gradients sharded)
  bool bmw = true;                 // move stage boundaries towards time balance (else the memory-balanced split)
};
struct LayerwisePlan {
  bool found = false;
  cost::Strategy strategy;         // complete per-stage strategy with layer choices (or uniform if they collapse)
  cost::Estimate estimate;
  std::int64_t configs = 0;        // (gbs, pp, mbs) configurations searched
  std::int64_t dp_runs = 0;        // stage DPs solved
  double search_time_s = 0;
};
// Global batch sizes --gbs auto tries: multiples of 8 on a ×1.25-ish grid (8, 16, 24, 32, 40, 48, 64, 80, …).
std::vector<std::int64_t> auto_batch_sizes(std::int64_t max_gbs);
// The best per-layer plan (largest samples/s) or found = false when nothing fits.
LayerwisePlan plan_layerwise(const model::Model& m, const hw::Cluster& c, const LayerwiseOptions& opt);
// --gbs auto for the uniform planner: plan() over auto_batch_sizes(max_gbs) with the same micro-batch cap
// (opt.max_micro_batches = 0 becomes the auto cap), keeping the largest samples/s; stops after two batch sizes in a
// row where nothing fits. nullopt when none fits.
std::optional<PlanResult> plan_auto_gbs(const model::Model& m, const hw::Cluster& c, PlanOptions opt,
                                        std::int64_t max_gbs = 4096);
// The per-layer choices of a plan, one line per stage, runs merged ("stage 0 (layers 0-12): tp1.sdp*3 + …").
std::vector<std::string> describe_layer_choices(const cost::Strategy& s);

}  // namespace strata::plan
