// bench_sim: simulator throughput. Targets (issue 5): ≥ 2 M simulated events per second on one core, and one
// iteration of gpt3-175b on dgx-a100:128 (tp 8, pp 16, dp 8, m = 192) in < 2 s end to end.
#include <benchmark/benchmark.h>

#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/engine.hpp"
#include "strata/sim/from_cost.hpp"
#include "strata/sim/pipeline.hpp"

using namespace strata;

namespace {

// Engine only: the task graph of a 16-stage, 8-replica, m = 192 1F1B pipeline (abstract durations, with p2p
// flows over shared links so rates get re-timed), run again and again.
sim::PipelineInput big_abstract() {
  auto in = sim::uniform_pipeline(cost::Schedule::one_f_one_b, 16, 192, 1, 1e-3, 2e-3, 1, 8);
  in.resource_bw = {100e9, 100e9};
  for (auto& w : in.workers)
    for (auto& c : w.chunks) {
      c.send_next = {1e-4, 1e-5, {0}};
      c.send_prev = {1e-4, 1e-5, {1}};
      c.tp_fwd_s = 1e-4;
      c.tp_bwd_s = 2e-4;
    }
  return in;
}

void BM_EngineEventsPerSecond(benchmark::State& state) {
  const auto in = big_abstract();
  sim::SimOptions so;
  so.keep_timeline = true;
  const auto built = sim::simulate_pipeline(in, so);
  std::int64_t events = 0;
  for (auto _ : state) {
    auto r = sim::run(built.graph);
    events += r.events;
    benchmark::DoNotOptimize(r.makespan_s);
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(built.events);
}
BENCHMARK(BM_EngineEventsPerSecond)->Unit(benchmark::kMillisecond);

void BM_BuildAndRunEventsPerSecond(benchmark::State& state) {
  const auto in = big_abstract();
  std::int64_t events = 0;
  for (auto _ : state) {
    auto r = sim::simulate_pipeline(in);
    events += r.events;
    benchmark::DoNotOptimize(r.iteration_time_s);
  }
  state.counters["events_per_s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_BuildAndRunEventsPerSecond)->Unit(benchmark::kMillisecond);

void BM_Gpt3_175b_DgxA100x128(benchmark::State& state) {
  const auto m = model::zoo_model("gpt3-175b");
  const auto c = hw::resolve_cluster("dgx-a100:128", hw::builtin_catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("tp=8,pp=16,dp=8,mbs=1,gbs=1536"), m, c);
  double t = 0;
  std::int64_t events = 0;
  for (auto _ : state) {
    const auto r = sim::simulate(m, c, s);
    t = r.result.iteration_time_s;
    events = r.result.events;
  }
  state.counters["sim_iteration_s"] = t;
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_Gpt3_175b_DgxA100x128)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
