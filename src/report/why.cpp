// report/why: the per-stage time breakdown with the bottleneck named, and "why this plan": the top-k table, each
// baseline with the one reason it loses, the planner's explanation, and the sensitivity of the ranking when the
// network or the GPUs deliver 20 % less than modelled (every candidate and baseline re-estimated by
// cost::estimate with scaled efficiency constants, ranked by the objective the plan was ranked with).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "report_internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"
#include "strata/plan/search.hpp"

namespace strata::report::detail {
namespace {

double num(const nlohmann::json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; }

// Micro-batches per pipeline of a strategy JSON (gbs / (dp · mbs)).
double micro_batches(const nlohmann::json& s) {
  const double d = num(s, "dp") * num(s, "mbs");
  return d > 0 ? num(s, "gbs") / d : 1.0;
}

// Per-iteration aggregates of an estimate that explain a time difference (max over stages: the slowest stage
// sets the pace).
struct Aggregates {
  double compute = 0, tp = 0, bubble = 0, dp = 0, optimizer = 0, host = 0;
};

Aggregates aggregates(const nlohmann::json& e, double m) {
  Aggregates a;
  if (e.contains("stages"))
    for (const auto& st : e["stages"]) {
      a.compute = std::max(a.compute, m * num(st, "compute_s"));
      a.tp = std::max(a.tp, m * num(st, "tp_comm_s"));
      a.bubble = std::max(a.bubble, num(st, "bubble_s"));
      a.dp = std::max(a.dp, num(st, "dp_comm_s"));
      a.optimizer = std::max(a.optimizer, num(st, "optimizer_s"));
    }
  if (e.contains("host_cpu_bound") && e["host_cpu_bound"].value("binding", false))
    a.host = num(e["host_cpu_bound"], "bound_s") - num(e, "pipeline_time_s");
  return a;
}

// The one component whose excess over the best plan is largest.
std::string loss_reason(const nlohmann::json& best_e, double best_m, const nlohmann::json& base_e, double base_m) {
  if (base_e.contains("fits") && !base_e["fits"].get<bool>()) return "does not fit in memory";
  const Aggregates b = aggregates(best_e, best_m), x = aggregates(base_e, base_m);
  const std::vector<std::pair<std::string, std::pair<double, double>>> parts{
      {"compute on the slowest stage", {x.compute, b.compute}}, {"exposed TP communication", {x.tp, b.tp}},
      {"pipeline bubble", {x.bubble, b.bubble}}, {"exposed DP synchronisation", {x.dp, b.dp}},
      {"optimizer step", {x.optimizer, b.optimizer}}, {"host-CPU bound", {x.host, b.host}}};
  std::size_t worst = 0;
  for (std::size_t i = 1; i < parts.size(); ++i)
    if (parts[i].second.first - parts[i].second.second > parts[worst].second.first - parts[worst].second.second)
      worst = i;
  const auto& [label, v] = parts[worst];
  if (v.first - v.second <= 0) return "no slower component: it ties with the best plan";
  return fmt::format("{}: {} vs {} per iteration", label, core::format_seconds(v.first),
                     core::format_seconds(v.second));
}

// A ranked plan of the sensitivity table.
struct Entry {
  std::string name;
  cost::Strategy strategy;
  double nominal_s = 0;
};

// Estimates of `entries` with the efficiency constants scaled (which = "bandwidth" or "gpu"; "" = as modelled).
std::vector<cost::Estimate> rescaled_estimates(const std::vector<Entry>& entries, const model::Model& m,
                                               const hw::Cluster& c, const ReportOptions& opt,
                                               const std::string& which) {
  cost::CostConstants k = opt.cost.constants ? *opt.cost.constants : cost::builtin_constants();
  const double f = opt.sensitivity_factor;
  if (which == "bandwidth") {
    k.intra_node_bw_efficiency *= f;
    k.inter_node_bw_efficiency *= f;
  } else if (which == "gpu") {
    k.gemm_max_efficiency *= f;
    k.fp32_gemm_max_efficiency *= f;
    k.memory_bw_efficiency *= f;
  }
  cost::CostOptions co = opt.cost;
  co.constants = &k;
  std::vector<cost::Estimate> out;
  for (const auto& e : entries) out.push_back(cost::estimate(m, c, e.strategy, co));
  return out;
}

std::vector<double> times_of(const std::vector<cost::Estimate>& est) {
  std::vector<double> out;
  for (const auto& e : est) out.push_back(e.fits ? e.iteration_time_s : INFINITY);
  return out;
}

// Ranks (1 = first) of the entries taking times `t`, by the objective the plan was ranked with: the planner's own
// order (plan::rank_by_objective: margin = the most memory margin first among the plans within 2 % of the fastest,
// then by time; fastest = by time), so the "as planned" column is the plan list's order.
std::vector<int> ranks_of(const std::vector<Entry>& entries, const std::vector<double>& t,
                          const std::vector<cost::Estimate>& est, plan::Objective objective) {
  std::vector<plan::Candidate> cands(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    cands[i].estimate = est[i];  // its stages' memory gives the margin (unchanged by the scaled constants)
    cands[i].estimate.iteration_time_s = t[i];
    cands[i].order = static_cast<std::int64_t>(i);  // ties keep the table's order
  }
  plan::PlanOptions o;
  o.objective = objective;
  plan::rank_by_objective(cands, o);
  std::vector<int> rank(entries.size());
  for (std::size_t pos = 0; pos < cands.size(); ++pos) rank[cands[pos].order] = static_cast<int>(pos) + 1;
  return rank;
}

// The objective of the plan file ("objective", written by plan::plan_to_json); a file without it was ranked by the
// planner's default, margin.
plan::Objective plan_objective(const PlanView& pv) {
  const auto it = pv.plan.find("objective");
  if (it == pv.plan.end() || !it->is_string()) return plan::Objective::margin;
  return plan::parse_objective(it->get<std::string>(), pv.origin + ": objective");
}

OJson sensitivity(const PlanView& pv, const model::Model& m, const hw::Cluster& c, const ReportOptions& opt) {
  std::vector<Entry> entries;
  const auto& cands = pv.plan["candidates"];
  for (std::size_t i = 0; i < cands.size(); ++i) {
    const std::string where = fmt::format("{}: candidates[{}].strategy", pv.origin, i);
    entries.push_back({fmt::format("#{}", i + 1),
                       cost::complete_strategy(cost::strategy_from_json(cands[i].at("strategy"), where), m, c),
                       num(cands[i].at("estimate"), "iteration_time_s")});
  }
  if (pv.plan.contains("baseline_strategies"))
    for (const auto& [name, sj] : pv.plan["baseline_strategies"].items()) {
      const auto& be = pv.plan["baselines"][name];
      if (be.is_null() || !be.value("fits", true)) continue;
      const std::string where = pv.origin + ": baseline_strategies." + name;
      entries.push_back({name, cost::complete_strategy(cost::strategy_from_json(sj, where), m, c),
                         num(be, "iteration_time_s")});
    }
  std::vector<double> nominal;
  for (const auto& e : entries) nominal.push_back(e.nominal_s);
  const plan::Objective objective = plan_objective(pv);
  const int pct = static_cast<int>(std::lround(100 * (1 - opt.sensitivity_factor)));
  const std::vector<std::pair<std::string, std::string>> scenarios{
      {"bandwidth", fmt::format("network bandwidth {} % lower", pct)},
      {"gpu", fmt::format("GPU efficiency {} % lower", pct)}};
  OJson j;
  j["factor"] = opt.sensitivity_factor;
  j["objective"] = std::string(plan::to_string(objective));
  OJson cols = OJson::array({"as planned"});
  std::vector<std::vector<double>> times{nominal};
  std::vector<std::vector<int>> ranks{ranks_of(entries, nominal, rescaled_estimates(entries, m, c, opt, ""), objective)};
  for (const auto& [key, label] : scenarios) {
    cols.push_back(label);
    const auto est = rescaled_estimates(entries, m, c, opt, key);
    times.push_back(times_of(est));
    ranks.push_back(ranks_of(entries, times.back(), est, objective));
  }
  j["scenarios"] = cols;
  OJson rows = OJson::array();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    OJson r;
    r["name"] = entries[i].name;
    OJson ts = OJson::array(), rk = OJson::array();
    for (std::size_t k = 0; k < times.size(); ++k) {
      ts.push_back(std::isfinite(times[k][i]) ? core::format_seconds(times[k][i]) : "does not fit");
      rk.push_back(ranks[k][i]);
    }
    r["times"] = ts;
    r["ranks"] = rk;
    rows.push_back(r);
  }
  j["rows"] = rows;
  OJson verdicts = OJson::array();
  for (std::size_t k = 1; k < times.size(); ++k) {
    const int winner = static_cast<int>(std::find(ranks[k].begin(), ranks[k].end(), 1) - ranks[k].begin());
    const char* first = objective == plan::Objective::margin ? "first (the margin objective)" : "the fastest";
    verdicts.push_back(winner == 0 ? fmt::format("with {}, the chosen plan stays {} ({} per iteration)",
                                                 scenarios[k - 1].second, first, core::format_seconds(times[k][0]))
                                   : fmt::format("with {}, {} overtakes the chosen plan ({} vs {})",
                                                 scenarios[k - 1].second, entries[winner].name,
                                                 core::format_seconds(times[k][winner]),
                                                 core::format_seconds(times[k][0])));
  }
  j["verdicts"] = verdicts;
  return j;
}

}  // namespace

OJson stages_section(const PlanView& pv) {
  const auto& e = pv.best_estimate;
  const std::string w = pv.origin + ": best.estimate.stages";
  if (!e.contains("stages") || !e["stages"].is_array() || e["stages"].empty())
    throw core::InputError(w + ": missing or empty");
  // The pipeline's fill/drain transfers (Σ e_i, AMP eq. 5) are idle time every stage waits through: shown as
  // p2p, carved out of the bubble.
  double fill_p2p = 0;
  for (const auto& st : e["stages"]) fill_p2p += plan_number(st, "p2p_s", w);
  OJson rows = OJson::array();
  int slow = 0;
  double slow_t = -1, slow_total = -1, fast_t = INFINITY;
  for (std::size_t i = 0; i < e["stages"].size(); ++i) {
    const auto& st = e["stages"][i];
    const double m = i < pv.stage_micro_batches.size() ? static_cast<double>(pv.stage_micro_batches[i]) : 1.0;
    const double bubble = plan_number(st, "bubble_s", w), p2p = std::min(bubble, fill_p2p);
    OJson r;
    r["stage"] = static_cast<int>(i);
    r["gpu"] = st.value("gpu", std::string());
    r["layers"] = st.contains("layers") ? st["layers"].size() : 0;
    r["compute_s"] = m * plan_number(st, "compute_s", w);
    r["tp_s"] = m * plan_number(st, "tp_comm_s", w);
    r["p2p_s"] = p2p;
    r["dp_s"] = plan_number(st, "dp_comm_s", w);
    r["optimizer_s"] = plan_number(st, "optimizer_s", w);
    r["bubble_s"] = bubble - p2p;
    const double t = plan_number(st, "time_s", w);
    if (m * t > slow_total) slow_total = m * t, slow_t = t, slow = static_cast<int>(i);  // the most per iteration
    fast_t = std::min(fast_t, t);
    rows.push_back(r);
  }
  const auto& sj = e["stages"][slow];
  const double m = slow < static_cast<int>(pv.stage_micro_batches.size())
                       ? static_cast<double>(pv.stage_micro_batches[slow]) : 1.0;
  const double tp_share = slow_t > 0 ? plan_number(sj, "tp_comm_s", w) / slow_t : 0;
  OJson j;
  j["rows"] = rows;
  j["bottleneck_stage"] = slow;
  j["bottleneck"] = fmt::format(
      "stage {} ({}) is the bottleneck: forward+backward of one micro-batch takes {}, × {} micro-batches = {} "
      "per iteration{}; TP communication is {:.0f} % of it",
      slow, sj.value("gpu", std::string("?")), core::format_seconds(slow_t), m, core::format_seconds(m * slow_t),
      e["stages"].size() > 1 ? fmt::format(", vs {} on the fastest stage", core::format_seconds(fast_t)) : "",
      100 * tp_share);
  j["iteration_time_s"] = plan_number(e, "iteration_time_s", w);
  return j;
}

OJson why_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c, const ReportOptions& opt) {
  const auto& plan = pv.plan;
  const double best_t = plan_number(pv.best_estimate, "iteration_time_s", pv.origin + ": best.estimate");
  // Per-stage plans: the most micro-batches any stage runs (a baseline's reason compares per-iteration sums).
  const double best_m = pv.stage_micro_batches.empty() ? 1.0
                        : static_cast<double>(*std::max_element(pv.stage_micro_batches.begin(),
                                                                pv.stage_micro_batches.end()));
  OJson j;
  OJson top = OJson::array();
  for (const auto& cand : plan["candidates"]) {
    const auto& e = cand.at("estimate");
    OJson r;
    r["cli"] = cand.value("cli", std::string());
    r["placement"] = cand.value("placement", std::string());
    r["time"] = core::format_seconds(num(e, "iteration_time_s"));
    r["tflops"] = fmt::format("{:.1f}", num(e, "tflops_per_gpu"));
    r["memory"] = core::format_bytes(num(e, "peak_memory_bytes"));
    r["vs_best"] = fmt::format("{:.3f}x", best_t > 0 ? num(e, "iteration_time_s") / best_t : 0.0);
    top.push_back(r);
  }
  j["top"] = top;
  OJson bases = OJson::array();
  if (plan.contains("baseline_notes"))
    for (const auto& [name, note] : plan["baseline_notes"].items()) {
      OJson r;
      r["name"] = name;
      r["note"] = note.is_string() ? note.get<std::string>() : "";
      const auto& be = plan["baselines"].contains(name) ? plan["baselines"][name] : nlohmann::json();
      if (be.is_null() || !be.is_object()) {
        r["time"] = "-";
        r["speedup"] = "-";
        r["reason"] = "no strategy of this kind fits in memory";
      } else {
        const double bm = plan.contains("baseline_strategies") && plan["baseline_strategies"].contains(name)
                              ? micro_batches(plan["baseline_strategies"][name]) : best_m;
        r["time"] = be.value("fits", true) ? core::format_seconds(num(be, "iteration_time_s")) : "does not fit";
        r["speedup"] = plan.contains("speedups") && plan["speedups"].contains(name)
                           ? fmt::format("{:.2f}x", plan["speedups"][name].get<double>()) : "-";
        r["reason"] = loss_reason(pv.best_estimate, best_m, be, bm);
      }
      bases.push_back(r);
    }
  j["baselines"] = bases;
  j["explanation"] = plan.contains("explanation") ? plan["explanation"] : nlohmann::json::array();
  j["sensitivity"] = sensitivity(pv, m, c, opt);
  return j;
}

}  // namespace strata::report::detail
