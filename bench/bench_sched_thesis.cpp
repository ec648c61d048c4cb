// bench/bench_sched_thesis: scenario runner that reproduces the simulation results of Narayanan's thesis ch. 5
// (Gavel, §5.6 / notes_003 §4.6) on generated workloads and prints each row next to the thesis figure it
// reproduces: LAS aware vs agnostic over a sweep of input rates (continuous-single and -multiple), finish-time
// fairness, makespan vs FIFO (static trace), space sharing's gain, hierarchical entity shares, and the cost
// policies (min-cost / min-cost-slo vs max-throughput), and ch. 6's cloud pricing. Not a timed test; run time a few minutes.
//
// Scale: the thesis simulates 36 GPUs of each type and ≥ 5000 jobs (JCT on jobs 4000–5000). Here the cluster is
// 12 + 12 + 12 and the input rate is scaled by the same 1/3, so the load per GPU is the thesis' ("thesis λ" column
// = our λ × 3); jobs per point and the measured window are smaller (--jobs N, default 450; metrics on jobs
// N/3..5N/6). Usage: bench_sched_thesis [--jobs N] [--only las|multi|prio|ftf|makespan|ss|hier|cost|cloud]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/core/text.hpp"
#include "strata/sched/simulate.hpp"

using namespace strata;
using namespace strata::sched;

namespace {

constexpr double kScale = 3.0;  // thesis GPUs per type (36) / ours (12)
const char* kCluster = "v100:12,p100:12,k80:12";

struct Run {
  std::string policy;
  bool space_sharing = false;
};

SimMetrics sim(const Problem& trace, const Run& run, int jobs) {
  SimOptions o;
  o.policy = parse_policy(run.policy);
  o.policy_options.space_sharing = run.space_sharing;
  o.measure_from = jobs / 3;
  o.measure_to = 5 * jobs / 6;
  return simulate(trace, o).metrics;
}

Problem workload(int jobs, double thesis_rate, bool multi, const std::string& extras = "") {
  const std::string spec = fmt::format("jobs={},rate={},seed=0,multi={}{}", jobs, thesis_rate / kScale, multi ? 1 : 0,
                                       extras);
  return generate_trace(default_job_types(), parse_cluster_spec(kCluster), parse_generate_spec(spec));
}

std::string h(double s) { return fmt::format("{:.2f}", s / 3600.0); }
std::string x(double r) { return fmt::format("{:.2f}x", r); }

// Thesis: LAS average JCT 3.5× better (continuous-single, 5.6 jobs/h) and 2.2× (continuous-multiple, 2.6 jobs/h)
// than heterogeneity-agnostic LAS; the gap widens with load (the JCT-vs-load figure).
void las_sweep(int jobs, bool multi) {
  // The thesis' headline rates, then up to where our cluster saturates (the job-type table's K80/P100 are
  // relatively faster than Gavel's 26 types, so the knee of the JCT-vs-load curve sits at a higher λ).
  const std::vector<double> rates = multi ? std::vector<double>{1.0, 2.6, 4.0, 5.0, 5.5, 6.0}
                                          : std::vector<double>{2.0, 5.6, 8.0, 10.0, 11.0, 12.0};
  std::vector<std::vector<std::string>> rows;
  for (double rate : rates) {
    const Problem trace = workload(jobs, rate, multi);
    const SimMetrics aware = sim(trace, {"max-min-fairness"}, jobs), agn = sim(trace, {"max-min-fairness-agnostic"}, jobs);
    const bool headline = multi ? rate == 2.6 : rate == 5.6;
    rows.push_back({fmt::format("{:.1f}", rate), h(aware.avg_jct_s), h(agn.avg_jct_s), x(agn.avg_jct_s / aware.avg_jct_s),
                    fmt::format("{:.0f} %", 100 * aware.utilization),
                    headline ? (multi ? "2.2x (ch.5 sim, continuous-multiple)" : "3.5x (ch.5 sim, continuous-single)")
                             : ""});
    std::fflush(stdout);
  }
  fmt::print("LAS, {} jobs ({}), aware vs agnostic average JCT:\n{}\n", multi ? "continuous-multiple" : "continuous-single",
             jobs, core::render_table({"thesis λ jobs/h", "aware h", "agnostic h", "gain", "util aware", "thesis"}, rows));
}

// Thesis: heterogeneity-aware finish-time fairness: JCT 3× better, FTF metric 2.8× better (vs agnostic FTF).
void ftf(int jobs) {
  const Problem trace = workload(jobs, 5.6, false);
  const SimMetrics aware = sim(trace, {"finish-time-fairness"}, jobs), agn = sim(trace, {"finish-time-fairness-agnostic"}, jobs);
  fmt::print("Finish-time fairness, continuous-single, thesis λ 5.6 jobs/h, {} jobs:\n{}\n", jobs,
             core::render_table({"metric", "aware", "agnostic", "gain", "thesis"},
                                {{"average JCT h", h(aware.avg_jct_s), h(agn.avg_jct_s), x(agn.avg_jct_s / aware.avg_jct_s), "3x"},
                                 {"average slowdown (FTF proxy)", fmt::format("{:.2f}", aware.avg_slowdown),
                                  fmt::format("{:.2f}", agn.avg_slowdown), x(agn.avg_slowdown / aware.avg_slowdown),
                                  "2.8x (FTF rho)"},
                                 {"max slowdown", fmt::format("{:.1f}", aware.max_slowdown),
                                  fmt::format("{:.1f}", agn.max_slowdown), x(agn.max_slowdown / aware.max_slowdown), ""}}));
}

// Thesis: makespan policy 2.5× better than FIFO (static trace); space sharing adds ~8 %.
void makespan(int jobs) {
  const int n = jobs;
  const Problem trace = workload(n, 0, true, ",pairs=4");
  auto mk = [&](const Run& r) { return simulate(trace, SimOptions{parse_policy(r.policy), {r.space_sharing}}).metrics.makespan_s; };
  const double fifo_agn = mk({"fifo-agnostic"}), fifo = mk({"fifo"}), ms = mk({"makespan"}),
               ms_agn = mk({"makespan-agnostic"}), ms_ss = mk({"makespan", true});
  fmt::print("Makespan, static trace of {} jobs (continuous-multiple sizes):\n{}\n", n,
             core::render_table({"policy", "makespan h", "vs makespan (aware)", "thesis"},
                                {{"fifo-agnostic", h(fifo_agn), x(fifo_agn / ms), "2.5x (vs FIFO)"},
                                 {"fifo (aware)", h(fifo), x(fifo / ms), ""},
                                 {"makespan-agnostic", h(ms_agn), x(ms_agn / ms), ""},
                                 {"makespan (aware)", h(ms), x(1.0), ""},
                                 {"makespan + space sharing", h(ms_ss), x(ms_ss / ms), "SS adds ~8 % (0.93x)"}}));
}

// Thesis: FIFO aware vs agnostic 2.7× without SS, 3.8× with SS; SS alone 1.4× on single-GPU jobs, 1.1× on
// distributed ones (LAS here, continuous traces).
void space_sharing(int jobs) {
  std::vector<std::vector<std::string>> rows;
  for (bool multi : {false, true}) {
    const double rate = multi ? 2.6 : 5.6;
    const Problem trace = workload(jobs, rate, multi, ",pairs=4");
    const SimMetrics plain = sim(trace, {"max-min-fairness"}, jobs), ss = sim(trace, {"max-min-fairness", true}, jobs);
    const SimMetrics agn = sim(trace, {"max-min-fairness-agnostic"}, jobs);
    rows.push_back({multi ? "LAS multi, λ 2.6" : "LAS single, λ 5.6", h(agn.avg_jct_s), h(plain.avg_jct_s),
                    h(ss.avg_jct_s), x(plain.avg_jct_s / ss.avg_jct_s), x(agn.avg_jct_s / ss.avg_jct_s),
                    multi ? "SS alone 1.1x" : "SS alone 1.4x"});
    std::fflush(stdout);
  }
  fmt::print("Space sharing (pairs from the job-type table's co-location model, 4 per job), {} jobs:\n{}\n", jobs,
             core::render_table({"trace", "agnostic h", "aware h", "aware+SS h", "SS gain", "aware+SS vs agnostic",
                                 "thesis"},
                                rows));
}

// Thesis: LAS with 20 % high-priority jobs: aware vs agnostic average JCT 1.5× better for the high-priority jobs
// and 2.7× for the low-priority ones.
void priorities(int jobs) {
  const Problem trace = workload(jobs, 5.6, false, ",priority=0.2");
  std::vector<std::vector<std::string>> rows;
  double jct[2][2] = {{0, 0}, {0, 0}};  // [agnostic][high]
  for (int agn = 0; agn < 2; ++agn) {
    SimOptions o;
    o.policy = parse_policy(agn ? "max-min-fairness-agnostic" : "max-min-fairness");
    const SimResult r = simulate(trace, o);
    int count[2] = {0, 0};
    for (int m = jobs / 3; m < 5 * jobs / 6; ++m) {  // the measured window (arrival order = input order)
      const int high = trace.jobs[m].weight > 1 ? 1 : 0;
      jct[agn][high] += r.jobs[m].jct_s;
      ++count[high];
    }
    for (int c = 0; c < 2; ++c) jct[agn][c] /= std::max(1, count[c]);
  }
  fmt::print("LAS with 20 % high-priority jobs (weight 5), continuous-single, thesis λ 5.6, {} jobs:\n{}\n", jobs,
             core::render_table({"class", "aware h", "agnostic h", "gain", "thesis"},
                                {{"high priority", h(jct[0][1]), h(jct[1][1]), x(jct[1][1] / jct[0][1]), "1.5x"},
                                 {"low priority", h(jct[0][0]), h(jct[1][0]), x(jct[1][0] / jct[0][0]), "2.7x"}}));
}

}  // namespace

void hierarchical_shares();  // below
void cost_policies(int jobs);
void cloud_costs();

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  int jobs = 450;
  std::string only;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--jobs") jobs = std::max(30, std::atoi(args[i + 1].c_str()));
    if (args[i] == "--only") only = args[i + 1];
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto want = [&](const char* s) { return only.empty() || only == s; };
  fmt::print("Thesis ch. 5 simulation results on cluster {} (thesis: 36 per type; λ scaled by 1/3), seed 0\n\n", kCluster);
  if (want("las")) las_sweep(jobs, false);
  if (want("multi")) las_sweep(jobs, true);
  if (want("prio")) priorities(jobs);
  if (want("ftf")) ftf(jobs);
  if (want("makespan")) makespan(jobs);
  if (want("ss")) space_sharing(jobs);
  if (want("hier")) hierarchical_shares();
  if (want("cost")) cost_policies(jobs);
  if (want("cloud")) cloud_costs();
  fmt::print("run time {:.0f} s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

// Thesis: multi-level fairness on 3 V100 + 3 P100 + 3 K80, entity weights 1, 2, 3, 6 jobs per entity, one job
// added per step: the heterogeneity-agnostic split loses ~17 % of total effective throughput.
void hierarchical_shares() {
  const auto cluster = parse_cluster_spec("v100:3,p100:3,k80:3");
  Problem all = generate_trace(default_job_types(), cluster, parse_generate_spec("jobs=18,seed=4,entities=3"));
  for (int i = 0; i < all.num_jobs(); ++i) all.jobs[i].entity = fmt::format("e{}", i % 3);  // 6 jobs per entity
  std::vector<std::vector<std::string>> rows;
  double loss_sum = 0;
  for (int k = 1; k <= all.num_jobs(); ++k) {
    Problem p = all;
    p.jobs.resize(k);
    double total[2] = {0, 0}, share[2][3] = {{0, 0, 0}, {0, 0, 0}};
    for (int agn = 0; agn < 2; ++agn) {
      const Allocation a = allocate(p, parse_policy(agn ? "hierarchical-agnostic" : "hierarchical"));
      const auto norm = normalized_throughputs(p, a);
      for (int m = 0; m < k; ++m) total[agn] += norm[m], share[agn][m % 3] += norm[m];
    }
    loss_sum += 1 - total[1] / total[0];
    if (k % 3 == 0)
      rows.push_back({std::to_string(k), fmt::format("{:.2f}", total[0]), fmt::format("{:.2f}", total[1]),
                      fmt::format("{:.0f} %", 100 * (1 - total[1] / total[0])),
                      fmt::format("{:.2f} / {:.2f} / {:.2f}", share[0][0] / total[0], share[0][1] / total[0],
                                  share[0][2] / total[0])});
  }
  fmt::print("Hierarchical fairness, 3+3+3 GPUs, entities e0/e1/e2 with weights 1/2/3, one job added per step:\n{}"
             "mean loss of the agnostic split over the 18 steps: {:.0f} % (thesis: ~17 %); entity shares of "
             "normalised throughput (aware) vs weights 0.17 / 0.33 / 0.50\n\n",
             core::render_table({"jobs", "total norm. tput aware", "agnostic", "agnostic loss", "entity shares aware"},
                                rows),
             100 * loss_sum / all.num_jobs());
}

// Thesis: 500 jobs of ResNet-50 and A3C, durations {0.5, 1, 2, 4, 8} days, SLOs {1.2, 2, 10} × duration:
// min-cost saves 1.4× over max-throughput with ~35 % of jobs missing their SLO; min-cost-slo 1.2× with none.
void cost_policies(int jobs) {
  JobTypeTable table = default_job_types();
  std::vector<JobSpec> keep;
  for (const auto& j : table.types.jobs)
    if (j.name == "ResNet-50" || j.name == "A3C") keep.push_back(j);
  table.types.jobs = keep;
  table.gpu_demand.clear();
  const int n = std::max(30, jobs / 6);
  // λ so that the offered load is ~60 % of the 36 GPUs: mean duration 3.1 days on the fastest type.
  const double rate_per_h = 0.6 * 36 / (3.1 * 24);
  Problem trace = generate_trace(table, parse_cluster_spec(kCluster),
                                 parse_generate_spec(fmt::format("jobs={},rate={},seed=0", n, rate_per_h)));
  constexpr double kDays[] = {0.5, 1, 2, 4, 8}, kSlo[] = {1.2, 2, 10};
  for (int i = 0; i < n; ++i) {
    JobSpec& j = trace.jobs[i];
    const double duration_s = kDays[i % 5] * 86400;
    j.steps = fastest_throughput(j) * duration_s;
    j.slo_s = kSlo[(i / 5) % 3] * duration_s;
  }
  std::vector<std::vector<std::string>> rows;
  double base = 0;
  for (const char* pol : {"max-throughput", "min-cost", "min-cost-slo"}) {
    SimOptions o;
    o.policy = parse_policy(pol);
    const SimMetrics m = simulate(trace, o).metrics;
    if (base == 0) base = m.total_cost_usd;
    rows.push_back({pol, fmt::format("${:.0f}", m.total_cost_usd), x(base / m.total_cost_usd),
                    fmt::format("{:.0f} %", 100.0 * m.slo_violations / std::max(1, m.slo_jobs)), h(m.avg_jct_s),
                    std::string(pol) == "min-cost" ? "1.4x, ~35 % violate" : std::string(pol) == "min-cost-slo" ? "1.2x, 0 %" : ""});
    std::fflush(stdout);
  }
  fmt::print("Cost policies, {} jobs (ResNet-50 + A3C, 0.5–8 days, SLO 1.2/2/10 × duration), on-demand prices:\n{}\n", n,
             core::render_table({"policy", "cost", "saving vs max-throughput", "SLO violations", "avg JCT h", "thesis"},
                                rows));
}

// Thesis ch. 6: for one job, cost falls as the choices add up — the GPU type, spot prices, dynamic switching
// (up to 1.4× alone on long jobs, fewer than 3 switches, small under 2 days); ResNet-50 barely benefits (always
// cheapest on V100). Spot prices here are a seeded daily random walk around on-demand / Table 6.3's GCP discount
// (×0.4–2.0 per day, ILLUSTRATIVE), every type preempted once a day; min-cost-slo with SLO = 3 × V100 duration.
PriceTrace daily_spot_trace(const std::vector<WorkerType>& types, int days) {
  PriceTrace t;
  std::uint64_t state = 12345;
  auto u01 = [&] {  // splitmix64: deterministic on every standard library
    state += 0x9e3779b97f4a7c15ULL;
    std::uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
  };
  for (std::size_t k = 0; k < types.size(); ++k) {
    t.types.push_back(types[k].name);
    std::vector<PricePoint> pts;
    for (int d = 0; d < days; ++d)
      pts.push_back({d * 86400.0, types[k].price_on_demand, types[k].price_spot * (0.4 + 1.6 * u01())});
    t.points.push_back(pts);
    for (int d = 0; d < days; ++d) t.preemptions.push_back({d * 86400.0 + 3600.0 * (3 + 7 * k), types[k].name});
  }
  std::stable_sort(t.preemptions.begin(), t.preemptions.end(),
                   [](const Preemption& a, const Preemption& b) { return a.t_s < b.t_s; });
  return t;
}

void cloud_costs() {
  const JobTypeTable table = default_job_types();
  const auto cluster = parse_cluster_spec("v100:1,p100:1,k80:1");
  const Problem types = with_worker_types(table.types, cluster);
  std::vector<std::vector<std::string>> rows;
  for (const char* model : {"Transformer", "A3C", "ResNet-50"})
    for (double days : {1.0, 4.0}) {
      Problem p;
      p.types = types.types;
      for (const auto& j : types.jobs)
        if (j.name == model) p.jobs.push_back(j);
      p.jobs[0].steps = p.jobs[0].throughputs[p.type_index("v100")] * days * 86400;
      p.jobs[0].slo_s = 3 * days * 86400;
      auto run = [&](bool only_v100, bool spot, bool trace, bool switching) {
        Problem q = p;
        if (only_v100) q = with_worker_types(p, parse_cluster_spec("v100:1"));
        SimOptions o;
        o.policy = parse_policy("min-cost-slo");
        o.policy_options.price = spot ? PriceKind::kSpot : PriceKind::kOnDemand;
        if (trace) o.price_trace = daily_spot_trace(q.types, 20);
        o.switch_on_price_change = switching;
        return simulate(q, o);
      };
      const SimResult base = run(true, false, false, false), typed = run(false, false, false, false);
      const SimResult fixed = run(false, true, true, false), dynamic = run(false, true, true, true);
      const double c0 = base.metrics.total_cost_usd;
      rows.push_back({model, fmt::format("{:.0f}", days), fmt::format("${:.0f}", c0), x(c0 / typed.metrics.total_cost_usd),
                      x(c0 / fixed.metrics.total_cost_usd), x(c0 / dynamic.metrics.total_cost_usd),
                      x(fixed.metrics.total_cost_usd / dynamic.metrics.total_cost_usd),
                      std::to_string(dynamic.metrics.type_switches), std::to_string(dynamic.metrics.preemptions)});
    }
  fmt::print("Cloud pricing (ch. 6), one job, v100+p100+k80 instances, min-cost-slo (SLO 3 x V100 duration); cost "
             "reduction vs on-demand V100, cumulative:\n{}thesis: up to 3.5x cumulative (type, multi-GPU, multi-cloud, "
             "switching); switching alone up to 1.4x on long jobs with < 3 switches, small under 2 days; ResNet-50 "
             "barely benefits\n\n",
             core::render_table({"job", "V100-days", "on-demand V100", "+ GPU type", "+ spot (static)",
                                 "+ dynamic switching", "switching alone", "switches", "preemptions"},
                                rows));
}
