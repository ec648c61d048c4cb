// cli/cmd_sched: `strata allocate` (one policy solve: the allocation X for a throughputs file) and
// `strata schedule` (the round-based cluster simulation over a trace or a generated workload). Formats and
// formulas: docs/scheduler.md.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <fstream>
#include <string>

#include "commands.hpp"
#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/sched/planner_throughputs.hpp"
#include "strata/sched/policy.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::cli {
namespace {

using namespace strata::sched;

struct CommonArgs {
  std::string policy = "max-min-fairness", price = "on-demand";
  std::string conventions = "gavel", normalization, agnostic_split;  // empty: the conventions' default
  bool space_sharing = false, placement_sensitive = false, no_water_filling = false, water_filling = false;
  bool json = false;
  bool from_planner = false;
  double budget = -1;
};

struct AllocateArgs : CommonArgs {
  std::string throughputs;
};

struct ScheduleArgs : CommonArgs {
  std::string cluster, trace, generate, throughputs, csv, measure, reallocate = "on-change", leftover;
  std::string reset_interval_s;  // empty: the conventions' default
  double round_s = 360, restart_s = 5;
  std::string price_trace;           // cloud chapter: time-varying prices and spot preemptions
  bool no_price_switching = false;   // keep each decision's prices (bill at the trace's)
  std::string backend = "simulate";  // simulate | slurm (drive a live Slurm cluster)
  std::string slurm_command = "sleep 3600", slurm_script;
  std::vector<std::string> slurm_sbatch_args;
  bool slurm_dry_run = false;        // print the Slurm commands instead of running them
  int slurm_rounds = 0;              // stop after this many rounds (0 = when every job is done)
  double slurm_timeout_s = 30;       // per Slurm command
};

void add_common(CLI::App* sub, CommonArgs& a) {
  sub->add_option("--policy", a.policy,
                  "Policy (default max-min-fairness): " + core::join(policy_names()) + "; 'las' = max-min-fairness");
  sub->add_flag("--space-sharing", a.space_sharing, "Also consider the job pairs of the \"pairs\" list (Gavel SS)");
  sub->add_flag("--placement-sensitive", a.placement_sensitive,
                "Separate consolidated / unconsolidated columns per GPU type (jobs' unconsolidated_throughputs)");
  sub->add_flag("--no-water-filling", a.no_water_filling,
                "max-min-fairness: solve the single LP only (the default with --conventions gavel)");
  sub->add_flag("--water-filling", a.water_filling,
                "max-min-fairness: water-filling to Pareto efficiency (the default with --conventions strata)");
  sub->add_option("--conventions", a.conventions,
                  "gavel (default: Gavel's simulator — proportional normalisation, agnostic = each type in proportion "
                  "to its count, single-LP LAS, 1920 s reset interval, leftover GPUs, Gavel's generator) or strata "
                  "(strata's earlier conventions); docs/scheduler.md");
  sub->add_option("--normalization", a.normalization,
                  "Reference throughput for fairness: proportional (Gavel: each type by its count) or equal-share "
                  "(an equal time share of every type); default per --conventions");
  sub->add_option("--agnostic-split", a.agnostic_split,
                  "How agnostic policies split a job's time over types: proportional (Gavel: by type count) or "
                  "fill-order (types filled in listed order); default per --conventions");
  sub->add_option("--price", a.price, "Price column for cost policies and reports: on-demand (default) or spot");
  sub->add_option("--budget", a.budget, "makespan-budget: total budget in $")->check(number_in(core::limits::kBudget));
  sub->add_flag("--from-planner", a.from_planner,
                "Predict each job's throughputs with strata's planner from its \"model\" and \"global_batch\" "
                "(one best-plan query per model, GPU type and GPU count, cached)");
  sub->add_flag("--json", a.json, "Machine-readable JSON on stdout");
}

PolicyOptions policy_options(const CommonArgs& a) {
  PolicyOptions o;
  apply_conventions(parse_conventions(a.conventions), o);
  o.space_sharing = a.space_sharing;
  o.placement_sensitive = a.placement_sensitive;
  if (a.water_filling && a.no_water_filling)
    throw core::InputError("--water-filling and --no-water-filling: give at most one");
  if (a.water_filling) o.water_filling = true;
  if (a.no_water_filling) o.water_filling = false;
  if (a.normalization == "proportional") o.normalization = Normalization::kProportional;
  else if (a.normalization == "equal-share") o.normalization = Normalization::kEqualShare;
  else if (!a.normalization.empty())
    throw core::InputError("--normalization: '" + a.normalization + "' (valid: proportional, equal-share)");
  if (a.agnostic_split == "proportional") o.agnostic_split = AgnosticSplit::kProportional;
  else if (a.agnostic_split == "fill-order") o.agnostic_split = AgnosticSplit::kFillOrder;
  else if (!a.agnostic_split.empty())
    throw core::InputError("--agnostic-split: '" + a.agnostic_split + "' (valid: proportional, fill-order)");
  if (a.price == "on-demand") o.price = PriceKind::kOnDemand;
  else if (a.price == "spot") o.price = PriceKind::kSpot;
  else throw core::InputError("--price: '" + a.price + "' (valid: on-demand, spot)");
  o.budget_usd = a.budget;
  if (a.budget >= 0 && a.policy.find("makespan-budget") == std::string::npos)
    throw core::InputError(fmt::format("--budget: applies to the makespan-budget policy only, not to '{}'",
                                       core::printable(a.policy)));
  return o;
}

void fill_planner(Problem& p, const CommonArgs& a, const std::string& origin) {
  if (a.from_planner) {
    const auto catalog = hw::builtin_catalog();
    fill_throughputs_from_planner(p, catalog, [](int done, int total) {
      fmt::print(stderr, "\rplanner: {}/{} throughput queries", done, total);
      if (done == total) fmt::print(stderr, "\n");
    });
  }
  validate_problem(p, origin);
}

std::vector<std::string> type_names_of(const Problem& p) {
  std::vector<std::string> out;
  for (const auto& t : p.types) out.push_back(t.name);
  return out;
}

// Every --cluster type must have throughputs in the job-type table (else no generated job could run there).
void check_types_in_table(const std::vector<WorkerType>& cluster, const JobTypeTable& table, const std::string& origin) {
  for (const auto& t : cluster)
    if (table.types.type_index(t.name) < 0)
      throw core::InputError(fmt::format("schedule: --cluster: GPU type '{}' is not in the job-type table {} (its "
                                         "types: {})",
                                         t.name, origin, core::join(type_names_of(table.types))));
}

// makespan-budget bounds each allocation's cost, not what the simulated cluster spends (re-solves, restarts, and
// for the agnostic form the real throughputs): say when the run went over. True when it did.
bool warn_if_over_budget(const SimOptions& o, const SimResult& r) {
  const double budget = o.policy_options.budget_usd, spent = r.metrics.total_cost_usd;
  if (o.policy.kind != PolicyKind::kMakespanBudget || !(spent > budget * (1 + 1e-9))) return false;
  fmt::print(stderr, "strata: warning: --budget ${:.2f} exceeded: the simulated schedule spent ${:.2f} ({:+.1f}%){}\n",
             budget, spent, 100.0 * (spent / budget - 1),
             o.policy.agnostic ? " (the agnostic policy budgets with each job's mean throughput, not the real one)" : "");
  return true;
}

std::string num(double v) { return fmt::format("{:.4f}", v); }

void run_allocate(const AllocateArgs& a) {
  if (a.throughputs.empty()) throw core::InputError("allocate: --throughputs FILE is required");
  const Policy policy = parse_policy(a.policy);
  Problem p = load_problem(a.throughputs, /*require_workers=*/true);
  fill_planner(p, a, a.throughputs);
  const Allocation x = allocate(p, policy, policy_options(a));
  const auto frac = job_type_fractions(p, x);
  const auto eff = effective_throughputs(p, x);
  const auto norm = normalized_throughputs(p, x, policy_options(a).normalization);
  if (a.json) {
    fmt::print("{}\n", allocation_report_json(p, policy, x, policy_options(a)).dump(2));
    return;
  }
  std::vector<std::string> header{"job"};
  for (const auto& t : p.types) header.push_back("X " + t.name);
  header.insert(header.end(), {"throughput", "normalized"});
  std::vector<std::vector<std::string>> rows;
  for (int m = 0; m < p.num_jobs(); ++m) {
    std::vector<std::string> r{p.jobs[m].name};
    for (int t = 0; t < p.num_types(); ++t) r.push_back(num(frac[m][t]));
    r.push_back(num(eff[m]));
    r.push_back(num(norm[m]));
    rows.push_back(std::move(r));
  }
  fmt::print("policy {}: {} = {:.6g} ({} LP/MILP solves)\n", policy_name(policy), x.objective_name, x.objective,
             x.lp_solves);
  fmt::print("{}", core::render_table(header, rows));
  if (!x.note.empty()) fmt::print(stderr, "strata: warning: {}\n", x.note);
}

std::pair<int, int> parse_measure(const std::string& s) {
  const auto colon = s.find(':');
  try {
    if (colon == std::string::npos) throw std::invalid_argument("");
    std::size_t used = 0;
    const int from = std::stoi(s.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument("");
    const std::string rest = s.substr(colon + 1);
    const int to = rest.empty() ? -1 : std::stoi(rest, &used);
    if (!rest.empty() && used != rest.size()) throw std::invalid_argument("");
    if (from < 0 || (to >= 0 && to <= from)) throw std::invalid_argument("");
    return {from, to};
  } catch (const std::exception&) {
    throw core::InputError("--measure: '" + s + "' (expected FROM:TO job indices in arrival order, TO empty = end)");
  }
}

// --backend slurm: drives a live Slurm cluster with each round's actions (or, --slurm-dry-run, prints them as a
// shell script). Returns what to do after the simulation (argument: it failed): cancel what is left in Slurm.
std::function<void(bool)> slurm_backend(const ScheduleArgs& a, SimOptions& o) {
  if (a.backend == "simulate") {
    if (a.slurm_dry_run || a.slurm_rounds != 0 || !a.slurm_script.empty() || !a.slurm_sbatch_args.empty())
      throw core::InputError("--slurm-*: only with --backend slurm");
    return [](bool) {};
  }
  if (a.backend != "slurm") throw core::InputError("--backend: '" + a.backend + "' (valid: simulate, slurm)");
  if (a.slurm_rounds < 0) throw core::InputError("--slurm-rounds: must be >= 0");
  if (a.space_sharing)
    throw core::InputError("--backend slurm: --space-sharing is not supported (two Slurm jobs on one GPU need a "
                           "shared gres)");
  if (!(a.slurm_timeout_s > 0)) throw core::InputError("--slurm-timeout: must be > 0");
  SlurmOptions so{a.slurm_command, a.slurm_sbatch_args};
  std::shared_ptr<std::ofstream> file;
  if (!a.slurm_script.empty()) {
    file = std::make_shared<std::ofstream>(a.slurm_script, std::ios::binary);
    if (!*file) throw core::InputError("--slurm-script: cannot write '" + a.slurm_script + "'");
    *file << "#!/bin/sh\n# strata schedule --backend slurm" << (a.slurm_dry_run ? " --slurm-dry-run" : "")
          << ": one block per round (docs/scheduler.md)\n";
  }
  if (a.slurm_dry_run) {
    auto state = std::make_shared<SlurmState>();
    auto emit = [file](const std::string& text) {
      if (file) *file << text << std::flush;
      else fmt::print("{}", text);
    };
    o.on_round = [state, so, emit](double now, const std::vector<RoundPlacement>& placed) {
      std::string text;
      for (const auto& act : slurm_round_actions(*state, placed, so)) text += dry_run_line(act, *state) + "\n";
      for (const auto& p : placed)
        if (p.end_s >= 0)
          for (const auto& act : slurm_cancel(*state, p.job))
            text += fmt::format("{}  # done at +{:.0f} s\n", dry_run_line(act, *state), p.end_s);
      std::string head = fmt::format("# round at {:.0f} s, placed:", now);
      for (const auto& p : placed) head += fmt::format(" {}={}:{}", p.job, p.type, p.gpus);
      emit(head + "\n" + text);
    };
    return [state, emit](bool) {
      std::string text;
      for (const auto& act : slurm_cancel(*state)) text += dry_run_line(act, *state) + "\n";
      if (!text.empty()) emit("# end\n" + text);
    };
  }
  auto live = std::make_shared<SlurmLive>();
  live->options = so;
  live->round_s = o.round_s;
  live->command_timeout_s = a.slurm_timeout_s;
  live->log = file.get();
  o.on_round = [live, file](double now, const std::vector<RoundPlacement>& placed) {
    slurm_live_round(*live, now, placed);
  };
  return [live, file](bool failed) {
    if (!failed) return slurm_live_finish(*live);
    try {
      for (const auto& act : slurm_cancel(live->state))
        if (!live->state.jobs[act.job].id.empty())
          run_command({"scancel", live->state.jobs[act.job].id}, live->command_timeout_s);
    } catch (...) {
    }
  };
}

// The simulation, stopped after `rounds` rounds of simulated (and, live, wall-clock) time when > 0; the back-end's
// `finish` runs either way (on an error: cancel what was submitted, leave no Slurm job behind).
SimResult simulate_with_backend(const Problem& trace, SimOptions& o, int rounds, const std::function<void(bool)>& finish) {
  if (rounds > 0) {
    double first = trace.jobs.empty() ? 0.0 : trace.jobs[0].arrival_s;
    for (const auto& j : trace.jobs) first = std::min(first, j.arrival_s);
    o.max_sim_s = first + (rounds - 0.5) * o.round_s;
  }
  SimResult r;
  try {
    r = simulate(trace, o);
  } catch (...) {
    finish(true);
    throw;
  }
  finish(false);
  return r;
}

std::string hours(double s) { return fmt::format("{:.2f} h", s / 3600.0); }

// The trace to simulate: --trace FILE (on --cluster when given) or a --generate'd workload.
Problem schedule_trace(const ScheduleArgs& a, Conventions conv) {
  Problem trace;
  if (!a.trace.empty()) {
    trace = load_problem(a.trace, /*require_workers=*/false);
    if (!a.cluster.empty()) trace = with_worker_types(trace, parse_cluster_spec(a.cluster));
    else if (std::any_of(trace.types.begin(), trace.types.end(), [](const WorkerType& t) { return t.count == 0; }))
      throw core::InputError(a.trace + ": no \"workers\"; give --cluster \"TYPE:COUNT,...\"");
    for (const auto& j : trace.jobs)
      if (j.steps <= 0 && !a.from_planner)
        throw core::InputError(fmt::format("{}: job '{}' has no \"steps\" (needed to simulate it)", a.trace, j.name));
    fill_planner(trace, a, a.trace);
  } else {
    if (a.cluster.empty()) throw core::InputError("schedule: --generate needs --cluster \"TYPE:COUNT,...\"");
    JobTypeTable table = a.throughputs.empty() ? default_job_types() : load_job_types(a.throughputs);
    const auto cluster = parse_cluster_spec(a.cluster);
    check_types_in_table(cluster, table, a.throughputs.empty() ? "data/sched/gavel_job_types.json" : a.throughputs);
    if (a.from_planner) {
      Problem types = with_worker_types(table.types, cluster);
      for (auto& j : types.jobs) j.scale_factor = 1;
      fill_throughputs_from_planner(types, hw::builtin_catalog(), {});
      table.types = types;
    }
    GenerateSpec spec = parse_generate_spec(a.generate);
    spec.conventions = conv;
    trace = generate_trace(table, cluster, spec);
  }
  return trace;
}

// The simulator options that follow --conventions (issue 39), with each convention's own flag on top.
SimOptions convention_options(const ScheduleArgs& a, Conventions conv) {
  SimOptions o;
  apply_conventions(conv, o);
  o.policy = parse_policy(a.policy);
  const double tol = o.policy_options.search_rel_tol;
  o.policy_options = policy_options(a);
  o.policy_options.search_rel_tol = tol;
  if (!a.reset_interval_s.empty()) {
    char* end = nullptr;
    const double v = std::strtod(a.reset_interval_s.c_str(), &end);
    if (*end != '\0' || !std::isfinite(v) || v < 0)
      throw core::InputError("--reset-interval-s: '" + a.reset_interval_s +
                             "' (expected a finite number of seconds >= 0; 0 = re-solve on every change)");
    o.reset_interval_s = v;
  }
  if (a.leftover == "on") o.place_leftover = true;
  else if (a.leftover == "off") o.place_leftover = false;
  else if (!a.leftover.empty()) throw core::InputError("--leftover: '" + a.leftover + "' (valid: on, off)");
  return o;
}

void run_schedule(const ScheduleArgs& a) {
  if (a.trace.empty() == a.generate.empty())
    throw core::InputError("schedule: give exactly one of --trace FILE or --generate \"jobs=N,rate=R,seed=S\"");
  if (!(a.round_s > 0)) throw core::InputError("--round-s: must be > 0");
  if (a.restart_s < 0 || a.restart_s >= a.round_s) throw core::InputError("--restart-s: must be in [0, round length)");
  if (!a.csv.empty()) check_output_path(a.csv, "schedule: --csv");
  const Conventions conv = parse_conventions(a.conventions);
  SimOptions o = convention_options(a, conv);
  o.round_s = a.round_s;
  o.restart_overhead_s = a.restart_s;
  if (a.reallocate == "on-change") o.reallocate = Reallocate::kOnChange;
  else if (a.reallocate == "every-round") o.reallocate = Reallocate::kEveryRound;
  else throw core::InputError("--reallocate: '" + a.reallocate + "' (valid: on-change, every-round)");
  if (!a.measure.empty()) std::tie(o.measure_from, o.measure_to) = parse_measure(a.measure);
  if (!a.price_trace.empty()) o.price_trace = load_price_trace(a.price_trace);
  o.switch_on_price_change = !a.no_price_switching;
  const auto slurm_finish = slurm_backend(a, o);
  const Problem trace = schedule_trace(a, conv);
  // Progress on stderr at most once a second (only long runs print anything).
  const auto start = std::chrono::steady_clock::now();
  auto last = std::make_shared<double>(0.0);
  o.progress = [start, last](double now, int done, int total) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (wall - *last < 1.0) return;
    *last = wall;
    fmt::print(stderr, "\rsimulated {:.1f} h, {}/{} jobs done ({:.0f} s)", now / 3600.0, done, total, wall);
  };
  const SimResult r = simulate_with_backend(trace, o, a.slurm_rounds, slurm_finish);
  if (*last > 0) fmt::print(stderr, "\n");
  const bool over_budget = warn_if_over_budget(o, r);
  if (!a.csv.empty()) write_output(a.csv, jobs_csv(r), "schedule: --csv");
  if (a.json) {
    core::OrderedJson j = to_json(r);
    core::OrderedJson head;
    head["policy"] = policy_name(o.policy);
    head["round_s"] = o.round_s;
    head["jobs"] = trace.num_jobs();
    head["metrics"] = j["metrics"];
    if (o.policy.kind == PolicyKind::kMakespanBudget) {
      head["budget_usd"] = o.policy_options.budget_usd;
      head["over_budget"] = over_budget;
    }
    head["jobs_detail"] = j["jobs"];
    fmt::print("{}\n", head.dump(2));
    return;
  }
  const SimMetrics& m = r.metrics;
  std::string cluster_text;
  for (const auto& t : trace.types) cluster_text += fmt::format("{}{}:{}/{}", cluster_text.empty() ? "" : ",", t.name, t.count, t.per_server);
  fmt::print("policy {} on {}: {} jobs, {} measured, {} finished\n", policy_name(o.policy), cluster_text,
             trace.num_jobs(), m.jobs_measured, m.jobs_finished);
  fmt::print("{}", core::render_table({"metric", "value"},
                                      {{"average JCT", hours(m.avg_jct_s)},
                                       {"p50 JCT", hours(m.p50_jct_s)},
                                       {"p90 JCT", hours(m.p90_jct_s)},
                                       {"p99 JCT", hours(m.p99_jct_s)},
                                       {"makespan", hours(m.makespan_s)},
                                       {"total cost", fmt::format("${:.2f}", m.total_cost_usd)},
                                       {"utilization", fmt::format("{:.1f} %", 100 * m.utilization)},
                                       {"average slowdown", fmt::format("{:.2f}", m.avg_slowdown)},
                                       {"max slowdown", fmt::format("{:.2f}", m.max_slowdown)},
                                       {"Jain fairness (slowdown)", fmt::format("{:.3f}", m.jain_fairness)},
                                       {"rounds", std::to_string(m.rounds)},
                                       {"re-allocations", std::to_string(m.reallocations)},
                                       {"LP/MILP solves", std::to_string(m.lp_solves)}}));
  if (m.slo_jobs > 0) fmt::print("SLO violations: {} of {} measured jobs with an SLO\n", m.slo_violations, m.slo_jobs);
  if (o.price_trace)
    fmt::print("price trace: {} price changes, {} spot preemptions, {} instance-type switches\n", m.price_changes,
               m.preemptions, m.type_switches);
}

}  // namespace

void register_sched_commands(CLI::App& app) {
  auto aa = std::make_shared<AllocateArgs>();
  auto* alloc = app.add_subcommand(
      "allocate",
      "Solve one Gavel scheduling policy: print the allocation X (time fraction of each job on each GPU type), "
      "effective and normalised throughput.\n\nExample:\n  strata allocate --policy max-min-fairness "
      "--throughputs examples/sched_throughputs.json\nFile format: docs/scheduler.md");
  alloc->add_option("--throughputs", aa->throughputs,
                    "Throughputs file: {\"workers\": {type: count}, \"jobs\": [{name, throughputs: {type: steps/s}, "
                    "scale_factor, weight, steps, ...}], \"pairs\", \"prices\", \"entities\"}")
      ->required();
  add_common(alloc, *aa);
  alloc->callback([aa] { run_allocate(*aa); });

  auto sa = std::make_shared<ScheduleArgs>();
  auto* sched = app.add_subcommand(
      "schedule",
      "Simulate a GPU cluster under a policy with Gavel's round-based mechanism and print JCT, makespan, cost, "
      "utilisation and fairness.\n\nExamples:\n  strata schedule --policy max-min-fairness --cluster "
      "\"v100:36,p100:36,k80:36\" --generate \"jobs=500,rate=4,seed=1\"\n  strata schedule --policy fifo --trace "
      "examples/sched_throughputs.json --cluster v100:8/8");
  sched->add_option("--cluster", sa->cluster,
                    "GPU types and counts: TYPE:COUNT[/GPUS_PER_SERVER],... (default 4 GPUs per server), e.g. "
                    "\"v100:36,p100:36,k80:36\"");
  sched->add_option("--trace", sa->trace,
                    "Trace file: the throughputs-file format with \"arrival_s\" and \"steps\" per job");
  sched->add_option("--generate", sa->generate,
                    "Generated workload \"jobs=N,rate=JOBS_PER_HOUR,seed=S[,multi=1][,pairs=K][,slo=1][,entities=K]"
                    "[,priority=F]\" (rate=0: all jobs at t=0; multi=1: 70% 1 GPU, 25% 2-4, 5% 8; pairs: space-sharing "
                    "pairs per job; slo: SLO 1.2/2/10 x duration; entities: K weighted entities; priority: fraction of "
                    "weight-5 jobs)");
  sched->add_option("--throughputs", sa->throughputs,
                    "Job-type table for --generate: strata's format (default: data/sched/gavel_job_types.json, thesis "
                    "Table 6.1) or Gavel's simulation_throughputs.json (26 measured job types, 1-8 GPUs, pairs)");
  sched->add_option("--reset-interval-s", sa->reset_interval_s,
                    "Re-solve the policy at most this often, seconds (gavel: 1920, Gavel's minimum time between "
                    "allocation resets; strata: 0 = on every arrival/completion)");
  sched->add_option("--leftover", sa->leftover,
                    "on: jobs not placed by the priority pass run on leftover GPUs (gavel's default); off: only cells "
                    "with X > 0 run (strata)");
  sched->add_option("--round-s", sa->round_s, "Round length in seconds (default 360 = 6 min)")
      ->check(number_in(core::limits::kRoundS));
  sched->add_option("--restart-s", sa->restart_s,
                    "Checkpoint+restore cost when a job's lease is not renewed, seconds (default 5)")
      ->check(number_in({0, core::limits::kRoundS.hi}));
  sched->add_option("--reallocate", sa->reallocate,
                    "When to re-solve the policy: on-change (arrival/completion, default) or every-round");
  sched->add_option("--measure", sa->measure, "Jobs (arrival order) the metrics cover, FROM:TO (default all)");
  sched->add_option("--csv", sa->csv, "Write one CSV row per job to this file");
  sched->add_option("--price-trace", sa->price_trace,
                    "Time-varying on-demand/spot prices per GPU type and spot preemptions (JSON, docs/scheduler.md; "
                    "example: examples/sched_price_trace.json); the policy is re-solved when prices change");
  sched->add_option("--backend", sa->backend,
                    "simulate (default) or slurm: drive a live Slurm cluster with wall-clock rounds — sbatch with the "
                    "GPU type as typed gres gpu:TYPE:N, scontrol requeuehold/update/release, scancel (Slurm's commands "
                    "on PATH, SLURM_CONF as usual; docs/scheduler.md)");
  sched->add_flag("--slurm-dry-run", sa->slurm_dry_run,
                  "With --backend slurm: print the Slurm commands as a shell script instead of running them");
  sched->add_option("--slurm-command", sa->slurm_command,
                    "With --backend slurm: the command each Slurm job runs, resuming from its checkpoint "
                    "(default 'sleep 3600')");
  sched->add_option("--slurm-sbatch-arg", sa->slurm_sbatch_args,
                    "With --backend slurm: an extra sbatch argument, e.g. --slurm-sbatch-arg=--partition=gpu "
                    "(repeatable)");
  sched->add_option("--slurm-script", sa->slurm_script,
                    "With --backend slurm: write the commands to this file (dry run: instead of stdout; live: a log "
                    "of every command run)");
  sched->add_option("--slurm-rounds", sa->slurm_rounds,
                    "With --backend slurm: stop after this many rounds and cancel what is left (default: run until "
                    "every job is done)")
      ->transform(integer_in({0, 1000000}));
  sched->add_option("--slurm-timeout", sa->slurm_timeout_s,
                    "With --backend slurm: seconds each Slurm command may take (default 30)")
      ->check(number_in(core::limits::kTimeoutS));
  sched->add_flag("--no-price-switching", sa->no_price_switching,
                  "With --price-trace: keep each decision's prices until the job set changes (bill at the trace's)");
  add_common(sched, *sa);
  sched->callback([sa] { run_schedule(*sa); });
}

}  // namespace strata::cli
