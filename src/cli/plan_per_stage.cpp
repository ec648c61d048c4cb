// cli/plan_per_stage: `strata plan --per-stage` (plan_per_stage.hpp; docs/planner.md §Per-stage search).
#include "plan_per_stage.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/numbers.hpp"
#include "strata/core/text.hpp"
#include "strata/plan/plan_inputs.hpp"
#include "strata/plan/stage_search.hpp"

namespace strata::cli {

void add_per_stage_options(CLI::App* cmd, PerStageArgs& a) {
  cmd->add_flag("--per-stage", a.enabled,
                "Also search per-stage plans: every pipeline stage its own GPU type, dp and tp, jointly "
                "with the exact layer split, devices may stay idle; printed with its gain over the best uniform "
                "plan and written as \"per_stage\" in the plan file (docs/planner.md)");
  // --objective is plan's one flag (cmd_plan.cpp): it sets a.objective too (margin reads as fastest here).
  cmd->add_option("--budget", a.budget_usd_per_hour, "Per-stage objective budget: most $/hour of the GPUs used")
      ->check(number_in(core::limits::kBudget));
  cmd->add_option("--stage-schedule", a.schedule, "Per-stage schedule: 1f1b (default), gpipe, pipedream, 2bw");
  cmd->add_option("--price", a.prices, "GPU price TYPE=USD_PER_HOUR (repeatable; overrides data/gpu_prices.json)");
}

void check_per_stage_args(const PerStageArgs& a) {
  const bool given =
      a.objective != "fastest" || a.schedule != "1f1b" || a.budget_usd_per_hour != 0 || !a.prices.empty();
  if (!a.enabled && given)
    throw core::InputError("plan: --objective/--budget/--stage-schedule/--price: need --per-stage");
  const auto obj = plan::parse_stage_objective(a.objective, "plan: --objective");
  if (obj == plan::StageObjective::budget && !(a.budget_usd_per_hour > 0))
    throw core::InputError("plan: --budget: must be > 0 $/hour with --objective budget");
  if (obj != plan::StageObjective::budget && a.budget_usd_per_hour != 0)
    throw core::InputError("plan: --budget: needs --objective budget");
  const auto sched = cost::parse_schedule(a.schedule, "plan: --stage-schedule");
  if (sched == cost::Schedule::interleaved)
    throw core::InputError(
        "plan: --stage-schedule: interleaved is not a per-stage schedule (gpipe, 1f1b, pipedream, 2bw)");
  for (const auto& p : a.prices) {
    const auto eq = p.find('=');
    if (eq == std::string::npos || eq == 0)
      throw core::InputError(fmt::format("plan: --price: '{}' is not TYPE=USD_PER_HOUR (e.g. v100-16gb=3.06)",
                                         core::printable(p)));
    // The one numeric check (core/numbers.hpp): finite, > 0 and at most $1 M per GPU-hour.
    core::parse_number(p.substr(eq + 1), core::limits::kPricePerHour,
                       fmt::format("plan: --price {}", core::printable(p.substr(0, eq))));
  }
}

void check_per_stage_prices(const PerStageArgs& a, const hw::Cluster& c) {
  std::vector<std::string> types;
  for (const auto& g : c.gpu_types) types.push_back(g.name);
  for (const auto& p : a.prices) {
    const std::string type = core::to_lower(p.substr(0, p.find('=')));
    if (std::find(types.begin(), types.end(), type) == types.end())
      throw core::InputError(fmt::format("plan: --price: GPU type '{}' is not in the cluster (its types: {})",
                                         core::printable(type), core::join(types)));
  }
}

nlohmann::ordered_json run_per_stage(const PerStageArgs& a, const model::Model& m, const hw::Cluster& c,
                                     const plan::PlanOptions& opt, const plan::Candidate& best_uniform,
                                     std::FILE* out, plan::Candidate* found) {
  plan::PerStageRequest req{a.objective, a.schedule, a.budget_usd_per_hour, {}};
  check_per_stage_prices(a, c);
  for (const auto& p : a.prices) {
    const auto eq = p.find('=');
    req.usd_per_gpu_hour[p.substr(0, eq)] = std::stod(p.substr(eq + 1));
  }
  const plan::StageSearchOptions so = plan::per_stage_options(opt, req);  // as strata.plan(per_stage=True)
  const auto r = plan::search_per_stage(m, c, so);
  const double tu = best_uniform.estimate.iteration_time_s, ts = r.estimate.iteration_time_s;
  fmt::print(out, "\nPer-stage plan (objective {}, schedule {}, mbs {}):\n", a.objective, a.schedule, r.micro_batch);
  std::vector<std::vector<std::string>> rows;
  const auto& st = r.estimate.stages;
  const auto views = cost::stage_views(r.strategy, c);
  for (std::size_t i = 0; i < views.size(); ++i)
    rows.push_back({std::to_string(i), st[i].gpu, std::to_string(views[i].dp), std::to_string(views[i].tp),
                    std::to_string(views[i].num_layers), core::format_seconds(st[i].time_s),
                    core::format_seconds(st[i].p2p_s), core::format_seconds(st[i].dp_comm_s),
                    core::format_bytes(st[i].memory_bytes)});
  fmt::print(out, "{}", core::render_table({"stage", "gpu", "dp", "tp", "layers", "t/micro-batch", "p2p", "dp comm",
                                            "memory"},
                                           rows));
  std::vector<std::string> idle;
  for (int d : r.idle_devices) idle.push_back(std::to_string(d));
  fmt::print(out, "per-stage strategy: {}\n", cost::to_cli_string(r.strategy));
  fmt::print(out, "iteration {} ({:.1f} samples/s); idle devices: {}; GPUs used cost ${:.2f}/h, ${:.3g}/1k samples\n",
             core::format_seconds(ts), r.estimate.samples_per_s, idle.empty() ? "none" : core::join(idle, ","),
             r.usd_per_hour, 1000 * r.usd_per_sample);
  fmt::print(out, "best uniform plan: {} ({})\n", core::format_seconds(tu), cost::to_cli_string(best_uniform.strategy));
  fmt::print(out, "per-stage gain over the best uniform plan: {:.3f}x (cost model); search {:.3f} s, {} stage "
             "configurations, {} DP entries\n", ts > 0 ? tu / ts : 0.0, r.search_time_s, r.configs, r.states);
  nlohmann::ordered_json j;
  j["objective"] = a.objective;
  j["strategy"] = cost::to_json(r.strategy);
  j["cli"] = cost::to_cli_string(r.strategy);
  j["estimate"] = cost::to_json(r.estimate);
  j["idle_devices"] = r.idle_devices;
  j["usd_per_hour"] = r.usd_per_hour;
  j["usd_per_sample"] = r.usd_per_sample;
  j["best_uniform_iteration_time_s"] = tu;
  j["gain_over_uniform"] = ts > 0 ? tu / ts : 0.0;
  j["search_time_s"] = r.search_time_s;
  if (found) *found = {r.strategy, r.estimate, "per-stage (objective " + a.objective + ")", r.objective_s, 0};
  return j;
}

plan::PlanResult with_candidate(plan::PlanResult r, plan::Candidate cand) {
  auto it = r.top.begin();
  while (it != r.top.end() && it->estimate.iteration_time_s <= cand.estimate.iteration_time_s) ++it;
  r.top.insert(it, std::move(cand));
  return r;
}

}  // namespace strata::cli
