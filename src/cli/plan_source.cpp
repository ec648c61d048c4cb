// cli/plan_source: embedded model/cluster definitions and the shared plan-file reader (plan_source.hpp).
#include "plan_source.hpp"

#include "io.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::cli {
namespace {

bool is_builtin_model(const std::string& spec) {
  const auto names = model::zoo_names();
  return std::find(names.begin(), names.end(), core::to_lower(spec)) != names.end();
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// hw::resolve_cluster's rule for a file spec (hw/cluster_build.cpp looks_like_file).
bool is_cluster_file(const std::string& spec) {
  return spec.find('/') != std::string::npos ||
         (spec.size() >= 5 && core::to_lower(spec.substr(spec.size() - 5)) == ".json");
}

nlohmann::ordered_json definition(const std::string& path, const std::string& name) {
  nlohmann::ordered_json j = core::load_json_file(path);
  if (j.is_object() && !j.contains("name")) j["name"] = name;
  return j;
}

}  // namespace

nlohmann::ordered_json input_definitions(const std::string& model_spec, const model::Model& m,
                                         const std::string& cluster_spec, const hw::Cluster& c) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (!model_spec.empty() && !is_builtin_model(model_spec)) out["model_definition"] = definition(model_spec, m.name);
  if (const std::string spec = trimmed(cluster_spec); is_cluster_file(spec))
    out["cluster_definition"] = definition(spec, c.name);
  return out;
}

PlanContext resolve_plan_context(const std::string& path, const PlanContextFlags& f) {
  core::Json plan = core::Json::object();
  if (!path.empty()) plan = core::load_json_file(path);
  if (!plan.is_object()) plan = core::Json::object();  // a bare strategy file names nothing
  const core::JsonWhere w{path, ""};
  const auto catalog = hw::builtin_catalog();
  PlanContext out;
  if (!f.model.empty()) out.model = model::resolve_model(f.model);
  else if (plan.contains("model_definition"))
    out.model = model::model_from_json(plan["model_definition"], path + ": model_definition");
  else if (auto name = core::opt_string(plan, "model", w)) out.model = model::resolve_model(*name);
  else throw core::InputError(fmt::format("{}: --model is required ({})", f.command, f.missing));
  if (!f.cluster.empty()) out.cluster = hw::resolve_cluster(f.cluster, catalog);
  else if (plan.contains("cluster_definition"))
    out.cluster = hw::cluster_from_json(plan["cluster_definition"], path + ": cluster_definition", catalog);
  else if (auto name = core::opt_string(plan, "cluster", w)) out.cluster = hw::resolve_cluster(*name, catalog);
  else throw core::InputError(fmt::format("{}: --cluster is required ({})", f.command, f.missing));
  // A --model other than the plan's is refused; another --cluster is noted (cli/io.hpp check_plan_agrees).
  if (!path.empty())
    check_plan_agrees({core::opt_string(plan, "model", w).value_or(""), core::opt_string(plan, "cluster", w).value_or(""),
                       std::nullopt},
                      {f.command, path, f.model.empty() ? nullptr : &out.model, f.cluster});
  const std::optional<std::int64_t> seq = f.seq ? f.seq : core::opt_positive_int(plan, "seq", w);
  if (seq && *seq != out.model.seq) out.model = model::with_seq(out.model, *seq);
  return out;
}

}  // namespace strata::cli
