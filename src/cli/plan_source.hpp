// cli/plan_source: self-contained plan files (docs/planner.md §Plan file) — the model and cluster definitions a
// plan file embeds when they came from files, and the one reader every command that takes `--plan` shares: model
// and cluster from the flags, else the plan's embedded definitions, else the built-in names it records.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

// {"model_definition": <the model file's JSON>, "cluster_definition": <the cluster file's JSON>} for the specs that
// are files (a model that is no built-in name; a cluster spec with '/' or ending in .json), each with "name" set
// to the resolved model's / cluster's name when the file gives none (so the name read back is the same). Empty
// object when both are built-in. `m` and `c` are what the specs resolved to.
nlohmann::ordered_json input_definitions(const std::string& model_spec, const model::Model& m,
                                         const std::string& cluster_spec, const hw::Cluster& c);

struct PlanContextFlags {
  std::string command;                 // "simulate", "report", "export" (starts each error)
  std::string model, cluster;          // --model / --cluster ("" = the plan's)
  std::optional<std::int64_t> seq;     // --seq (unset = the plan's)
  std::string missing = "the plan file names none";  // ends "--model is required (...)"
};
struct PlanContext {
  model::Model model;
  hw::Cluster cluster;
};
// The model and cluster to read the plan (or strategy) file `path` against ("" = the flags alone): each from its
// flag when given, else the file's embedded definition, else the name it records; seq from the flag, else the
// file's. InputError "<command>: --model is required (the plan file names none)" and the resolvers' errors.
PlanContext resolve_plan_context(const std::string& path, const PlanContextFlags& f);

}  // namespace strata::cli
