// cli/plan_trials: runs the planner's top-K plans with the executor and re-ranks them (see plan_trials.hpp).
#include "plan_trials.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#ifdef STRATA_WITH_EXEC
#include "strata/exec/run.hpp"
#endif

namespace strata::cli {

nlohmann::ordered_json run_plan_trials(const model::Model& m, const hw::Cluster& c, const plan::PlanResult& r,
                                       int k, int steps, double timeout_s) {
#ifndef STRATA_WITH_EXEC
  (void)m, (void)c, (void)r, (void)k, (void)steps, (void)timeout_s;
  throw core::InputError("plan: --trials: this build has no executor (built with STRATA_WITH_EXEC=OFF)");
#else
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<std::vector<std::string>> table;
  int best = -1;
  double best_measured = std::numeric_limits<double>::infinity();
  const int n = std::min<int>(k, static_cast<int>(r.top.size()));
  for (int i = 0; i < n; ++i) {
    const auto& cand = r.top[i];
    nlohmann::ordered_json row;
    row["rank"] = i + 1;
    row["strategy"] = cost::to_cli_string(cand.strategy);
    row["predicted_iteration_time_s"] = cand.estimate.iteration_time_s;
    std::fprintf(stderr, "plan: trial %d/%d: %s\n", i + 1, n, cost::to_cli_string(cand.strategy).c_str());
    std::string measured_text = "-", ratio_text = "-", note;
    try {
      exec::RunOptions o = exec::make_run_options(m, cand.strategy, c.num_devices());
      o.steps = steps;
      o.timeout_s = timeout_s;
      const exec::RunRecord rec = exec::run_local(o);
      row["measured_iteration_time_s"] = rec.iteration_time_s;
      row["final_loss"] = rec.losses.empty() ? 0.0 : rec.losses.back();
      measured_text = core::format_seconds(rec.iteration_time_s);
      ratio_text = fmt::format("{:.2f}", rec.iteration_time_s / cand.estimate.iteration_time_s);
      if (rec.iteration_time_s < best_measured) {  // ties keep the better-predicted (earlier) plan
        best_measured = rec.iteration_time_s;
        best = i;
      }
    } catch (const core::InputError& e) {
      note = std::string("not runnable here: ") + e.what();
    } catch (const exec::ExecError& e) {
      note = std::string("run failed: ") + e.what();
    }
    if (!note.empty()) row["note"] = note;
    rows.push_back(row);
    table.push_back({fmt::format("#{}", i + 1), core::format_seconds(cand.estimate.iteration_time_s), measured_text,
                     ratio_text, note.empty() ? cost::to_cli_string(cand.strategy) : note});
  }
  fmt::print("\nTrials ({} steps each, local processes, libtorch + Gloo; AMP Algorithm 1):\n{}", steps,
             core::render_table({"plan", "predicted", "measured", "measured/predicted", "strategy"}, table));
  if (best >= 0)
    fmt::print("re-ranked best (measured): #{} at {}\n", best + 1, core::format_seconds(best_measured));
  else
    fmt::print("no trial ran; the predicted ranking stands\n");
  return rows;
#endif
}

}  // namespace strata::cli
