// bench/bench_sched_gavel: Gavel's own experiments with Gavel's conventions (issue 39) — steady-state JCT of a
// window of jobs deep into a continuous trace, several seeds, on Gavel's 26 measured job types
// (../shared/gavel/simulation_throughputs.json) and 36 V100 + 36 P100 + 36 K80 — each figure printed beside the
// paper's/thesis' — and the speed of whole simulations: a 2,048-job trace to completion under every policy,
// CPU seconds, median of 3.
// Usage: bench_sched_gavel [--only las|multi|ftf|makespan|ss|hier|speed|<policy>] [--jobs N] [--window FROM:TO]
//                          [--seeds K] [--repeat R] [--rates R1/R2/...] [--static-jobs N] [--cold 1]
//                          [--throughputs FILE] [--detail 1] [--spread-slow 1] [--iso-by-size 1]
//                          [--pairs K]
//   defaults: --window 4000:5000 --jobs 3×TO --seeds 3 (Gavel's: jobs 4000–5000 of a continuous trace, 3 seeds;
//   the trace keeps arriving past the window and the simulation stops once the window's jobs are done, so the
//   window sees a loaded cluster, not a draining one), --static-jobs 200 (makespan), --repeat 3 (speed table),
//   --pairs 4 (ss: each job's candidate partners among the later jobs of its size),
//   --cold 1: every LP solved cold (no warm starts across re-solves; for before/after timings); --spread-slow 1:
//   a job spread over servers runs at its unconsolidated speed (strata's convention; Gavel's simulator ignores
//   placement), and --iso-by-size 1: finish-time fairness' isolated share by job size (strata's; Gavel's is 1/n
//   of the cluster per job) — each restores this bench as it was before issue 39's follow-up.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "strata/core/text.hpp"
#include "strata/sched/simulate.hpp"

using namespace strata;
using namespace strata::sched;

namespace {

const char* kCluster = "v100:36,p100:36,k80:36";  // Gavel's simulated cluster (paper §7.2)

struct Args {
  std::string only, throughputs;
  int jobs = 0, from = 4000, to = 5000, seeds = 3, repeat = 3, static_jobs = 200, pairs = 4;
  bool cold = false;
  std::vector<double> rates;  // --rates: overrides an experiment's default sweep
};

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

JobTypeTable table_of(const Args& a) {
  if (!a.throughputs.empty()) return load_job_types(a.throughputs);
  const auto shared = std::filesystem::path(STRATA_SOURCE_DIR) / ".." / "shared" / "gavel" / "simulation_throughputs.json";
  if (std::filesystem::exists(shared)) return load_job_types(shared.string());
  fmt::print("(no {}: strata's 5-type table instead of Gavel's 26 types)\n", shared.string());
  return default_job_types();
}

// The cluster with on-demand prices from strata's table (Gavel's file has none; cost policies need them).
std::vector<WorkerType> priced_cluster() {
  auto cluster = parse_cluster_spec(kCluster);
  const Problem prices = default_job_types().types;
  for (auto& t : cluster) {
    const int i = prices.type_index(t.name);
    if (i >= 0) t.price_on_demand = prices.types[i].price_on_demand, t.price_spot = prices.types[i].price_spot;
  }
  return cluster;
}

Problem workload(const JobTypeTable& table, const std::string& spec) {
  return generate_trace(table, priced_cluster(), parse_generate_spec(spec));
}

bool g_cold = false;    // --cold
bool g_detail = false;  // --detail 1: per-run utilisation, idle GPUs while jobs wait, JCT by job size
bool g_spread_slow = false;  // --spread-slow 1: spread jobs at unconsolidated speed (strata; the bench before the fix)
bool g_iso_by_size = false;  // --iso-by-size 1: FTF's isolated share by job size (strata; the bench before the fix)

// One simulated round as --detail sees it: its start, the GPUs and jobs it placed.
struct RoundSeen {
  double now = 0;
  int gpus = 0, jobs = 0;
};

// --detail: over the window's span (first window arrival to the stop), the busy share of the GPUs, the rounds that
// left GPUs idle while jobs waited (placed < active), and the window's average JCT by job size (a co-located pair
// counts its GPUs twice: meant for runs without space sharing).
void print_detail(const Problem& t, const SimResult& r, const std::vector<RoundSeen>& rounds, const Args& a) {
  int gpus = 0;
  for (const auto& w : t.types) gpus += w.count;
  std::vector<double> arrive, finish;
  for (const auto& j : r.jobs) {
    arrive.push_back(j.arrival_s);
    if (j.completion_s >= 0) finish.push_back(j.completion_s);
  }
  std::sort(arrive.begin(), arrive.end());
  std::sort(finish.begin(), finish.end());
  const double from = t.jobs[a.from].arrival_s;
  double busy = 0, idle_waiting = 0, waiting = 0;
  int n = 0, idle_rounds = 0;
  for (const auto& rs : rounds) {
    if (rs.now < from) continue;
    const auto active = (std::upper_bound(arrive.begin(), arrive.end(), rs.now) - arrive.begin()) -
                        (std::upper_bound(finish.begin(), finish.end(), rs.now) - finish.begin());
    const double wait = std::max<double>(0, static_cast<double>(active) - rs.jobs);
    ++n, busy += rs.gpus, waiting += wait;
    if (wait > 0 && rs.gpus < gpus) ++idle_rounds, idle_waiting += gpus - rs.gpus;
  }
  std::map<int, std::pair<double, int>> by_size;
  for (int m = a.from; m < a.to; ++m)
    if (r.jobs[m].completion_s >= 0) by_size[r.jobs[m].scale_factor].first += r.jobs[m].jct_s / 3600, ++by_size[r.jobs[m].scale_factor].second;
  fmt::print("    detail: {} rounds, busy {:.1f} of {} GPUs, {:.0f} jobs waiting on average; {} rounds with idle GPUs while "
             "jobs wait ({:.1f} idle on average); JCT h by size:", n, n ? busy / n : 0, gpus, n ? waiting / n : 0,
             idle_rounds, idle_rounds ? idle_waiting / idle_rounds : 0);
  for (const auto& [sf, v] : by_size) fmt::print(" {}-GPU {:.1f} ({})", sf, v.first / v.second, v.second);
  fmt::print("\n");
}

SimOptions gavel_options(const std::string& policy) {
  SimOptions o;
  o.warm_start = !g_cold;
  apply_conventions(Conventions::kGavel, o);
  o.placement_affects_speed = g_spread_slow;
  if (g_iso_by_size) o.policy_options.isolated_share = IsolatedShare::kBySize;
  o.policy = parse_policy(policy);
  return o;
}

// Average JCT (h) and utilisation of the window, mean over seeds.
struct Point {
  double jct_h = 0, util = 0, slowdown = 0, cpu_s = 0;
};

Point steady(const JobTypeTable& table, const Args& a, const std::string& policy, double rate, bool multi,
             const std::string& extras = "", bool ss = false) {
  Point p;
  for (int seed = 0; seed < a.seeds; ++seed) {
    const Problem t = workload(table, fmt::format("jobs={},rate={},seed={},multi={}{}", a.jobs, rate, seed, multi ? 1 : 0, extras));
    SimOptions o = gavel_options(policy);
    o.policy_options.space_sharing = ss;
    o.measure_from = a.from;
    o.measure_to = a.to;
    o.stop_after_window = true;
    std::vector<RoundSeen> rounds;
    if (g_detail)
      o.on_round = [&](double now, const std::vector<RoundPlacement>& placed) {
        RoundSeen rs{now, 0, static_cast<int>(placed.size())};
        for (const auto& pl : placed) rs.gpus += pl.gpus;
        rounds.push_back(rs);
      };
    const double c0 = process_cpu_s();
    const SimResult res = simulate(t, o);
    const SimMetrics& m = res.metrics;
    p.cpu_s += process_cpu_s() - c0;
    if (g_detail) fmt::print("  {} seed {}:\n", policy, seed), print_detail(t, res, rounds, a);
    if (m.jobs_finished < m.jobs_measured)
      fmt::print("  (seed {}: {} of the window's {} jobs unfinished)\n", seed, m.jobs_measured - m.jobs_finished, m.jobs_measured);
    p.jct_h += m.avg_jct_s / 3600.0 / a.seeds;
    p.util += m.utilization / a.seeds;
    p.slowdown += m.avg_slowdown / a.seeds;
  }
  return p;
}

std::string f2(double v) { return fmt::format("{:.2f}", v); }

std::string trace_words(const Args& a) {
  return fmt::format("jobs {}..{} of a {}-job continuous trace, {} seeds", a.from, a.to, a.jobs, a.seeds);
}

// Paper Fig. 9 / thesis §5.6: LAS aware vs agnostic average JCT against the input rate; Gavel's gain is quoted at
// the rate where the agnostic policy has saturated and the aware one has not (the knee). Past its knee a policy's
// queue grows without bound, so its JCT depends on how deep in the trace the window lies (Gavel: jobs 4000–5000).
void las(const JobTypeTable& table, const Args& a, bool multi) {
  std::vector<double> rates = multi ? std::vector<double>{1.0, 2.0, 2.6, 3.0} : std::vector<double>{2.0, 4.0, 5.0, 5.6, 6.5};
  if (!a.rates.empty()) rates = a.rates;
  const double quoted_rate = multi ? 2.6 : 5.6;
  const char* quote = multi ? "2.2x" : "3.5x";
  fmt::print("\nLAS aware vs agnostic, continuous-{} ({}, {}); paper/thesis: {} at {} jobs/h\n",
             multi ? "multiple" : "single", kCluster, trace_words(a), quote, quoted_rate);
  std::vector<std::vector<std::string>> rows;
  double first_agn = 0, cpu = 0;
  bool knee_printed = false;
  for (double r : rates) {
    const Point aw = steady(table, a, "max-min-fairness", r, multi);
    const Point ag = steady(table, a, "max-min-fairness-agnostic", r, multi);
    cpu += aw.cpu_s + ag.cpu_s;
    if (first_agn == 0) first_agn = ag.jct_h;
    std::string note;
    if (!knee_printed && ag.jct_h > 2 * first_agn) note = "agnostic knee", knee_printed = true;
    rows.push_back({f2(r), f2(aw.jct_h), f2(ag.jct_h), f2(ag.jct_h / aw.jct_h) + "x", fmt::format("{:.0f} %", 100 * aw.util),
                    fmt::format("{:.0f} %", 100 * ag.util), std::abs(r - quoted_rate) < 1e-9 ? quote : "", note});
    fmt::print("  rate {:.2f}: aware {:.2f} h, agnostic {:.2f} h ({:.0f} + {:.0f} CPU-s)\n", r, aw.jct_h, ag.jct_h, aw.cpu_s, ag.cpu_s);
    std::fflush(stdout);
  }
  fmt::print("{}", core::render_table({"jobs/h", "aware h", "agnostic h", "gain", "util aware", "util agnostic", "paper", ""}, rows));
  fmt::print("({:.0f} CPU-s)\n", cpu);
}

// Paper Fig. 10 / thesis: finish-time fairness, aware vs agnostic (JCT 3x, FTF metric 2.8x).
void ftf(const JobTypeTable& table, const Args& a) {
  const double r = a.rates.empty() ? 2.6 : a.rates.front();  // LAS-multiple's quoted load
  const Point aw = steady(table, a, "finish-time-fairness", r, true);
  const Point ag = steady(table, a, "finish-time-fairness-agnostic", r, true);
  fmt::print("\nFinish-time fairness, continuous-multiple, {:.1f} jobs/h, {}\n", r, trace_words(a));
  fmt::print("{}", core::render_table({"metric", "aware", "agnostic", "gain", "thesis"},
                                      {{"average JCT h", f2(aw.jct_h), f2(ag.jct_h), f2(ag.jct_h / aw.jct_h) + "x", "3x"},
                                       {"avg slowdown (FTF proxy)", f2(aw.slowdown), f2(ag.slowdown),
                                        f2(ag.slowdown / aw.slowdown) + "x", "2.8x (FTF rho)"}}));
}

// Paper Fig. 11 / thesis: makespan policy vs FIFO on a static multi-GPU trace (2.5x vs FIFO).
void makespan(const JobTypeTable& table, const Args& a) {
  const int n = a.static_jobs;
  std::vector<std::vector<std::string>> rows;
  double base = 0;
  for (const char* pol : {"makespan", "fifo", "fifo-agnostic", "makespan-agnostic"}) {
    double mk = 0;
    for (int seed = 0; seed < a.seeds; ++seed) {
      const Problem t = workload(table, fmt::format("jobs={},rate=0,seed={},multi=1", n, seed));
      mk += simulate(t, gavel_options(pol)).metrics.makespan_s / 3600.0 / a.seeds;
    }
    if (base == 0) base = mk;
    rows.push_back({pol, f2(mk), f2(mk / base) + "x", std::string(pol) == "fifo-agnostic" ? "2.5x (vs FIFO)" : ""});
  }
  fmt::print("\nMakespan, static trace of {} multi-GPU jobs, {} seeds\n{}", n, a.seeds,
             core::render_table({"policy", "makespan h", "vs makespan", "thesis"}, rows));
}

// Thesis: space sharing on top of heterogeneity-aware LAS (1.4x single-GPU), measured pairs from Gavel's table.
void space_sharing(const JobTypeTable& table, const Args& a) {
  const double r = a.rates.empty() ? 5.6 : a.rates.front();
  const std::string pairs = fmt::format(",pairs={}", a.pairs);
  const Point aw = steady(table, a, "max-min-fairness", r, false, pairs);
  const Point ss = steady(table, a, "max-min-fairness", r, false, pairs, true);
  fmt::print("\nSpace sharing, LAS continuous-single {:.1f} jobs/h, {} measured pairs per job, {}\n", r, a.pairs, trace_words(a));
  fmt::print("{}", core::render_table({"aware h", "aware+SS h", "SS gain", "thesis"},
                                      {{f2(aw.jct_h), f2(ss.jct_h), f2(aw.jct_h / ss.jct_h) + "x", "1.4x"}}));
}

// Thesis: hierarchical fairness, agnostic loss of total normalised throughput (~17 %) once the cluster is full.
void hierarchical(const JobTypeTable& table) {
  std::vector<std::vector<std::string>> rows;
  for (int jobs : {60, 120, 180}) {
    const Problem p = workload(table, fmt::format("jobs={},rate=0,seed=0,entities=3", jobs));
    PolicyOptions o = gavel_options("hierarchical").policy_options;
    double tot[2] = {0, 0};
    for (int agn = 0; agn < 2; ++agn)
      for (double v : normalized_throughputs(p, allocate(p, parse_policy(agn ? "hierarchical-agnostic" : "hierarchical"), o)))
        tot[agn] += v;
    rows.push_back({std::to_string(jobs), f2(tot[0]), f2(tot[1]), fmt::format("{:.0f} %", 100 * (1 - tot[1] / tot[0])), "~17 %"});
  }
  fmt::print("\nHierarchical (3 entities, weights 1/2/3), total normalised throughput\n{}",
             core::render_table({"jobs", "aware", "agnostic", "agnostic loss", "thesis"}, rows));
}

// 2 × the cheapest possible cost of the jobs: a budget makespan-budget can meet.
double comfortable_budget(const Problem& p) {
  double usd = 0;
  for (const auto& j : p.jobs) {
    double best = 1e300;
    for (int t = 0; t < p.num_types(); ++t)
      if (j.throughputs[t] > 0) best = std::min(best, p.types[t].price_on_demand / 3600.0 * j.scale_factor / j.throughputs[t]);
    usd += best * j.steps;
  }
  return 2 * usd;
}

// Issue 39: a 2,048-job trace to completion under every policy in <= 10 CPU-seconds on one core.
void speed(const JobTypeTable& table, const Args& a) {
  const double rate = 4.0;
  const Problem t = workload(table, fmt::format("jobs=2048,rate={},seed=1,multi=1,slo=1,entities=3", rate));
  fmt::print("\nWhole simulations: 2048 jobs (Gavel generator, multi-GPU, {} jobs/h, SLOs, 3 entities) on {}, to "
             "completion, Gavel conventions{}; CPU s, median of {} [target <= 10 s]\n", rate, kCluster,
             a.cold ? ", every LP cold (--cold)" : ", warm starts", a.repeat);
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : policy_names()) {
    if (!a.only.empty() && a.only != "speed" && a.only != name) continue;
    std::vector<double> cpu;
    SimMetrics m;
    for (int r = 0; r < a.repeat; ++r) {
      SimOptions o = gavel_options(name);
      o.policy_options.budget_usd = comfortable_budget(t);
      const double c0 = process_cpu_s();
      m = simulate(t, o).metrics;
      cpu.push_back(process_cpu_s() - c0);
    }
    std::sort(cpu.begin(), cpu.end());
    rows.push_back({name, f2(cpu[cpu.size() / 2]), std::to_string(m.jobs_finished), std::to_string(m.reallocations),
                    std::to_string(m.lp_solves), std::to_string(m.rounds), f2(m.avg_jct_s / 3600.0)});
    fmt::print("  {:<32} {:>7.2f} s CPU\n", name, cpu[cpu.size() / 2]);
    std::fflush(stdout);
  }
  fmt::print("{}", core::render_table({"policy", "CPU s", "finished", "solves", "LP solves", "rounds", "avg JCT h"}, rows));
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--only") a.only = v;
    else if (k == "--jobs") a.jobs = std::max(10, std::atoi(v.c_str()));
    else if (k == "--seeds") a.seeds = std::max(1, std::atoi(v.c_str()));
    else if (k == "--repeat") a.repeat = std::max(1, std::atoi(v.c_str()));
    else if (k == "--throughputs") a.throughputs = v;
    else if (k == "--static-jobs") a.static_jobs = std::max(2, std::atoi(v.c_str()));
    else if (k == "--cold") a.cold = v != "0";
    else if (k == "--detail") g_detail = v != "0";
    else if (k == "--pairs") a.pairs = std::max(0, std::atoi(v.c_str()));
    else if (k == "--spread-slow") g_spread_slow = v != "0";
    else if (k == "--iso-by-size") g_iso_by_size = v != "0";
    else if (k == "--rates")
      for (std::size_t p = 0; p < v.size();) {
        const std::size_t q = std::min(v.find('/', p), v.size());
        a.rates.push_back(std::atof(v.substr(p, q - p).c_str()));
        p = q + 1;
      }
    else if (k == "--window") a.from = std::atoi(v.c_str()), a.to = std::atoi(v.substr(v.find(':') + 1).c_str());
    else fmt::print(stderr, "unknown argument {}\n", k), std::exit(2);
  }
  if (a.from >= a.to) fmt::print(stderr, "--window FROM:TO needs FROM < TO\n"), std::exit(2);
  if (a.jobs == 0) a.jobs = 3 * a.to;  // arrivals continue well past the window (stop_after_window ends the run)
  if (a.to > a.jobs) fmt::print(stderr, "--window ends after --jobs\n"), std::exit(2);
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  g_cold = a.cold;
  const JobTypeTable table = table_of(a);
  auto want = [&](const char* s) { return a.only.empty() || a.only == s; };
  const double c0 = process_cpu_s();
  if (want("las")) las(table, a, false);
  if (want("multi")) las(table, a, true);
  if (want("ftf")) ftf(table, a);
  if (want("makespan")) makespan(table, a);
  if (want("ss")) space_sharing(table, a);
  if (want("hier")) hierarchical(table);
  const auto names = policy_names();
  if (a.only.empty() || a.only == "speed" || std::find(names.begin(), names.end(), a.only) != names.end()) speed(table, a);
  fmt::print("\nCPU {:.1f} s\n", process_cpu_s() - c0);
  return 0;
}
