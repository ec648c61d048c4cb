// bench_estimate: one cost-model estimate (Google Benchmark). Target (issue 3): ≤ 20 µs for a 128-layer model.
#include <benchmark/benchmark.h>

#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

using namespace strata;

namespace {
void run(benchmark::State& state, const char* model_name, const char* cluster, const char* strategy) {
  const auto m = model::zoo_model(model_name);
  const auto c = hw::resolve_cluster(cluster, hw::builtin_catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy(strategy), m, c);
  for (auto _ : state) {
    auto e = cost::estimate(m, c, s);
    benchmark::DoNotOptimize(e.iteration_time_s);
  }
}
}  // namespace

// megatron-1t: 128 blocks (130 layers in the chain).
BENCHMARK_CAPTURE(run, megatron_1t_tp8_pp16_dp4, "megatron-1t", "dgx-a100:64", "tp=8,pp=16,dp=4,gbs=512,mbs=1")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run, megatron_1t_tp8_pp8_dp1, "megatron-1t", "dgx-a100:8", "tp=8,pp=8,dp=1,gbs=512,mbs=1")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run, megatron_1t_tp8_pp64_interleaved, "megatron-1t", "dgx-a100:64",
                  "tp=8,pp=64,dp=1,gbs=512,v=2,recompute=selective,sp=on")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(run, gpt3_175b_hetero, "gpt3-175b", "dgx-a100:8+dgx-h100:8", "tp=8,pp=16,dp=1,gbs=1536")
    ->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
