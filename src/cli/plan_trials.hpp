// cli/plan_trials: `strata plan --trials K` — AMP's Algorithm 1 last step: run the top-K predicted plans for real
// (short runs on local processes, libtorch + Gloo) and re-rank them by measured iteration time.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "strata/hw/cluster.hpp"
#include "strata/plan/search.hpp"

namespace strata::cli {

// Runs min(k, |top|) plans for `steps` steps each (`strata-exec run --model model_spec` on as many local
// processes as `c` has devices), prints predicted vs measured and the re-ranked best, and returns the rows as JSON
// (for the plan file's "trials"). A plan the runtime cannot run is reported, not fatal.
nlohmann::ordered_json run_plan_trials(const std::string& model_spec, const hw::Cluster& c,
                                       const plan::PlanResult& r, int k, int steps, double timeout_s);

}  // namespace strata::cli
