// cli/simulate_per_stage: `strata simulate` of a per-stage PipeDream strategy (stages of different widths):
// sim::simulate_replicated on the cost model's stage times, next to the analytical steady state (issue 14).
#pragma once
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

// True when `s` is a per-stage strategy this path simulates (schedule pipedream); then it has printed the result.
bool simulate_per_stage(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                        const cost::CostOptions& opt, bool json, bool trace_requested);

}  // namespace strata::cli
