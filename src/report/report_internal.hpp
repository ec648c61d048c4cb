// report/report_internal: the pieces report_data assembles (one file each): the summary and placement
// (summary.cpp), the per-stage breakdown and "why this plan" (why.cpp), the simulated timeline and memory
// (timeline.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/strategy.hpp"
#include "strata/report/report.hpp"

namespace strata::report::detail {

using OJson = nlohmann::ordered_json;

// The plan file as read: its best strategy (complete) and raw JSON.
struct PlanView {
  const nlohmann::json& plan;
  std::string origin;
  cost::Strategy best;                  // complete (split and placement filled)
  const nlohmann::json& best_estimate;  // plan["best"]["estimate"]
  // Micro-batches per replica and iteration of each stage (cost::StageView::micro_batches: gbs/(dp_i·mbs); the
  // same for every stage of a uniform plan).
  std::vector<std::int64_t> stage_micro_batches;
};

// A number shown on the page: exact value (data-value) plus the text a person reads.
OJson number_item(const std::string& key, const std::string& label, double value, const std::string& text);

// The reader of a required numeric field of the plan file (InputError naming origin and field).
double plan_number(const nlohmann::json& obj, const std::string& key, const std::string& where);

// "16 pipeline stages (1F1B, 96 micro-batches of 1), tp 8 inside each node, 2 replicas with ZeRO-1, ..."
std::string strategy_in_words(const cost::Strategy& s, const hw::Cluster& c);

// The timelines' tick: a power of ten (seconds) that keeps the makespan below 10^7 ticks (≤ 8 digits per number).
inline double tick_length_s(double makespan_s) {
  double tick = 1e-9;
  while (makespan_s / tick > 1e7) tick *= 10;
  return tick;
}
inline long long ticks(double s, double tick) { return std::llround(s / tick); }

OJson summary_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c);
OJson placement_section(const PlanView& pv, const hw::Cluster& c);
OJson stages_section(const PlanView& pv);
OJson why_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c, const ReportOptions& opt);
OJson timeline_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c, const ReportOptions& opt);
// The same section for a per-stage plan of unequal stages (sim::simulate_per_stage; timeline_per_stage.cpp): the
// flushed schedules' replicas as Gantt rows (compute ops only), memory from the cost model (no curve).
OJson per_stage_timeline_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c,
                                 const ReportOptions& opt);

}  // namespace strata::report::detail

namespace strata::report::detail {
// The page's inline script and style sheet (html_script.cpp, html.cpp).
std::string_view report_script();
std::string_view report_style();
}  // namespace strata::report::detail
