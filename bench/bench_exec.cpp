// bench/bench_exec: predicted vs measured iteration time of small-gpt on 4 local processes (not a test). Profiles
// this machine with `strata profile` (layers + Gloo loopback collectives, cluster file), estimates each plan with
// cost::estimate on that profile and cluster, runs each plan for real with exec::run_local, and prints both times
// and Spearman's rank correlation between them (target ≥ 0.8). Usage: bench_exec [--ranks 2|4] [--gbs B] [--steps N] [--keep DIR]
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#ifdef STRATA_WITH_EXEC
#include "strata/exec/run.hpp"
#endif

namespace {

// Ranks 1..n with ties averaged.
std::vector<double> ranks_of(const std::vector<double>& x) {
  std::vector<std::size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](auto a, auto b) { return x[a] < x[b]; });
  std::vector<double> r(x.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = 0.5 * static_cast<double>(i + j) + 1.0;
    i = j + 1;
  }
  return r;
}

// Spearman's ρ = Pearson correlation of the ranks.
double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ra = ranks_of(a), rb = ranks_of(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n, mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < ra.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

}  // namespace

int main(int argc, char** argv) {
#ifndef STRATA_WITH_EXEC
  (void)argc;
  (void)argv;
  fmt::print("bench_exec: this build has no executor\n");
  return 0;
#else
  using namespace strata;
  int steps = 3, ranks = 4, gbs = 16;
  std::string keep;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--steps" && i + 1 < argc) steps = std::atoi(argv[++i]);
    if (a == "--keep" && i + 1 < argc) keep = argv[++i];
    if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
    if (a == "--gbs" && i + 1 < argc) gbs = std::atoi(argv[++i]);
  }
  if (ranks != 2 && ranks != 4) {
    fmt::print(stderr, "bench_exec: --ranks must be 2 or 4\n");
    return 2;
  }
  const std::string dir = keep.empty() ? (std::filesystem::temp_directory_path() /
                                          ("strata-bench-exec-" + std::to_string(::getpid())))
                                             .string()
                                       : keep;
  std::filesystem::create_directories(dir);
  const std::string profile_path = dir + "/profile.json", cluster_path = dir + "/cpu-local.json";
  // Layers are timed alone (one rank, one core); the cluster file says how many cores the ranks share, and the
  // cost model's host-CPU bound (cost/host.hpp) accounts for the sharing.
  const std::string cmd = fmt::format("{} profile --model small-gpt --tp {} --mbs 1,2,4 --max-group {} --repeats 3 "
                                      "--out {} --cluster-out {} --devices {} > /dev/null",
                                      STRATA_BIN, ranks == 2 ? "1,2" : "1,2,4", ranks, profile_path, cluster_path,
                                      ranks);
  fmt::print(stderr, "bench_exec: {}\n", cmd);
  if (std::system(cmd.c_str()) != 0) {
    fmt::print(stderr, "bench_exec: strata profile failed\n");
    return 1;
  }
  const auto m = model::zoo_model("small-gpt");
  const auto profile = cost::load_profile_file(profile_path);
  const auto cluster = hw::load_cluster_file(cluster_path, hw::builtin_catalog());
  // Plans chosen to differ in what the cost model is about: bubbles (pp with few micro-batches), TP traffic,
  // ZeRO gathers, recompute, micro-batch size.
  const std::vector<std::string> plans4 = {"dp=4,tp=1,pp=1,mbs=4",
                                           "dp=4,tp=1,pp=1,mbs=1",
                                           "dp=4,tp=1,pp=1,mbs=4,recompute=full",
                                           "dp=4,tp=1,pp=1,mbs=2,zero=3",
                                           "dp=1,tp=4,pp=1,mbs=4",
                                           "dp=1,tp=4,pp=1,mbs=4,sp=on",
                                           "dp=1,tp=4,pp=1,mbs=1",
                                           "dp=1,tp=1,pp=4,mbs=1,schedule=1f1b",
                                           "dp=1,tp=1,pp=4,mbs=4,schedule=gpipe",
                                           "dp=1,tp=1,pp=4,mbs=2,v=2,schedule=interleaved",
                                           "dp=2,tp=2,pp=1,mbs=2",
                                           "dp=2,tp=1,pp=2,mbs=2,schedule=1f1b",
                                           "dp=1,tp=2,pp=2,mbs=4,schedule=1f1b",
                                           "dp=1,tp=1,pp=4,mbs=1,schedule=1f1b,recompute=full"};
  const std::vector<std::string> plans2 = {"dp=2,tp=1,pp=1,mbs=1",
                                           "dp=2,tp=1,pp=1,mbs=4",
                                           "dp=2,tp=1,pp=1,mbs=4,recompute=full",
                                           "dp=2,tp=1,pp=1,mbs=2,zero=3",
                                           "dp=2,tp=1,pp=1,mbs=4,zero=1",
                                           "dp=1,tp=2,pp=1,mbs=4",
                                           "dp=1,tp=2,pp=1,mbs=1",
                                           "dp=1,tp=2,pp=1,mbs=4,sp=on",
                                           "dp=1,tp=1,pp=2,mbs=1,schedule=1f1b",
                                           "dp=1,tp=1,pp=2,mbs=4,schedule=gpipe",
                                           "dp=1,tp=1,pp=2,mbs=2,schedule=1f1b",
                                           "dp=1,tp=1,pp=2,mbs=1,v=2,schedule=interleaved",
                                           "dp=1,tp=1,pp=2,mbs=2,schedule=1f1b,recompute=full",
                                           "dp=1,tp=1,pp=2,mbs=4,schedule=1f1b,recompute=selective"};
  const auto& plans = ranks == 2 ? plans2 : plans4;
  std::vector<double> predicted, measured;
  std::vector<std::vector<std::string>> rows;
  for (const auto& text : plans) {
    auto s = cost::parse_strategy(text + ",gbs=" + std::to_string(gbs));
    s.dtype = hw::Dtype::fp32;  // the executor computes in fp32
    s = cost::complete_strategy(s, m, cluster);
    cost::CostOptions co;
    co.profile = &profile;
    const auto est = cost::estimate(m, cluster, s, co);
    const double pred = est.iteration_time_s;
    auto o = exec::make_run_options(m, s, ranks);
    o.steps = steps;
    o.worker_exe = STRATA_BIN_DIR "/strata-exec";
    o.timeout_s = 300;
    fmt::print(stderr, "bench_exec: running {} ...\n", text);
    const auto rec = exec::run_local(o);
    predicted.push_back(pred);
    measured.push_back(rec.iteration_time_s);
    rows.push_back({text, core::format_seconds(est.pipeline_time_s),
                    est.host.node >= 0 ? core::format_seconds(est.host.bound_s) : "-", core::format_seconds(pred),
                    core::format_seconds(rec.iteration_time_s), fmt::format("{:.2f}", rec.iteration_time_s / pred)});
  }
  fmt::print("small-gpt, gbs {}, {} local processes on {} cores, {} steps each (median of steady steps)\n\n", gbs,
             ranks, std::thread::hardware_concurrency(), steps);
  // predicted = max(schedule alone, host-CPU bound) (cost/host.hpp; "-" when ranks <= cores).
  fmt::print("{}\n", core::render_table({"plan", "schedule", "host bound", "predicted", "measured", "measured/predicted"},
                                        rows));
  fmt::print("Spearman rank correlation predicted vs measured: {:.3f} over {} plans (target >= 0.8)\n",
             spearman(predicted, measured), plans.size());
  if (keep.empty()) std::filesystem::remove_all(dir);
  return 0;
#endif
}
