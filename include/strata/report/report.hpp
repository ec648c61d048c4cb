// report/report: `strata report` — one self-contained HTML page (inline CSS, JS and SVG; no network) that shows a
// plan at a glance: the summary in words, the cluster and placement, the simulated timeline (Gantt), memory over
// time per stage, per-stage time breakdown with the bottleneck, and why this plan (top-k, baselines, sensitivity).
// Built from the plan file (plan::plan_to_json) so a saved plan can be re-reported without re-planning. The page
// is deterministic: the same plan, model and cluster give the same bytes. Format and sections: docs/report.md.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::report {

struct ReportOptions {
  cost::CostOptions cost;                   // profile / constants for the simulation and the sensitivity
  int device_rows_max = 64;                 // Gantt: one row per device up to this many devices, else per stage
  std::int64_t max_timeline_tasks = 120000; // more simulated tasks than this: only dp replica 0 of each stage
  int max_memory_points = 4000;             // memory samples per stage (the peak is always kept)
  double sensitivity_factor = 0.8;          // "20 % lower" bandwidth / GPU efficiency
  // Progress for long steps (simulating a big cluster); may be empty.
  std::function<void(const std::string&)> progress;
};

// Everything the page shows, as ordered JSON (embedded in the page; the tests read it too). `plan` is a plan file
// (docs/planner.md §Plan file); `origin` names it in errors. InputError when the plan has no best strategy or a
// field is malformed.
nlohmann::ordered_json report_data(const nlohmann::json& plan, const std::string& origin, const model::Model& m,
                                   const hw::Cluster& c, const ReportOptions& opt = {});

// The HTML page for report_data's output.
std::string render_html(const nlohmann::ordered_json& data);

}  // namespace strata::report
