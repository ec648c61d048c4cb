// python/common: what the binding files of the Python module share — the JSON bridge (nlohmann ↔ Python
// objects), the coercion of arguments (a model, cluster or strategy given as an object, a name/spec/text or a
// dict) and the result holders that keep the model and cluster they were computed on. docs/python.md.
#pragma once
#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/core/numbers.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/layerwise.hpp"
#include "strata/plan/search.hpp"
#include "strata/plan/stage_search.hpp"
#include "strata/sim/from_cost.hpp"

namespace strata::python {

namespace py = pybind11;

// JSON → Python: objects → dict (key order kept), arrays → list, numbers → int/float, non-finite floats → None
// (what json.loads reads from the CLI's output, where nlohmann writes them as null).
py::object to_python(const nlohmann::ordered_json& j);
// Python → JSON for dict inputs (model, cluster, strategy, throughputs): dict with str keys, list/tuple, bool,
// int, float, str, None. InputError "<where>: ..." for anything else.
nlohmann::json from_python(py::handle o, const std::string& where);
// Numeric keyword arguments, checked as the CLI checks the flag of the same name (core/numbers.hpp: same range,
// same words): bool is refused for an int or a number, float for an int, str for either (TypeError); a value out
// of range is an InputError naming both bounds. `name` is the CLI flag ("--gbs").
std::int64_t int_arg(py::handle o, core::Range r, const std::string& name);
std::optional<std::int64_t> opt_int_arg(py::handle o, core::Range r, const std::string& name);  // None → nullopt
double number_arg(py::handle o, core::Range r, const std::string& name);
std::optional<double> opt_number_arg(py::handle o, core::Range r, const std::string& name);
// core::dump_json — the text the CLI's --json prints (without the final newline).
std::string dump(const nlohmann::ordered_json& j);

// The built-in GPU/link/node catalog, parsed once.
const hw::Catalog& catalog();

struct Model {
  std::shared_ptr<const model::Model> m;
};
struct Cluster {
  std::shared_ptr<const hw::Cluster> c;
};

// Model | str (zoo name or model file) | dict (model file content); `seq` overrides the sequence length.
std::shared_ptr<const model::Model> as_model(py::handle o, std::optional<std::int64_t> seq = {});
// Cluster | str (preset, "type:count+...", cluster file) | dict (cluster file content).
std::shared_ptr<const hw::Cluster> as_cluster(py::handle o);
// Strategy | str (CLI syntax, `where` names it in errors) | dict (a strategy, or a plan's to_dict(): its best).
cost::Strategy as_strategy(py::handle o, const std::string& where = "--strategy");
// Strategy keys given as keywords (strata.estimate(..., optim="foreach")), by their table name or Python name
// (cost/strategy_keys.hpp): True/False → on/off, int → its digits, list → a+b+..., str as is, None = not given.
// plan_options_only: only the keys the planner takes (plan_option); InputError "<where>: ..." otherwise.
void apply_strategy_keywords(cost::Strategy& s, const py::kwargs& keys, const std::string& where,
                             bool plan_options_only);
// The keywords as --strategy text ("" when none), for a strategy built from keywords alone.
std::string strategy_keywords_text(const py::kwargs& keys, const std::string& where);
// `--memory-headroom` as str ("4", "10%") or a number of GiB; `flag` names it in errors.
cost::MemoryHeadroom as_headroom(py::handle o, const std::string& flag);

// One estimate of a complete strategy, with what it was computed on.
struct EstimateResult {
  std::shared_ptr<const model::Model> m;
  std::shared_ptr<const hw::Cluster> c;
  cost::Strategy s;
  cost::Estimate e;
};

// A planner run: its result and the inputs plan_to_json needs.
struct PlanHandle {
  std::shared_ptr<const model::Model> m;
  std::shared_ptr<const hw::Cluster> c;
  std::shared_ptr<const cost::Profile> profile;  // opt.cost.profile points here
  plan::PlanOptions opt;                         // progress cleared
  plan::PlanResult r;
  std::optional<plan::StageSearchResult> per_stage;  // per_stage=True
  std::optional<plan::LayerwisePlan> layerwise;      // layerwise=True
};

// One simulated run.
struct SimulationResult {
  std::shared_ptr<const model::Model> m;
  std::shared_ptr<const hw::Cluster> c;
  cost::Strategy s;
  sim::Simulation r;
};

void bind_types(py::module_& mod);    // Model, Cluster, Strategy, Estimate (types.cpp)
void bind_plan(py::module_& mod);     // plan, Plan, Candidate, Baseline (plan.cpp)
void bind_calls(py::module_& mod);    // estimate, simulate, export, catalog listings (calls.cpp)

}  // namespace strata::python
