// bench/bench_stage_search: the per-stage planner (plan/stage_search, issue 14) on the 32-GPU mixed cluster
// (16 A100-40GB + 16 V100-16GB, 4 GPUs per node; OPT-350M-like, gbs 256, fp32 + Adam) and AMP's cluster
// (amp-gpt2, gbs 32): median search time on one core, the per-stage plan against the best uniform plan.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"
#include "strata/plan/stage_search.hpp"

namespace {

using namespace strata;

// CPU time of this thread: the search runs on one core; wall time on a shared machine includes other jobs.
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void scenario(const std::string& model, const std::string& spec, std::int64_t gbs, hw::Dtype dtype, int reps) {
  const hw::Catalog catalog = hw::builtin_catalog();
  const auto c = hw::resolve_cluster(spec, catalog);
  const auto m = model::resolve_model(model);
  plan::StageSearchOptions so;
  so.global_batch = gbs;
  so.dtype = dtype;
  std::vector<double> times, walls;
  plan::StageSearchResult r;
  for (int i = 0; i < reps; ++i) {
    const auto w0 = std::chrono::steady_clock::now();
    const double t0 = thread_cpu_s();
    r = plan::search_per_stage(m, c, so);
    times.push_back(thread_cpu_s() - t0);
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
  }
  std::sort(times.begin(), times.end());
  std::sort(walls.begin(), walls.end());
  plan::PlanOptions po;
  po.global_batch = gbs;
  po.dtype = dtype;
  po.space = plan::Space::full;
  po.baselines = false;
  const auto u = plan::plan(m, c, po);
  const double ts = r.estimate.iteration_time_s, tu = u.top.empty() ? 0 : u.top[0].estimate.iteration_time_s;
  fmt::print("{} on {} (gbs {}, {})\n", model, c.name, gbs, hw::to_string(dtype));
  fmt::print("  per-stage search (one thread): median {:.1f} ms CPU over {} runs (min {:.1f}, max {:.1f}; median "
             "wall {:.1f} ms); {} configurations, {} DP solves, {} DP entries\n",
             1e3 * times[times.size() / 2], reps, 1e3 * times.front(), 1e3 * times.back(),
             1e3 * walls[walls.size() / 2],
             r.configs, r.passes, r.states);
  fmt::print("  per-stage plan: {}  ({} idle)\n    iteration {:.2f} ms, {:.1f} samples/s\n",
             cost::to_cli_string(r.strategy), r.idle_devices.size(), 1e3 * ts, r.estimate.samples_per_s);
  if (tu > 0)
    fmt::print("  best uniform (plan --space full): {}\n    iteration {:.2f} ms, {:.1f} samples/s\n  gain {:.3f}x\n",
               cost::to_cli_string(u.top[0].strategy), 1e3 * tu, u.top[0].estimate.samples_per_s, tu / ts);
}

}  // namespace

int main() {
  scenario("amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", 32, hw::Dtype::bf16, 11);
  scenario("opt-350m", STRATA_SOURCE_DIR "/examples/cluster_a100_v100.json", 256, hw::Dtype::fp32, 11);
  return 0;
}
