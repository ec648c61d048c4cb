// cli/plan_flags: the flags of `strata plan`, which of its five searches runs, and the one table of which flag
// applies to which search (plan_flags.cpp), checked before any search.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "plan_per_stage.hpp"

namespace strata::cli {

struct PlanArgs {
  std::string model, cluster, space = "full", placement = "hetero", json_file, profile, dtype = "bf16", memory_headroom,
      report_file, elementwise = "fused", fp8_cast = "fused", optim = "fused";
  std::string objective = "margin";    // --objective: margin (safest within 2 % of the fastest) or fastest
  bool earlystop = false;              // --earlystop: full recompute as PyTorch's non-reentrant checkpoint
  bool memory_headroom_given = false;  // set even for an empty value (rejected)
  std::int64_t gbs = 0;                // 0 = --gbs auto
  std::string gbs_text, memory_budget;  // --gbs (integer or auto), --memory-budget GIB
  bool layerwise = false;              // --layerwise: Galvatron-BMW per-layer search (plan_layerwise.cpp)
  std::optional<std::int64_t> seq;
  int top = 5, threads = 1, max_tp = 0, max_pp = 0;
  int trials = 0, trial_steps = 4;
  double trial_timeout_s = 120;
  bool explain = false;
  bool oases_blocks = false;              // --oases-blocks (plan_oases.cpp)
  std::string export_engine, compare_to;  // --export, --compare-to (cmd_export.cpp)
  PerStageArgs per_stage;                 // --per-stage and its options (plan_per_stage.cpp)
  std::string engine;                     // --engine (engine_flag.cpp)
  std::vector<std::string> given;         // the flags on the command line ("--top", ...), from CLI11 (given_flags)
};

// The searches of `strata plan`, one bit each (the table's masks).
enum class PlanSearch : unsigned {
  uniform = 1,       // the strategy search (default)
  per_stage = 2,     // --per-stage: the uniform search, then the per-stage search beside it
  layerwise = 4,     // --layerwise (with or without --gbs auto)
  gbs_auto = 8,      // --gbs auto alone: the uniform planner over the batch sizes
  oases_blocks = 16, // --oases-blocks
  sbp = 32,          // --space sbp
};
// How the search is named in messages: "the strategy search", "--per-stage", ..., "--space sbp".
const char* search_name(PlanSearch s);

// The flags given on `cmd`'s command line, long names with their dashes.
std::vector<std::string> given_flags(const CLI::App& cmd);

// The search the flags select (--space sbp, then --oases-blocks, --per-stage, --layerwise, --gbs auto, else the
// strategy search); parses a.gbs from a.gbs_text. A second search flag is then refused by check_flag_rules.
PlanSearch select_search(PlanArgs& a);

// Every flag given that does not apply to `search` (the table in plan_flags.cpp), and the flags that contradict
// each other (--engine with --elementwise, --earlystop, --fp8-cast): InputError naming the flag, exit 2, before
// any model or cluster is read.
void check_flag_rules(const PlanArgs& a, PlanSearch search);

}  // namespace strata::cli
