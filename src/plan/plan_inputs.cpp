// plan/plan_inputs: the other searches' options and the embedded input definitions (plan_inputs.hpp).
#include "strata/plan/plan_inputs.hpp"

#include <algorithm>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::plan {
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

nlohmann::ordered_json named(nlohmann::ordered_json j, const std::string& name) {
  if (j.is_object() && !j.contains("name")) j["name"] = name;
  return j;
}

}  // namespace

StageSearchOptions per_stage_options(const PlanOptions& opt, const PerStageRequest& req) {
  StageSearchOptions so;
  so.global_batch = opt.global_batch;
  so.dtype = opt.dtype;
  so.eager_elementwise = opt.eager_elementwise;
  so.max_tp = opt.max_tp;
  so.max_stages = opt.max_pp;
  so.cost = opt.cost;
  so.objective = parse_stage_objective(req.objective == "margin" ? "fastest" : req.objective, "plan: --objective");
  so.budget_usd_per_hour = req.budget_usd_per_hour;
  so.schedule = cost::parse_schedule(req.schedule, "plan: --stage-schedule");
  if (so.schedule == cost::Schedule::interleaved)
    throw core::InputError(
        "plan: --stage-schedule: interleaved is not a per-stage schedule (gpipe, 1f1b, pipedream, 2bw)");
  for (const auto& [type, usd] : req.usd_per_gpu_hour) so.usd_per_gpu_hour[core::to_lower(type)] = usd;
  return so;
}

LayerwiseOptions layerwise_options(const PlanOptions& opt) {
  LayerwiseOptions lo;
  lo.global_batch = opt.global_batch;
  lo.dtype = opt.dtype;
  lo.cost = opt.cost;
  lo.max_pp = opt.max_pp;
  if (opt.max_tp > 0) lo.space.max_tp = opt.max_tp;
  return lo;
}

nlohmann::ordered_json input_definitions(const InputSource& model, const model::Model& m, const InputSource& cluster,
                                         const hw::Cluster& c) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  if (model.definition) out["model_definition"] = named(*model.definition, m.name);
  else if (!model.spec.empty() && !is_builtin_model(model.spec))
    out["model_definition"] = named(core::load_json_file(model.spec), m.name);
  if (cluster.definition) out["cluster_definition"] = named(*cluster.definition, c.name);
  else if (const std::string spec = trimmed(cluster.spec); is_cluster_file(spec))
    out["cluster_definition"] = named(core::load_json_file(spec), c.name);
  return out;
}

}  // namespace strata::plan
