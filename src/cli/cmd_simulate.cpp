// cli/cmd_simulate: `strata simulate` — play one strategy out task by task with the discrete-event simulator:
// iteration time, per-device busy/idle and bubble, peak memory per device (and when), the analytical estimate
// beside it, and optionally a Chrome trace (Perfetto). Formats: docs/simulator.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "commands.hpp"
#include "engine_flag.hpp"
#include "io.hpp"
#include "plan_source.hpp"
#include "simulate_per_stage.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/core/units.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/cost/strategy_keys.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/placement.hpp"
#include "strata/sim/from_cost.hpp"
#include "strata/sim/trace.hpp"

namespace strata::cli {
namespace {

struct SimulateArgs {
  std::string plan, model, cluster, strategy, strategy_file, trace, profile, memory_headroom;
  std::string engine;  // --engine (engine_flag.cpp)
  bool memory_headroom_given = false;  // set even for an empty value (rejected)
  std::optional<std::int64_t> seq;
  std::optional<int> iterations;
  std::optional<double> overlap_slowdown;
  std::string bucket_mib;  // empty = the cost model's dp_bucket_bytes
  bool json = false;
  bool full = false;  // --full: play out every dp replica
};

void print_human(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s, const sim::Simulation& r) {
  const auto& res = r.result;
  const double est = r.estimate.iteration_time_s;
  fmt::print("model {} (seq {}) on {} ({} devices)\n", m.name, m.seq, c.name, c.num_devices());
  fmt::print("strategy {}\n\n", cost::to_cli_string(s));
  fmt::print("simulated iteration   {}  ({} batch{}{})\n", core::format_seconds(res.iteration_time_s),
             r.input.iterations, r.input.iterations > 1 ? "es" : "",
             r.input.iterations > 1 && (s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw)
                 ? ", steady state"
                 : "");
  fmt::print("analytical estimate   {}  (simulated {:+.1f}%)\n", core::format_seconds(est),
             rounded_percent(est > 0 ? 100.0 * (res.iteration_time_s - est) / est : 0.0));
  if (r.estimate.host.node >= 0 && r.estimate.host.bound_s > r.estimate.pipeline_time_s)
    fmt::print("                      (= the host-CPU bound: {} ranks share {} cores on node {}. The simulator gives "
               "every rank its own device; compare with the schedule alone, {})\n",
               r.estimate.host.ranks, r.estimate.host.cores, r.estimate.host.node,
               core::format_seconds(r.estimate.pipeline_time_s));
  fmt::print("bubble fraction       {:.1f}% of the iteration idle on compute streams (mean over devices)\n",
             100.0 * res.bubble_fraction);
  fmt::print("link contention       {} of flow time lost to shared links; overlap slowdown {}\n",
             core::format_seconds(res.flow_contention_s), core::format_seconds(res.overlap_extra_s));
  fmt::print("events                {} ({} tasks)\n", res.events, res.tasks);
  if (r.simulated_replicas < s.dp)
    fmt::print("replicas              {} of {} dp replicas played out, one per class of identical replicas (--full "
               "plays out every one)\n", r.simulated_replicas, s.dp);
  else if (!r.full_reason.empty())
    fmt::print("replicas              all {} dp replicas played out: {}\n", s.dp, r.full_reason);
  double peak = 0;
  for (const auto& w : res.workers) peak = std::max(peak, w.peak_memory_bytes);
  fmt::print("peak memory           {} per device (analytical {}), {}\n\n", core::format_bytes(peak),
             core::format_bytes(r.estimate.peak_memory_bytes),
             r.fits ? "fits" : "DOES NOT FIT: " + r.not_fit_reason);
  std::vector<std::vector<std::string>> rows;
  const std::size_t limit = 32;
  for (std::size_t w = 0; w < res.workers.size() && w < limit; ++w) {
    const auto& st = res.workers[w];
    const std::string devs = plan::device_ranges(r.input.workers[w].devices);
    rows.push_back({std::to_string(w / r.input.dp), std::to_string(w % r.input.dp), devs,
                    core::format_seconds(st.busy_s), core::format_seconds(st.idle_s),
                    fmt::format("{:.1f}%", 100.0 * st.bubble_fraction), core::format_bytes(st.peak_memory_bytes),
                    core::format_seconds(st.peak_memory_time_s), std::to_string(st.max_weight_versions),
                    r.memory[w].fits ? "yes" : "NO"});
  }
  fmt::print("{}", core::render_table({"stage", "dp", "devices (tp group)", "busy", "idle", "bubble", "peak memory",
                                       "peak at", "weight versions", "fits"},
                                      rows));
  if (res.workers.size() > limit)
    fmt::print("... {} more tp groups (use --json for every device)\n", res.workers.size() - limit);
  fmt::print("\nbusy/idle: compute stream inside the measured window. Model and differences: docs/simulator.md.\n");
}

// `--bucket-mb`: a size in MiB (the range check is sim::check_simulation_options').
double parse_bucket_mib(const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) v = NAN;  // not a number: refused below, naming the text
  sim::check_simulation_options(std::nullopt, std::nullopt, v, text);
  return v;
}

void run_simulate(const SimulateArgs& a) {
  const int sources = !a.plan.empty() + !a.strategy.empty() + !a.strategy_file.empty();
  if (sources != 1) throw core::InputError("simulate: give exactly one of --plan, --strategy and --strategy-file");
  sim::check_simulation_options(a.iterations, a.overlap_slowdown, std::nullopt);
  if (!a.trace.empty()) check_output_path(a.trace, "simulate: --trace");
  const double bucket_mib = a.bucket_mib.empty() ? 0.0 : parse_bucket_mib(a.bucket_mib);
  // Model, cluster and seq: the flags, else the plan file's (embedded definitions first: plan_source.hpp).
  const std::string file = a.plan.empty() ? a.strategy_file : a.plan;
  const PlanContext ctx = resolve_plan_context(file, {"simulate", a.model, a.cluster, a.seq});
  const model::Model& m = ctx.model;
  const hw::Cluster& c = ctx.cluster;
  cost::Strategy s = !a.strategy.empty() ? cost::parse_strategy(a.strategy) : cost::load_strategy_file(file);
  s = cost::complete_strategy(s, m, c);
  sim::CostSimOptions opt;
  opt.iterations = a.iterations.value_or(0);          // 0 = the schedule's default
  opt.overlap_slowdown = a.overlap_slowdown.value_or(0);  // 0 = the cost model's constant
  opt.full = a.full;
  // The bucket size is a cost constant, so the simulated and the analytical figures use the same partition.
  cost::CostConstants constants = cost::builtin_constants();
  if (bucket_mib > 0) {
    constants.dp_bucket_bytes = bucket_mib * core::kMiB;
    opt.cost.constants = &constants;
  }
  if (a.memory_headroom_given)
    opt.cost.memory_headroom = cost::parse_memory_headroom(a.memory_headroom, "simulate: --memory-headroom");
  std::optional<cost::Profile> profile;
  if (!a.profile.empty()) {
    profile = cost::load_profile_file(a.profile);
    opt.cost.profile = &*profile;
  }
  if (const auto p = engine_from_flag(a.engine, "simulate: --engine"))
    apply_engine_flag(*p, m, c, s, &opt.cost, "simulate", cost::strategy_text_keys(a.strategy));
  // Stages of different widths (per-stage plans, every schedule): the stage-by-stage replay.
  const PerStageSimFlags flags{a.json, !a.trace.empty(), a.full, a.iterations.has_value(),
                              a.overlap_slowdown.has_value()};
  if (simulate_per_stage(m, c, s, opt.cost, flags)) return;
  sim::SimOptions so;
  so.keep_timeline = !a.trace.empty();
  so.record_memory_timeline = !a.trace.empty();
  const double passes = sim::check_simulation_size(s, opt);  // InputError past 1e8 passes (hours)
  if (passes > 4e5) std::fprintf(stderr, "simulate: playing out %.0f micro-batch passes...\n", passes);
  const auto r = sim::simulate(m, c, s, opt, so);
  if (!a.trace.empty()) {
    std::ofstream f(a.trace);
    if (!f) throw core::InputError("simulate: --trace: cannot write '" + a.trace + "'");
    sim::write_chrome_trace(r.input, r.result, f);
    if (!f) throw core::InputError("simulate: --trace: error writing '" + a.trace + "'");
    std::fprintf(stderr, "simulate: trace written to %s (open in https://ui.perfetto.dev)\n", a.trace.c_str());
  }
  if (a.json) fmt::print("{}\n", core::dump_json(sim::simulation_report_json(m, c, s, r)));
  else print_human(m, c, s, r);
}

}  // namespace

void register_simulate_command(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand(
      "simulate",
      "Simulate one training iteration task by task (discrete events): forward/backward/recompute per micro-batch\n"
      "and chunk, TP collectives, pipeline sends, DP gradient buckets overlapped with backward, ZeRO gathers,\n"
      "optimizer step; links shared by concurrent transfers. Prints the iteration time next to the analytical\n"
      "estimate, busy/idle and bubble per device, peak memory per device and when it happens.\n"
      "Examples:\n"
      "  strata simulate --model gpt3-175b --cluster dgx-a100:128 \\\n"
      "      --strategy \"tp=8,pp=16,dp=8,mbs=1,gbs=1536\" --trace gpt3.json\n"
      "  strata plan --model gpt2-small --cluster dgx-a100:1 --gbs 8 --json plan.json\n"
      "  strata simulate --plan plan.json --json\n"
      "Schedules: gpipe, 1f1b, interleaved (v>1), pipedream, 2bw (see docs/simulator.md).");
  cmd->add_option("--plan", a->plan, "Plan file from `strata plan --json` (simulates its best strategy; model and "
                                     "cluster from the file unless given)");
  cmd->add_option("--model", a->model, "Built-in model name (strata models) or a model JSON file");
  cmd->add_option("--cluster", a->cluster, "Cluster preset, 'node-type:count[+node-type:count]' or a cluster JSON file");
  cmd->add_option("--strategy", a->strategy, "Strategy as key=value pairs (docs/strategy.md), e.g. "
                                             "\"dp=2,tp=4,pp=2,gbs=64,schedule=1f1b\"");
  cmd->add_option("--strategy-file", a->strategy_file, "Strategy JSON file (or a plan file)");
  add_engine_option(cmd, &a->engine, "simulate the strategy with its stack traits; exit 2 naming what it cannot run");
  cmd->add_option("--seq", a->seq, "Sequence length (default: the model's, or the plan's)")
      ->transform(integer_in(core::limits::kSeq));
  cmd->add_option("--iterations", a->iterations,
                  "Batches to simulate (default 1 for flush schedules; 4 for pipedream/2bw, whose iteration time is "
                  "the steady state between batch 1 and batch N-1)")
      ->transform(integer_in(core::limits::kIterations));
  cmd->add_option("--trace", a->trace, "Write a Chrome trace-event JSON here (one process per GPU, threads for the "
                                       "compute and communication streams; open in Perfetto)");
  cmd->add_option("--overlap-slowdown", a->overlap_slowdown,
                  "Compute slowdown while DP traffic overlaps it (default: the cost model's constant, 1.3)")
      ->check(number_in(core::limits::kOverlapSlowdown));
  cmd->add_option("--profile", a->profile,
                  "Measured profile JSON (`strata profile`): task durations from its rows, as in `strata estimate`");
  cmd->add_option("--bucket-mb", a->bucket_mib,
                  "DP gradient bucket size in MiB, as in `strata run` (default: the cost model's dp_bucket_bytes, "
                  "50e6 bytes = 47.7 MiB; at most 16 buckets per chunk)")
      ->check(number_in(core::limits::kBucketMib));
  add_memory_headroom_option(cmd, &a->memory_headroom, &a->memory_headroom_given,
                             "a device whose simulated peak exceeds the rest is reported as not fitting");
  cmd->add_flag("--full", a->full,
                "Play out every data-parallel replica. Default: one representative per class of identical replicas "
                "(same devices' topology and GPU types), with the DP/ZeRO collectives timed over the full group; "
                "the two agree (docs/simulator.md, Scale). A --trace always plays out every replica");
  cmd->add_flag("--json", a->json, "Print JSON (iteration_time_s, analytical_iteration_time_s, bubble_fraction, "
                                   "fits, peak_memory_bytes[per device], peak_memory_time_s[], devices[])");
  cmd->callback([a] { run_simulate(*a); });
}

}  // namespace strata::cli
