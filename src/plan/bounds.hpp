// plan/bounds (internal): the search's lower bounds on a configuration's iteration time and its memory pre-check,
// from a variant's per-class layer costs (docs/planner.md §Search). Every bound holds for every split and
// placement the search could choose; tests/plan/test_bounds and Search.PrunedSearchEqualsExhaustiveEvaluation
// check them against brute force and against the estimate.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "eval.hpp"

namespace strata::plan::detail {

// Σ over layers of the cheapest class's fwd+bwd time (a lower bound on Σ_i t_i of any split and placement of
// this unit's classes).
double min_work_s(const LayerIndex& li, const ClassCosts& cc);
// Totals over layers of the cheapest class's weight / gradient / optimizer bytes per device.
struct StaticTotals {
  double weight = 0, grad = 0, optimizer = 0;
  // A lower bound on max_j (DP sync + optimizer step) of any split: cost::stage_sync_lower_bound_s at 1/p of the
  // cheapest class's parameters and the class's whole backward as the window, least over the unit's classes.
  double sync_s = 0;
};
StaticTotals static_totals(const LayerIndex& li, const ClassCosts& cc);
// False when no split can fit: the stage with the most static state holds ≥ 1/p of every component (their
// per-layer ratios are the same constants for every layer), so its stage_memory with no activations already
// exceeds the largest capacity of the unit's classes. `s` carries the schedule/ZeRO/pp of the configuration.
bool may_fit_memory(const StaticTotals& st, const DegreeUnit& u, const cost::Strategy& s);
// Each stage's speed 1/ρ_c(j), where ρ_c is the smallest ratio, over layers, of class c's time to the cheapest
// class's time (≥ 1; speed 1 where the class is unknown). A stage of class c that takes t holds layers whose
// cheapest-class time is at most t/ρ_c, so max_j t_j ≥ min_work / P with P = Σ_j 1/ρ_c(j), the effective number
// of stages (pp when every stage is of one class or the classes cost the layers alike).
std::vector<double> stage_speeds(const LayerIndex& li, const ClassCosts& cc, const DegreeUnit& u);
// The largest cheapest-class time of a single layer: some stage holds that layer, so max_j t_j is at least this.
double max_layer_s(const LayerIndex& li, const ClassCosts& cc);
// A lower bound on gpipe's / 1F1B's (m−1)·max_j t_j + Σ_j t_j for stages of unequal speed (1/ρ) and
// max_j t_j ≥ max_layer: the least over T ∈ {max_layer} ∪ {T_q = min_work / (sum of the q largest speeds) ≥
// max_layer} of (m−1)·T + the least Σ_j t_j within T (derivation at the definition). Never below the plain
// bound's pipeline part, equal to it when the speeds are equal and max_layer ≤ min_work / p.
double flow_shop_bound_s(double min_work, std::vector<double> speeds, std::int64_t m, double max_layer = 0);
// A valid lower bound on cost::estimate's iteration time for schedule `sc` given min_work_s and the effective
// number of stages P = Σ stage_speeds (≤ pp; pp gives the class-blind bound), plus a lower bound on the stages'
// largest sync.
double lower_bound_s(double min_work, double stages, std::int64_t m, const ScheduleChoice& sc, double sync_s = 0);

// Per-class prefix sums over the layer chain of a variant's cached layer costs ([class][shape] rows): stage
// time (fwd + bwd), backward and parameters per device — what fixed_split_bound_s reads. Index k·(L+1) + i.
struct StagePrefix {
  int layers = 0, classes = 0;
  std::vector<double> time, bwd, params;
  void build(const LayerIndex& li, std::span<const std::vector<cost::LayerStageCost>> rows);
};
// A tighter valid lower bound for a configuration whose split the search does not choose (interleaved: Megatron's
// default split; pp = 1): each stage's time t_j, DP sync and optimizer step follow from the variant's layer costs
// (`x`), so the bound is cost::iteration_time with every p2p time zero (each schedule's time is non-decreasing in
// its link times; the host-CPU bound only raises the estimate). `s`: the configuration with its split set; `ctx`:
// the variant's class contexts (the sync reads the strategy's dp and ZeRO stage, not its schedule). Returns a
// negative value when the cached rows do not cover the configuration (per-layer recompute choices).
double fixed_split_bound_s(const DegreeUnit& u, const cost::Strategy& s, const StagePrefix& x,
                           std::span<const cost::StageContext> ctx);

// Phase A of the search for one variant (unit + mbs, ZeRO, recompute, sp): what its configurations' bounds and
// memory pre-check read, computed once from its class costs `cc` and shared by all its schedules.
struct VariantBounds {
  double min_work = 0;   // min_work_s
  double stages = 0;     // Σ stage_speeds (the effective number of stages)
  double flow_shop = 0;  // flow_shop_bound_s with the costliest layer (gpipe / 1F1B)
  StaticTotals statics;  // static_totals (weights, gradients, optimizer state, sync floor)
};
VariantBounds variant_bounds(const LayerIndex& li, const ClassCosts& cc, const DegreeUnit& u, std::int64_t micro);

}  // namespace strata::plan::detail
