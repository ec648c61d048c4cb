// cli/plan_per_stage: `strata plan --per-stage` — the per-stage search (plan/stage_search, issue 14) run next to
// the uniform search, printed with its stages, idle devices, price and its gain over the best uniform plan.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "strata/plan/search.hpp"

namespace strata::cli {

struct PerStageArgs {
  bool enabled = false;
  std::string objective = "fastest", schedule = "1f1b";
  double budget_usd_per_hour = 0;
  std::vector<std::string> prices;  // TYPE=USD_PER_HOUR
};
void add_per_stage_options(CLI::App* cmd, PerStageArgs& a);
// Checks the flags (InputError naming the flag) before any search runs.
void check_per_stage_args(const PerStageArgs& a);
// Every --price TYPE names a GPU type of the cluster (a typo or a type the cluster lacks is an InputError listing
// the cluster's types, not a price silently unused). Run once the cluster is known, before any search.
void check_per_stage_prices(const PerStageArgs& a, const hw::Cluster& c);
// Runs the search and prints it to `out`; returns the plan file's "per_stage" object.
nlohmann::ordered_json run_per_stage(const PerStageArgs& a, const model::Model& m, const hw::Cluster& c,
                                     const plan::PlanOptions& opt, const plan::Candidate& best_uniform,
                                     std::FILE* out);

}  // namespace strata::cli
