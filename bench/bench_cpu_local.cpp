// bench/bench_cpu_local: the analytical estimate on the cpu-local cluster (examples/cluster_cpu_local.json, no
// profile) against iteration times `strata run` measures on 2 local processes (not a test; issue 38: within 2×).
// Runs each plan with exec::run_local (or reads earlier runs with --runs FILE), prints estimate vs measured, and
// with --fit the CPU constants (cpu_kernel_overhead_s, cpu_layer_overhead_s; cost/constants.hpp) that minimise the
// mean |log(fastest steady step / predicted)| over the runs (the fastest step: least disturbed by other work). Usage: bench_cpu_local [--steps N] [--runs FILE] [--runs-out FILE]
// [--fit]. The committed runs and fit: data/calibration/cpu_local_runs.json.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#ifdef STRATA_WITH_EXEC
#include "strata/exec/run.hpp"
#endif

namespace {
using namespace strata;

struct Run {
  std::string model, strategy;  // strategy without gbs/dtype
  std::int64_t gbs = 8;
  double measured_s = 0;        // median of the steady steps
  double fastest_s = 0;         // the fastest steady step (least disturbed by other processes); 0 = unknown
  double fit_target_s() const { return fastest_s > 0 ? fastest_s : measured_s; }
};

// Plans that differ in what costs time on a CPU: GEMM size (mbs, model width), layers per rank (pp), TP and
// ZeRO-3 collectives, recompute.
std::vector<Run> default_plans() {
  std::vector<Run> out;
  for (const char* s : {"dp=2,mbs=1", "dp=2,mbs=4", "tp=2,mbs=4", "pp=2,mbs=1,schedule=1f1b", "dp=2,mbs=2,zero=3",
                        "dp=2,mbs=4,recompute=full"})
    out.push_back({"tiny-gpt", s, 8, 0, 0});
  for (const char* s : {"dp=2,mbs=1", "dp=2,mbs=4", "tp=2,mbs=4", "pp=2,mbs=2,schedule=1f1b"})
    out.push_back({"small-gpt", s, 16, 0, 0});
  return out;
}

cost::Estimate estimate_of(const Run& r, const hw::Cluster& c, const cost::CostConstants& k) {
  const auto m = model::zoo_model(r.model);
  auto s = cost::parse_strategy(r.strategy + ",gbs=" + std::to_string(r.gbs) + ",dtype=fp32");  // executor: fp32
  s = cost::complete_strategy(s, m, c);
  cost::CostOptions co;
  co.constants = &k;
  return cost::estimate(m, c, s, co);
}

double log_error(const std::vector<Run>& runs, const hw::Cluster& c, const cost::CostConstants& k) {
  double sum = 0;
  for (const auto& r : runs) sum += std::abs(std::log(r.fit_target_s() / estimate_of(r, c, k).iteration_time_s));
  return sum / static_cast<double>(runs.size());
}

// Grid search over the two CPU overheads (µs grid, then a finer one around the best).
cost::CostConstants fit(const std::vector<Run>& runs, const hw::Cluster& c) {
  cost::CostConstants best = cost::builtin_constants();
  double best_err = INFINITY;
  for (double step : {20e-6, 2e-6}) {
    const double k0 = best_err == INFINITY ? 0 : std::max(0.0, best.cpu_kernel_overhead_s - 10 * step);
    const double l0 = best_err == INFINITY ? 0 : std::max(0.0, best.cpu_layer_overhead_s - 10 * step);
    const cost::CostConstants start = best;
    for (int i = 0; i <= 20; ++i)
      for (int j = 0; j <= 40; ++j) {
        cost::CostConstants k = start;
        k.cpu_kernel_overhead_s = k0 + i * step;
        k.cpu_layer_overhead_s = l0 + j * step * 5;
        const double e = log_error(runs, c, k);
        if (e < best_err) best_err = e, best = k;
      }
  }
  fmt::print("fit: cpu_kernel_overhead_s = {:.3g}, cpu_layer_overhead_s = {:.3g}, mean |log(measured/predicted)| "
             "= {:.3f} over {} runs\n",
             best.cpu_kernel_overhead_s, best.cpu_layer_overhead_s, best_err, runs.size());
  return best;
}

std::vector<Run> read_runs(const std::string& path) {
  const auto j = core::load_json_file(path);
  std::vector<Run> out;
  for (const auto& r : j.at("runs"))
    out.push_back({r.at("model").get<std::string>(), r.at("strategy").get<std::string>(), r.at("gbs").get<std::int64_t>(),
                   r.at("measured_iteration_s").get<double>(), r.value("min_steady_iteration_s", 0.0)});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 12;
  std::string runs_in, runs_out;
  bool do_fit = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);
    if (a == "--runs" && i + 1 < argc) runs_in = argv[++i];
    if (a == "--runs-out" && i + 1 < argc) runs_out = argv[++i];
    if (a == "--fit") do_fit = true;
  }
  const auto cluster =
      hw::load_cluster_file(STRATA_SOURCE_DIR "/examples/cluster_cpu_local.json", hw::builtin_catalog());
  std::vector<Run> runs = runs_in.empty() ? default_plans() : read_runs(runs_in);
  if (runs_in.empty()) {
#ifndef STRATA_WITH_EXEC
    fmt::print("bench_cpu_local: this build has no executor; pass --runs FILE\n");
    return 0;
#else
    for (auto& r : runs) {
      const auto m = model::zoo_model(r.model);
      auto s = cost::complete_strategy(cost::parse_strategy(r.strategy + ",gbs=" + std::to_string(r.gbs) + ",dtype=fp32"),
                                       m, cluster);
      auto o = exec::make_run_options(m, s, 2);
      o.steps = steps;
      o.worker_exe = STRATA_BIN_DIR "/strata-exec";
      o.timeout_s = 300;
      fmt::print(stderr, "bench_cpu_local: running {} {} ...\n", r.model, r.strategy);
      const auto rec = exec::run_local(o);
      r.measured_s = rec.iteration_time_s;
      for (std::size_t i = 1; i < rec.iteration_times_s.size(); ++i)
        r.fastest_s = r.fastest_s > 0 ? std::min(r.fastest_s, rec.iteration_times_s[i]) : rec.iteration_times_s[i];
    }
#endif
  }
  const cost::CostConstants& k = cost::builtin_constants();
  std::vector<std::vector<std::string>> rows;
  core::OrderedJson out = core::OrderedJson::array();
  for (const auto& r : runs) {
    const double pred = estimate_of(r, cluster, k).iteration_time_s;
    rows.push_back({r.model, r.strategy, std::to_string(r.gbs), core::format_seconds(pred),
                    core::format_seconds(r.measured_s), fmt::format("{:.2f}", r.measured_s / pred),
                    r.fastest_s > 0 ? fmt::format("{:.2f}", r.fastest_s / pred) : "-"});
    core::OrderedJson e;
    e["model"] = r.model;
    e["strategy"] = r.strategy;
    e["gbs"] = r.gbs;
    e["measured_iteration_s"] = r.measured_s;
    e["min_steady_iteration_s"] = r.fastest_s;
    out.push_back(e);
  }
  fmt::print("cpu-local (examples/cluster_cpu_local.json, no profile), 2 processes on {} cores; measured = median "
             "of the steady steps\n\n{}\n",
             std::thread::hardware_concurrency(),
             core::render_table({"model", "plan", "gbs", "estimate", "measured", "measured/estimate", "fastest/estimate"},
                                rows));
  if (!runs_out.empty()) {
    // The shape --runs reads (data/calibration/cpu_local_runs.json): add the provenance by hand before committing.
    core::OrderedJson doc;
    doc["_doc"] = "strata run iteration times on the cpu-local executor, written by bench/bench_cpu_local --runs-out";
    doc["provenance"] = {{"machine", fmt::format("{} hardware threads", std::thread::hardware_concurrency())}};
    doc["runs"] = out;
    std::ofstream(runs_out) << core::dump_json(doc) << "\n";
    fmt::print("runs written to {}\n", runs_out);
  }
  if (do_fit) fit(runs, cluster);
  return 0;
}
