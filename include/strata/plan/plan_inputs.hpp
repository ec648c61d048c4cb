// plan/plan_inputs: what every front end of the planner (the CLI's `strata plan`, Python's strata.plan) hands the
// searches beside the strategy search — the per-stage and per-layer searches' options, derived from the plan
// options in one place — and the model/cluster definitions a self-contained plan file embeds.
#pragma once
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/layerwise.hpp"
#include "strata/plan/search.hpp"
#include "strata/plan/stage_search.hpp"

namespace strata::plan {

// The per-stage search's own choices (`strata plan --objective/--budget/--stage-schedule/--price`).
struct PerStageRequest {
  std::string objective = "fastest";               // fastest, cheapest, budget ("margin" reads as fastest)
  std::string schedule = "1f1b";                   // gpipe, 1f1b, pipedream, 2bw
  double budget_usd_per_hour = 0;
  std::map<std::string, double> usd_per_gpu_hour;  // GPU type (any case) → $/hour; empty = data/gpu_prices.json
};
// The per-stage search's options: batch, dtype, element-wise form, degree caps and cost options from `opt` (the
// strategy search's), the rest from `req`. InputError naming the flag (--objective, --stage-schedule: interleaved
// is not a per-stage schedule).
StageSearchOptions per_stage_options(const PlanOptions& opt, const PerStageRequest& req);

// The per-layer (Galvatron-BMW) search's options from the strategy search's: batch (0 = auto), dtype, cost
// options, --max-pp, --max-tp.
LayerwiseOptions layerwise_options(const PlanOptions& opt);

// Where a model or cluster came from: its spec as given (a built-in name, a preset, "a:n+b:m", a file path), or an
// inline definition (Python's dict) — set, it is the definition.
struct InputSource {
  std::string spec;
  std::optional<nlohmann::ordered_json> definition;
};
// {"model_definition": ..., "cluster_definition": ...} for the inputs that came from files or inline definitions
// (a model spec that is no built-in name; a cluster spec with '/' or ending in .json), each with "name" set to the
// resolved model's / cluster's name when the definition gives none (so the name read back is the same); empty
// object when both are built-in. Appended to a plan file, it makes the file readable without the original files.
nlohmann::ordered_json input_definitions(const InputSource& model, const model::Model& m, const InputSource& cluster,
                                         const hw::Cluster& c);

}  // namespace strata::plan
