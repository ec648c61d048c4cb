// bench/bench_sched: (1) the JCT-vs-arrival-rate curve of heterogeneity-aware vs agnostic LAS (max-min fairness)
// on a 3-type cluster with the thesis Table 6.1 job types (data/sched/gavel_job_types.json), Gavel's Poisson
// workload, metrics on the middle half of the jobs; (2) the time of one max-min-fairness solve for 2048 jobs ×
// 3 GPU types (target ≤ 10 s), single LP and with water-filling.
// Usage: bench_sched [--full]   (--full: 36+36+36 GPUs and 1000 jobs per point, as in the thesis; slow)
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "strata/core/text.hpp"
#include "strata/sched/simulate.hpp"

using namespace strata;
using namespace strata::sched;

namespace {

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

}  // namespace

int main(int argc, char** argv) {
  const bool full = argc > 1 && std::strcmp(argv[1], "--full") == 0;
  solve_time();
  jct_curve(full);
  return 0;
}
