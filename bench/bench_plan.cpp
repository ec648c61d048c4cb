// bench/bench_plan: scenario runner for the planner — the four scenarios (AMP's heterogeneous cluster
// and heterogeneous model, GPT-3 175B on 1024 A100s, Megatron 1T on 1536 A100s + 1536 H100s) × threads {1, 2}.
// Prints wall time, process CPU time, configurations, estimates and the best plan's time; the same best plan
// for every thread count is checked (exit 1 otherwise). Targets (docs/planner.md): AMP ≤ 50 ms, gpt3-175b ≤ 1 s,
// megatron-1t ≤ 5 s on one core; issue 47's 2025-26 clusters (llama3-405b, gbs 2048, on 16 GB200 NVL72 racks, 64
// HGX B200 nodes and 32 MI355X nodes) ≤ 0.5 s each.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "strata/core/text.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace {

struct Scenario {
  const char* model;
  const char* cluster;
  std::int64_t gbs;
  const char* target;
};

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Scenario> scenarios = {
      {"amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", 32, "50 ms"},
      {"amp-transgan", "p3.8xlarge:4", 64, "50 ms"},
      {"gpt3-175b", "dgx-a100:128", 1536, "1 s"},
      {"megatron-1t", "dgx-a100:192+dgx-h100:192", 3072, "5 s"},
      {"llama3-405b", "gb200-nvl72:16", 2048, "0.5 s"},
      {"llama3-405b", "b200:64", 2048, "0.5 s"},
      {"llama3-405b", "mi355x:32", 2048, "0.5 s"},
  };
  const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  const auto catalog = strata::hw::builtin_catalog();
  std::vector<std::vector<std::string>> rows;
  bool consistent = true;
  for (const auto& sc : scenarios) {
    const auto m = strata::model::zoo_model(sc.model);
    const auto c = strata::hw::resolve_cluster(sc.cluster, catalog);
    std::string first_best;
    for (int threads : {1, 2}) {
      strata::plan::PlanOptions opt;
      opt.global_batch = sc.gbs;
      opt.threads = threads;
      double best_wall = 1e300, best_cpu = 1e300;
      strata::plan::PlanResult r;
      for (int rep = 0; rep < repeats; ++rep) {
        const double c0 = cpu_seconds();
        const auto t0 = std::chrono::steady_clock::now();
        r = strata::plan::plan(m, c, opt);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best_wall = std::min(best_wall, wall);
        best_cpu = std::min(best_cpu, cpu_seconds() - c0);
      }
      const std::string best = strata::cost::to_cli_string(r.top.front().strategy);
      if (first_best.empty()) first_best = best;
      consistent = consistent && best == first_best;
      double meg = 0;
      for (const auto& b : r.baselines)
        if (b.name == "megatron" && b.found) meg = b.estimate.iteration_time_s;
      rows.push_back({sc.model, sc.cluster, std::to_string(sc.gbs), std::to_string(threads),
                      strata::core::format_seconds(best_wall), strata::core::format_seconds(best_cpu), sc.target,
                      std::to_string(r.space_size), std::to_string(r.evaluated),
                      strata::core::format_seconds(r.top.front().estimate.iteration_time_s),
                      meg > 0 ? fmt::format("{:.2f}x", meg / r.top.front().estimate.iteration_time_s) : "-"});
    }
  }
  fmt::print("{}", strata::core::render_table({"model", "cluster", "gbs", "threads", "wall (best of n)", "cpu",
                                               "target", "space", "costed", "best plan", "vs megatron"},
                                              rows));
  fmt::print("\nwall = min over {} runs (search + baselines); cpu = process CPU time of that run (all threads).\n",
             repeats);
  if (!consistent) {
    fmt::print("ERROR: the best plan differs between thread counts\n");
    return 1;
  }
  return 0;
}
