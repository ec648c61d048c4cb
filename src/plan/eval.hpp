// plan/eval (internal): the shared work of the search — distinct layer shapes, per-(dp, tp, pp, placement) stage
// contexts grouped into device classes, per-variant layer costs, the split problem built from the cost model's
// stage functions, and the evaluation of one configuration (the lower bounds: plan/bounds).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <string>
#include <vector>

#include "strata/cost/p2p_classes.hpp"
#include "strata/cost/stage.hpp"
#include "strata/plan/search.hpp"
#include "strata/plan/split.hpp"

namespace strata::plan::detail {


struct LayerIndex {
  std::vector<int> shape_of;       // layer → distinct shape id
  std::vector<int> representative; // shape id → first layer with that shape
  std::vector<int> shape_count;    // shape id → number of layers with that shape
  std::vector<char> is_embedding;  // layer is an embedding / patch embedding (StageSums::add's flag)
  model::SampleFlops flops;        // model::sample_flops, handed to every cost::estimate of the search
};
LayerIndex index_layers(const model::Model& m);

// The devices of every stage of a unit as views into its (shared) placement: stage j's dp·tp devices in rank
// order are placement[j·dp·tp, (j+1)·dp·tp) (r = (stage·dp + dp_rank)·tp + tp_rank), so no per-stage copy.
struct StageDevices {
  const std::vector<int>* placement = nullptr;
  int per_stage = 0, stages = 0;
  std::span<const int> operator[](int j) const {
    return {placement->data() + static_cast<std::size_t>(j) * per_stage, static_cast<std::size_t>(per_stage)};
  }
  std::size_t size() const { return static_cast<std::size_t>(stages); }
};

// One (dp, tp, pp, placement): stage devices, and the stage contexts deduplicated into classes (stages whose
// context numbers are identical cost every layer identically). Symmetry: a stage whose devices are a translation
// of an earlier stage's (hw::same_topology) takes that stage's context without building it, so a uniform
// pipeline builds one context; contexts keep no device list (class_ctx[k].devices is empty).
struct DegreeUnit {
  int dp = 1, tp = 1, pp = 1;
  bool fixed_split = false;  // the engine partitions layers itself (EngineProfile::uneven_split false): default split
  std::string placement_label;
  cost::Strategy proto;                         // degrees, gbs, dtype (the placement is `placement`, shared)
  std::shared_ptr<const std::vector<int>> placement;  // dp·tp·pp devices, shared by units with equal placements
  StageDevices stage_devices;                   // [stage] dp·cp·tp devices in rank order (views into `placement`)
  std::vector<cost::StageContext> class_ctx;    // [class]
  std::vector<int> stage_class;                 // [stage]
  // [stage] the first stage it is a hw::same_topology twin of (itself when none; an equivalence: translations
  // compose), so boundary twins need no device scan (plan/unit_memo). Reference path: every stage its own.
  std::vector<int> stage_twin;
  double peak_flops_sum = -1;  // hw::total_peak_flops(c, dtype), once per search (< 0: estimate computes it)
  // p2p times of cuts, memoised per (stage pair, sp, bytes): p2p_time scans the stage's devices.
  std::shared_ptr<struct CutCache> cuts;
  // Exact splits memoised per problem content (configurations of this unit that build the same problem).
  std::shared_ptr<SplitMemo> splits;
};
struct CutCache {
  // The cut memo (plan/unit_memo.hpp unit_cut_time_s): keyed by boundary class (not stage pair), shared by the
  // units of one (placement, pp, tp).
  std::mutex mu;
  std::map<std::tuple<int, bool, double>, double> s;
  std::map<int, cost::P2pClasses> pairs;  // boundary class → its scanned rank-pair classes (cost/p2p_classes)
  std::once_flag classes_once;
  std::vector<int> boundary_class;  // [boundary] its first hw::same_boundary_topology twin (itself if none)
};
DegreeUnit make_degree_unit(const model::Model& m, const hw::Cluster& c, const cost::Dims& d,
                            std::vector<int> placement, std::string label, std::int64_t gbs, hw::Dtype dtype,
                            const cost::CostOptions& opt);
// reuse_twins = false builds every stage's context (the per-device reference path of PlanOptions::symmetry).
// `stage_twins` (optional, with reuse_twins): the stages' first same_topology twins, which depend on the placement
// and pp only (plan/unit_memo stage_twins, shared by the units of one (placement, pp)); nullptr = tested here.
DegreeUnit make_degree_unit(const model::Model& m, const hw::Cluster& c, const cost::Dims& d,
                            std::shared_ptr<const std::vector<int>> placement, std::string label, std::int64_t gbs,
                            hw::Dtype dtype, const cost::CostOptions& opt, bool reuse_twins = true,
                            const std::vector<int>* stage_twins = nullptr);

// The knobs below the degrees.
struct Variant {
  std::int64_t mbs = 1;
  model::Recompute recompute = model::Recompute::none;
  bool sp = false;
  int zero = 0;
  bool overlap = false;  // Oases overlapped TP (cost::Strategy::tp_overlap)
};
struct ScheduleChoice {
  cost::Schedule schedule = cost::Schedule::one_f_one_b;
  int v = 1;
};

cost::Strategy make_strategy(const DegreeUnit& u, const Variant& var, const ScheduleChoice& sc);
// The same without the placement (for the per-layer costs and bounds, which do not read it; avoids copying it).
cost::Strategy make_strategy_light(const DegreeUnit& u, const Variant& var, const ScheduleChoice& sc);

// Per-class costs of every distinct layer shape under one strategy (contexts re-pointed at `s`).
struct ClassCosts {
  std::vector<cost::StageContext> ctx;                       // [class], strategy = &s
  std::span<const std::vector<cost::LayerStageCost>> shape;  // [class][shape]: `own`, or rows cached by the caller
  std::vector<std::vector<cost::LayerStageCost>> own;        // the rows class_costs computed
  ClassCosts() = default;
  ClassCosts(ClassCosts&&) = default;  // a moved vector keeps its buffer, so `shape` stays valid
  ClassCosts& operator=(ClassCosts&&) = default;
  ClassCosts(const ClassCosts&) = delete;  // a copy's `shape` would point into the original
  ClassCosts& operator=(const ClassCosts&) = delete;
};
ClassCosts class_costs(const model::Model& m, const LayerIndex& li, const DegreeUnit& u, const cost::Strategy& s);
// The same memoised across the units of one search: a class whose context numbers (the ones layer costs read,
// devices excluded) and whose strategy's degrees and knobs equal an earlier class's costs every layer identically
// (e.g. the same stage hardware under two placements of one (dp, tp, pp)), so its row is copied, not recomputed.
struct LayerCostMemo {
  struct Hash {
    std::size_t operator()(const std::vector<double>& key) const;
  };
  // Classes recur within one (dp, tp, pp, cp)'s placements, which are enumerated one after another (the degrees
  // are part of the key): the memo holds one such group, emptied when the next begins or when full (results never
  // depend on what it holds).
  static constexpr std::size_t kMaxRows = 4096;
  std::array<int, 4> group{-1, -1, -1, -1};  // (dp, tp, pp, cp) of the rows held
  std::mutex mu;
  std::unordered_map<std::vector<double>, std::vector<cost::LayerStageCost>, Hash> rows;  // context + strategy
};
ClassCosts class_costs(const model::Model& m, const LayerIndex& li, const DegreeUnit& u, const cost::Strategy& s,
                       LayerCostMemo& memo);


// Builds the exact split problem of strategy s on unit u (gpipe/1f1b/pipedream/2bw).
SplitProblem build_split_problem(const model::Model& m, const hw::Cluster& c, const LayerIndex& li,
                                 const DegreeUnit& u, const cost::Strategy& s, const ClassCosts& cc,
                                 const cost::CostOptions& opt);
// The same into `p`, reusing its storage (evaluate keeps one problem per thread: no allocation per configuration).
void build_split_problem(const model::Model& m, const hw::Cluster& c, const LayerIndex& li, const DegreeUnit& u,
                         const cost::Strategy& s, const ClassCosts& cc, const cost::CostOptions& opt, SplitProblem& p);

struct EvalResult {
  bool ok = false;
  Candidate cand;
  std::string reject_reason;   // when !ok
  std::int64_t bounds_tried = 0;
  bool split_solved = false;
  bool estimated = false;
};
// Split (exact DP, or Megatron's for interleaved) + cost::estimate of one configuration.
EvalResult evaluate(const model::Model& m, const hw::Cluster& c, const LayerIndex& li, const DegreeUnit& u,
                    const Variant& var, const ScheduleChoice& sc, const cost::CostOptions& opt);
// The same with the variant's per-class shape costs already computed (ClassCosts::shape of class_costs under any
// schedule of the variant: layer costs do not read the schedule), so a variant's schedules cost its layers once.
EvalResult evaluate(const model::Model& m, const hw::Cluster& c, const LayerIndex& li, const DegreeUnit& u,
                    const Variant& var, const ScheduleChoice& sc, const cost::CostOptions& opt,
                    const std::vector<std::vector<cost::LayerStageCost>>* shape_costs, bool reference = false);
// (reference = true: the estimate builds its own contexts and layer costs, PlanOptions::symmetry = false.)

}  // namespace strata::plan::detail
