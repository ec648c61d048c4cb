// plan/unit_memo (internal): what keeps the search's per-configuration path free of per-device work (issue 22,
// docs/planner.md §Scale): a degree unit's pipeline cut times memoised per boundary class, the PrebuiltStages
// handed to cost::estimate (class contexts, layer costs, memoised cuts, the cluster's peak FLOP/s, no per-stage
// device lists), and the completion of such "light" candidates (placement and stage devices) once they are kept.
#pragma once
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "eval.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/stage.hpp"

namespace strata::plan::detail {

// Stage st's first earlier hw::same_topology twin (st itself when none) for the pp stages of `stage_size` devices
// of `placement` — what make_degree_unit finds (it depends on the placement and pp only, so the units of one
// (placement, pp) share it). O(devices) per distinct twin.
std::vector<int> stage_twins(const hw::Cluster& c, const std::vector<int>& placement, int pp);

// Builds the search's degree units (make_degree_unit under PlanOptions::symmetry) with what they share: the
// cluster's peak FLOP/s once, the stage twins per (placement, pp), the cut-time memo per (placement, pp, tp) —
// p2p_time reads the devices, tp and sp only, so the units that differ in cp share it. With symmetry off: plain
// make_degree_unit (the reference path).
class UnitBuilder {
 public:
  UnitBuilder(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt)
      : m_(m), c_(c), opt_(opt), peak_flops_sum_(hw::total_peak_flops(c, opt.dtype)) {}
  DegreeUnit build(const cost::Dims& d, const std::shared_ptr<const std::vector<int>>& placement,
                   const std::string& label);

 private:
  const model::Model& m_;
  const hw::Cluster& c_;
  const PlanOptions& opt_;
  double peak_flops_sum_;
  std::map<std::pair<const std::vector<int>*, int>, std::vector<int>> twins_;
  std::map<std::tuple<const std::vector<int>*, int, int>, std::shared_ptr<CutCache>> cuts_;
};

// cost::p2p_time(c, s, stage j's devices, stage j+1's devices, bytes, opt) of unit u, memoised in u.cuts per
// (boundary class, sp, bytes): the boundaries of a class are hw::same_boundary_topology twins, found once per unit
// from its stage twins (O(stages)); the rank pairs of a class are scanned once (cost/p2p_classes), then each (sp, message size) costs
// O(pair classes). Thread-safe; the value is p2p_time's.
double unit_cut_time_s(const hw::Cluster& c, const DegreeUnit& u, const cost::Strategy& s, int boundary, double bytes,
                       const cost::CostOptions& opt);
// Whether the search costs light strategies (no placement, no per-stage device lists) on this cluster: not with an
// oversubscribed CPU host, whose bound (cost/host) reads every stage's devices.
bool light_estimates(const hw::Cluster& c);
// The PrebuiltStages of strategy `s` on unit `u` (they refer to c, u, s and opt, which must outlive the estimate).
// With `light`, the estimate leaves the per-stage device lists empty and does not read s.placement.
cost::PrebuiltStages unit_prebuilt(const hw::Cluster& c, const DegreeUnit& u, const cost::Strategy& s,
                                   const cost::CostOptions& opt, std::span<const std::vector<cost::LayerStageCost>> shape,
                                   std::span<const int> shape_of, bool light);
// Completes a light strategy and its estimate from the unit's placement: s.placement = placement and every stage's
// devices = its dp·cp·tp slice (what estimate() would have filled). No-op for a complete strategy.
void complete_light(const std::vector<int>& placement, cost::Strategy& s, cost::Estimate& e);

}  // namespace strata::plan::detail
