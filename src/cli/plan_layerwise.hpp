// cli/plan_layerwise: `strata plan --layerwise` (Galvatron-BMW per-layer search) and `strata plan --gbs auto` —
// the flag parsers they add and the run that prints the per-layer plan next to the best uniform plan.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::cli {

// --gbs: a positive integer, or "auto" (returns 0). InputError naming the flag otherwise.
std::int64_t parse_gbs_flag(const std::string& text, const std::string& flag);
// --memory-budget: GiB > 0 (e.g. "8" or "12.5"), returned in bytes. InputError naming the flag otherwise.
double parse_memory_budget(const std::string& text, const std::string& flag);

// A strategy for the terminal: to_cli_string without the default placement; a placement of more than 64 devices
// is left out of the string and follows on a line of its own, compactly (plan::placement_ranges), never one id per
// device (a 98,304-GPU plan's `place=` is 600 KB).
std::string best_strategy_text(const hw::Cluster& c, cost::Strategy s);

// The output flags every search of `strata plan` honours (plan_layerwise.cpp write_plan_outputs).
struct PlanOutputs {
  std::string json_file;                 // --json: the plan file ('-' = stdout)
  std::string report_file;               // --report
  std::string export_engine, compare_to;  // --export, --compare-to
  std::string model_spec, cluster_spec;  // --model / --cluster as given: trials run the model; the plan file embeds
                                         // the definitions of files (plan_source.hpp)
  int trials = 0, trial_steps = 4;       // --trials, --trial-steps
  double trial_timeout_s = 120;          // --trial-timeout
};

// After a search: --compare-to, --export (`closest`: an unexpressible best plan is exported as its nearest
// expressible one, with both times), --trials, then the plan file (plan::plan_file_text with `extra`, the input
// definitions and the trials appended) and the report of that same plan file.
void write_plan_outputs(const PlanOutputs& o, const plan::PlanResult& r, const model::Model& m, const hw::Cluster& c,
                        const plan::PlanOptions& opt, nlohmann::ordered_json extra, bool closest);

struct LayerwiseRun {
  bool layerwise = false;   // run the per-layer search (else only the uniform planner over --gbs auto)
  bool explain = false;
  PlanOutputs out;
};
// Runs the searches with `opt` (opt.global_batch = 0: auto), prints the table (per-layer plan, best uniform plan,
// speedup) and the per-layer choices, and writes the outputs as every search does: the plan file's `best` is the
// faster of the two, `candidates` the per-layer plan and the uniform top-K, plus "search": "layerwise",
// "layer_choices" and "uniform_best". Which flags apply (--placement other than hetero does not: the per-layer
// search lays stages out on consecutive devices) is plan_flags.cpp's table, checked before.
void run_plan_layerwise(const LayerwiseRun& run, const model::Model& m, const hw::Cluster& c,
                        const plan::PlanOptions& opt);

}  // namespace strata::cli
