// report/report: report_data — reads the plan file's best strategy and assembles the page's sections (summary,
// placement, timeline, memory, stages, why). Each section is computed in its own file (report_internal.hpp).
#include "strata/report/report.hpp"

#include <fmt/format.h>

#include "report_internal.hpp"
#include "strata/core/error.hpp"
#include "strata/cost/layerwise.hpp"

namespace strata::report {

namespace {

nlohmann::ordered_json build(const nlohmann::json& plan, const std::string& origin, const model::Model& m,
                             const hw::Cluster& c, const ReportOptions& opt) {
  if (!plan.is_object()) throw core::InputError(origin + ": not a plan file (expected a JSON object)");
  if (!plan.contains("best") || !plan["best"].is_object() || !plan["best"].contains("strategy") ||
      !plan["best"].contains("estimate"))
    throw core::InputError(origin + ": best: missing (write the plan with `strata plan --json`)");
  if (!plan.contains("candidates") || !plan["candidates"].is_array())
    throw core::InputError(origin + ": candidates: missing or not an array");
  if (plan.contains("devices") && plan["devices"].is_number_integer() &&
      plan["devices"].get<int>() != c.num_devices())
    throw core::InputError(fmt::format("{}: devices: the plan is for {} devices but the cluster '{}' has {}", origin,
                                       plan["devices"].get<int>(), c.name, c.num_devices()));
  cost::Strategy best = cost::strategy_from_json(plan["best"]["strategy"], origin + ": best.strategy");
  best = cost::complete_strategy(best, m, c);
  detail::PlanView pv{plan, origin, best, plan["best"]["estimate"], {}};
  for (const auto& v : cost::stage_views(best, c)) pv.stage_micro_batches.push_back(v.micro_batches);
  nlohmann::ordered_json j;
  j["format"] = "strata-report-1";
  j["summary"] = detail::summary_section(pv, m, c);
  j["placement"] = detail::placement_section(pv, c);
  j["stages"] = detail::stages_section(pv);
  // Stages of different widths have no pipeline program yet: their own replay (docs/report.md).
  const bool unequal = !cost::is_uniform(best) && !cost::is_layerwise(best, c);
  j["timeline"] = unequal ? detail::per_stage_timeline_section(pv, m, c, opt) : detail::timeline_section(pv, m, c, opt);
  j["why"] = detail::why_section(pv, m, c, opt);
  return j;
}

}  // namespace

nlohmann::ordered_json report_data(const nlohmann::json& plan, const std::string& origin, const model::Model& m,
                                   const hw::Cluster& c, const ReportOptions& opt) {
  try {
    return build(plan, origin, m, c, opt);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type or missing deeper down
    throw core::InputError(fmt::format("{}: malformed plan file: {}", origin, e.what()));
  }
}

}  // namespace strata::report
