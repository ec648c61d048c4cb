// cli/plan_source: embedded model/cluster definitions and the shared plan-file reader (plan_source.hpp).
#include "plan_source.hpp"

#include "io.hpp"

#include <fmt/format.h>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/plan/plan_inputs.hpp"

namespace strata::cli {

nlohmann::ordered_json input_definitions(const std::string& model_spec, const model::Model& m,
                                         const std::string& cluster_spec, const hw::Cluster& c) {
  return plan::input_definitions({model_spec, std::nullopt}, m, {cluster_spec, std::nullopt}, c);  // as Python's
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
