// cli/plan_layerwise: `strata plan --layerwise` / `--gbs auto` (see plan_layerwise.hpp, docs/planner.md
// §Per-layer strategies).
#include "plan_layerwise.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "commands.hpp"
#include "export_hooks.hpp"
#include "io.hpp"
#include "plan_source.hpp"
#include "plan_trials.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/core/units.hpp"
#include "strata/plan/layerwise.hpp"
#include "strata/plan/placement.hpp"
#include "strata/plan/plan_inputs.hpp"

namespace strata::cli {

std::int64_t parse_gbs_flag(const std::string& text, const std::string& flag) {
  if (text == "auto") return 0;
  char* end = nullptr;
  const long long v = text.empty() ? 0 : std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size())
    throw core::InputError(fmt::format("{}: expected a global batch size >= 1 or 'auto', got '{}'", flag, text));
  // The number check's message is plan::check_plan_options' (the Python API's strata.plan says the same).
  if (v < 1) throw core::InputError(fmt::format("{}: must be >= 1 (global batch size in samples)", flag));
  return v;
}

double parse_memory_budget(const std::string& text, const std::string& flag) {
  char* end = nullptr;
  const double v = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v) || v <= 0 || v > 1e6)
    throw core::InputError(fmt::format("{}: expected GiB per GPU in (0, 1e6] (e.g. 8), got '{}'", flag, text));
  return v * core::kGiB;
}

namespace {

std::vector<std::string> row(const std::string& name, const cost::Strategy& s, const cost::Estimate& e, double best) {
  std::string shape = cost::is_uniform(s) ? fmt::format("dp{} tp{} pp{} zero{} rc={}", s.dp, s.tp, s.pp, s.zero_stage,
                                                        model::to_string(s.recompute))
                                          : fmt::format("pp{} per-layer", s.pp);
  return {name, std::to_string(s.global_batch), std::to_string(s.micro_batch), shape,
          fmt::format("{:.2f}", e.samples_per_s), core::format_seconds(e.iteration_time_s),
          fmt::format("{:.1f}%", 100.0 * e.mfu), core::format_bytes(e.peak_memory_bytes),
          best > 0 ? fmt::format("{:.2f}x", best / e.samples_per_s) : ""};
}

}  // namespace

std::string best_strategy_text(const hw::Cluster& c, cost::Strategy s) {
  bool identity = true;
  for (std::size_t i = 0; i < s.placement.size(); ++i) identity = identity && s.placement[i] == static_cast<int>(i);
  if (identity || s.placement.size() <= 64) {
    if (identity) s.placement.clear();  // the default (Megatron) placement
    return cost::to_cli_string(s);
  }
  const std::string where = plan::placement_ranges(c, s);
  s.placement.clear();
  return fmt::format("{}\nplacement: {} (the exact `place=` list: `cli` in the plan file)", cost::to_cli_string(s),
                     where);
}

void write_plan_outputs(const PlanOutputs& o, const plan::PlanResult& r, const model::Model& m, const hw::Cluster& c,
                        const plan::PlanOptions& opt, nlohmann::ordered_json extra, bool closest) {
  std::FILE* out = o.json_file == "-" ? stderr : stdout;
  const auto& best = r.top.front();
  if (!o.compare_to.empty()) compare_to_config(o.compare_to, m, c, best.estimate.iteration_time_s);
  if (!o.export_engine.empty()) {
    fmt::print(out, "\n");
    std::fflush(out);
    export_strategy_cli(o.export_engine, m, c, best.strategy, "-", closest);
  }
  if (o.trials > 0)
    extra["trials"] = run_plan_trials(o.model_spec, c, r, o.trials, o.trial_steps, o.trial_timeout_s);
  if (o.json_file.empty() && o.report_file.empty()) return;
  extra.update(input_definitions(o.model_spec, m, o.cluster_spec, c));
  const std::string text = plan::plan_file_text(r, m, c, opt, extra);
  if (!o.json_file.empty()) {
    write_output(o.json_file, text, "plan: --json");
    if (o.json_file != "-") fmt::print("plan file written to {}\n", o.json_file);
  }
  if (!o.report_file.empty()) {  // the same page as `strata report --plan <the --json file>`
    ReportFiles files;
    files.html = o.report_file;
    files.flag = "plan: --report";
    write_plan_report(nlohmann::json::parse(text), "plan", m, c, files, opt.cost);
  }
}

void run_plan_layerwise(const LayerwiseRun& run, const model::Model& m, const hw::Cluster& c,
                        const plan::PlanOptions& opt) {
  if (!run.out.json_file.empty()) check_output_path(run.out.json_file, "plan: --json");
  if (!run.out.report_file.empty()) check_output_path(run.out.report_file, "plan: --report");
  std::optional<plan::PlanResult> uni;
  plan::PlanOptions uopt = opt;
  uopt.baselines = false;
  if (opt.global_batch == 0) {
    uni = plan::plan_auto_gbs(m, c, uopt);
  } else {
    try {
      uni = plan::plan(m, c, uopt);
    } catch (const core::InputError&) {
      if (!run.layerwise) throw;
    }
  }
  plan::LayerwisePlan lw;
  if (run.layerwise) {
    lw = plan::plan_layerwise(m, c, plan::layerwise_options(opt));  // as strata.plan(layerwise=True)
  }
  if (!lw.found && !uni)
    throw core::InputError(fmt::format("plan: model {} fits no plan on {} within the memory budget (gbs {})", m.name,
                                       c.name, opt.global_batch == 0 ? std::string("auto") : std::to_string(opt.global_batch)));
  std::FILE* out = run.out.json_file == "-" ? stderr : stdout;
  const double best = std::max(lw.found ? lw.estimate.samples_per_s : 0.0, uni ? uni->top.front().estimate.samples_per_s : 0.0);
  std::vector<std::vector<std::string>> rows;
  if (lw.found) rows.push_back(row("per-layer (BMW)", lw.strategy, lw.estimate, best));
  if (uni) rows.push_back(row("best uniform", uni->top.front().strategy, uni->top.front().estimate, best));
  fmt::print(out, "strata plan: model {} on {} ({} devices), gbs {}\n\n{}\n", m.name, c.name, c.num_devices(),
             opt.global_batch == 0 ? std::string("auto") : std::to_string(opt.global_batch),
             core::render_table({"plan", "gbs", "mbs", "shape", "samples/s", "time/iter", "MFU", "peak mem", "vs best"}, rows));
  if (lw.found) {
    fmt::print(out, "per-layer choices:\n");
    for (const auto& line : plan::describe_layer_choices(lw.strategy)) fmt::print(out, "  {}\n", line);
    if (uni)
      fmt::print(out, "per-layer plan vs best uniform: {:.2f}x\n",
                 lw.estimate.samples_per_s / uni->top.front().estimate.samples_per_s);
    fmt::print(out, "search: {} configurations, {} stage DPs, {:.3f} s\n", lw.configs, lw.dp_runs, lw.search_time_s);
  }
  const bool lw_best = lw.found && (!uni || lw.estimate.samples_per_s >= uni->top.front().estimate.samples_per_s);
  const cost::Strategy& bs = lw_best ? lw.strategy : uni->top.front().strategy;
  fmt::print(out, "best strategy: {}\n", best_strategy_text(c, bs));
  // The plan file of every search: the per-layer plan among the uniform top-K, best first (by samples/s: with
  // --gbs auto the candidates' batch sizes differ).
  plan::PlanResult r = uni ? *uni : plan::PlanResult{};
  if (lw.found) {
    plan::Candidate cand{lw.strategy, lw.estimate, "per-layer (Galvatron-BMW)", 0, 0};
    r.top.insert(lw_best ? r.top.begin() : r.top.begin() + 1, std::move(cand));
    r.search_time_s += lw.search_time_s;
  }
  plan::PlanOptions fopt = opt;
  fopt.global_batch = bs.global_batch;  // --gbs auto: the batch size chosen
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  extra["search"] = run.layerwise ? "layerwise" : "gbs-auto";
  if (lw.found) extra["layer_choices"] = plan::describe_layer_choices(lw.strategy);
  if (uni) {
    extra["uniform_best"]["strategy"] = cost::to_json(uni->top.front().strategy);
    extra["uniform_best"]["estimate"] = cost::to_json(uni->top.front().estimate);
  }
  write_plan_outputs(run.out, r, m, c, fopt, std::move(extra), /*closest=*/lw_best);
}

}  // namespace strata::cli
