// bench/bench_sched: (1) the JCT-vs-arrival-rate curve of heterogeneity-aware vs agnostic LAS (max-min fairness)
// on a 3-type cluster with the thesis Table 6.1 job types (data/sched/gavel_job_types.json), Gavel's Poisson
// workload, metrics on the middle half of the jobs; (2) the time of one max-min-fairness solve for 2048 jobs ×
// 3 GPU types (target ≤ 10 s), single LP and with water-filling.
// (3) with --policies: every policy's solve time on 2048 jobs × 3 types (median of --repeat N, default 3).
// Usage: bench_sched [--full] | --policies [--repeat N] [--only POLICY]
//   (--full: 36+36+36 GPUs and 1000 jobs per point, as in the thesis; slow)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "strata/core/text.hpp"
#include "strata/sched/simulate.hpp"

using namespace strata;
using namespace strata::sched;

namespace {

// CPU time of the process (all threads): on a shared, overloaded machine the wall time measures the neighbours too.
double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void jct_curve(bool full) {
  const std::string cluster_spec = full ? "v100:36,p100:36,k80:36" : "v100:12,p100:12,k80:12";
  const int jobs = full ? 1000 : 400;
  const std::vector<double> rates = full ? std::vector<double>{1, 2, 3, 4, 5, 6}
                                         : std::vector<double>{0.3, 0.6, 0.9, 1.2, 1.5, 1.8};
  const auto table = default_job_types();
  const auto cluster = parse_cluster_spec(cluster_spec);
  fmt::print("JCT vs arrival rate: LAS (max-min fairness), cluster {}, {} single-GPU jobs/point, seed 0, "
             "metrics on jobs {}..{}\n", cluster_spec, jobs, jobs / 4, 3 * jobs / 4);
  std::vector<std::vector<std::string>> rows;
  for (double rate : rates) {
    GenerateSpec g;
    g.jobs = jobs;
    g.rate_per_hour = rate;
    g.seed = 0;
    const Problem trace = generate_trace(table, cluster, g);
    double jct[2], util[2], secs[2];
    for (int agn = 0; agn < 2; ++agn) {
      SimOptions o;
      o.policy = parse_policy(agn ? "max-min-fairness-agnostic" : "max-min-fairness");
      o.measure_from = jobs / 4;
      o.measure_to = 3 * jobs / 4;
      const auto t0 = std::chrono::steady_clock::now();
      const auto r = simulate(trace, o);
      secs[agn] = seconds_since(t0);
      jct[agn] = r.metrics.avg_jct_s / 3600.0;
      util[agn] = r.metrics.utilization;
    }
    rows.push_back({fmt::format("{:.2f}", rate), fmt::format("{:.2f}", jct[0]), fmt::format("{:.2f}", jct[1]),
                    fmt::format("{:.2f}", jct[1] / jct[0]), fmt::format("{:.2f}", jct[1] - jct[0]),
                    fmt::format("{:.2f}", util[0]), fmt::format("{:.2f}", util[1]),
                    fmt::format("{:.1f}", secs[0] + secs[1])});
    std::fflush(stdout);
  }
  fmt::print("{}\n", core::render_table({"jobs/h", "aware JCT h", "agnostic JCT h", "ratio", "gain h", "util aware",
                                         "util agnostic", "sim s"},
                                        rows));
}

void solve_time() {
  const auto cluster = parse_cluster_spec("v100:36,p100:36,k80:36");
  for (int multi = 0; multi < 2; ++multi) {
    GenerateSpec g;
    g.jobs = 2048;
    g.seed = 1;
    g.multi_gpu = multi == 1;
    const Problem p = generate_trace(default_job_types(), cluster, g);
    for (bool wf : {false, true}) {
      PolicyOptions o;
      o.water_filling = wf;
      const auto t0 = std::chrono::steady_clock::now();
      const Allocation a = allocate(p, parse_policy("max-min-fairness"), o);
      const double s = seconds_since(t0);
      fmt::print("max-min-fairness, 2048 jobs x 3 types ({}), {}: {:.2f} s ({} LP/MILP solves, level {:.5f}) "
                 "[target <= 10 s]\n", multi ? "multi-GPU sizes" : "single-GPU", wf ? "water-filling" : "single LP",
                 s, a.lp_solves, a.objective);
    }
  }
}

// 2 × the cheapest possible cost of the jobs (each on its cheapest-per-step type): a budget makespan-budget
// can meet without being the binding minimum.
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

// Every policy (aware and agnostic) on one 2048-job × 3-type problem: the median of `repeat` solves each.
void policy_times(int repeat, const std::string& only) {
  const auto cluster = parse_cluster_spec("v100:36,p100:36,k80:36");
  GenerateSpec g = parse_generate_spec("jobs=2048,seed=1,slo=1,entities=3");
  const Problem p = generate_trace(default_job_types(), cluster, g);
  PolicyOptions o;
  o.budget_usd = comfortable_budget(p);
  fmt::print("every policy on 2048 single-GPU jobs x 3 types (v100/p100/k80 x 36, seed 1, SLOs, 3 entities), "
             "median of {} solve(s), one thread [target <= 10 s]\n", repeat);
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : policy_names()) {
    if (!only.empty() && name != only) continue;
    std::vector<double> secs, cpu;
    Allocation a;
    for (int r = 0; r < repeat; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      const double c0 = process_cpu_s();
      a = allocate(p, parse_policy(name), o);
      secs.push_back(seconds_since(t0));
      cpu.push_back(process_cpu_s() - c0);
    }
    std::sort(secs.begin(), secs.end());
    std::sort(cpu.begin(), cpu.end());
    rows.push_back({name, fmt::format("{:.2f}", secs[secs.size() / 2]), fmt::format("{:.2f}", cpu[cpu.size() / 2]),
                    std::to_string(a.lp_solves), fmt::format("{:.6g}", a.objective)});
    fmt::print("  {:<32} {:>8.2f} s (CPU {:.2f} s)\n", name, secs[secs.size() / 2], cpu[cpu.size() / 2]);
    std::fflush(stdout);
  }
  fmt::print("{}\n", core::render_table({"policy", "median s", "median CPU s", "LP/MILP solves", "objective"}, rows));
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto has = [&](const char* f) { return std::find(args.begin(), args.end(), f) != args.end(); };
  if (has("--policies")) {
    int repeat = 3;
    std::string only;
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--repeat") repeat = std::max(1, std::atoi(args[i + 1].c_str()));
      if (args[i] == "--only") only = args[i + 1];
    }
    policy_times(repeat, only);
    return 0;
  }
  solve_time();
  jct_curve(has("--full"));
  return 0;
}
