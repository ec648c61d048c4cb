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
// Runs the search and prints it to `out`; returns the plan file's "per_stage" object and, when `found` is given,
// the per-stage plan as a candidate (label "per-stage (objective …)").
// Every --price TYPE names a GPU type of the cluster (a typo or a type the cluster lacks is an InputError listing
// the cluster's types, not a price silently unused). Run once the cluster is known, before any search.
void check_per_stage_prices(const PerStageArgs& a, const hw::Cluster& c);
// Runs the search and prints it to `out`; returns the plan file's "per_stage" object.
nlohmann::ordered_json run_per_stage(const PerStageArgs& a, const model::Model& m, const hw::Cluster& c,
                                     const plan::PlanOptions& opt, const plan::Candidate& best_uniform,
                                     std::FILE* out, plan::Candidate* found = nullptr);
// `r` with `cand` among its candidates at its rank by iteration time (best first; ties keep the earlier ones
// first): the plan file of a search that found a plan of another form (per-stage, per-layer) has the shape of every
// plan file, and its `best` is the fastest plan found.
plan::PlanResult with_candidate(plan::PlanResult r, plan::Candidate cand);

}  // namespace strata::cli
