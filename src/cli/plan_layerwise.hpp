// cli/plan_layerwise: `strata plan --layerwise` (Galvatron-BMW per-layer search) and `strata plan --gbs auto` —
// the flag parsers they add and the run that prints the per-layer plan next to the best uniform plan.
#pragma once
#include <cstdint>
#include <string>

#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::cli {

// --gbs: a positive integer, or "auto" (returns 0). InputError naming the flag otherwise.
std::int64_t parse_gbs_flag(const std::string& text, const std::string& flag);
// --memory-budget: GiB > 0 (e.g. "8" or "12.5"), returned in bytes. InputError naming the flag otherwise.
double parse_memory_budget(const std::string& text, const std::string& flag);

struct LayerwiseRun {
  bool layerwise = false;   // run the per-layer search (else only the uniform planner over --gbs auto)
  std::string json_file;    // plan file ('-' = stdout)
  bool explain = false;
};
// Runs the searches with `opt` (opt.global_batch = 0: auto), prints the table (per-layer plan, best uniform plan,
// speedup) and the per-layer choices, writes {"best": {"strategy", "estimate", "cli"}, "layer_choices",
// "uniform_best"} to the plan file.
void run_plan_layerwise(const LayerwiseRun& run, const model::Model& m, const hw::Cluster& c,
                        const plan::PlanOptions& opt);

}  // namespace strata::cli
