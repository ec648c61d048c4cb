// cli/simulate_per_stage: `strata simulate` of a per-stage strategy (stages of different widths, any schedule):
// sim::simulate_per_stage on the cost model's stage times, next to the analytical estimate (docs/simulator.md
// §Per-stage widths).
#pragma once
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

// The flags of `strata simulate` that the per-stage replay cannot honour, as given (InputError naming the first).
struct PerStageSimFlags {
  bool json = false, trace = false, full = false, iterations = false, overlap_slowdown = false;
};

// True when `s` is a per-stage strategy of unequal stages (not uniform, not cost::is_layerwise); then it has been
// simulated and printed.
bool simulate_per_stage(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                        const cost::CostOptions& opt, const PerStageSimFlags& flags);

}  // namespace strata::cli
