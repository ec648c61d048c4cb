// bench/bench_hw: the cluster queries on the cost model's hot path — group_links for TP (one node), DP (one GPU
// per node) and whole-cluster groups on dgx-a100:128, link_bandwidth, and resolving a cluster spec.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "strata/hw/cluster.hpp"

namespace {
using namespace strata::hw;

const Catalog& cat() {
  static const Catalog c = builtin_catalog();
  return c;
}
const Cluster& big() {
  static const Cluster c = resolve_cluster("dgx-a100:128", cat());
  return c;
}

void BM_GroupLinksTp8(benchmark::State& st) {
  std::vector<int> g(8);
  std::iota(g.begin(), g.end(), 512);
  for (auto _ : st) benchmark::DoNotOptimize(group_links(big(), g));
}
BENCHMARK(BM_GroupLinksTp8);

void BM_GroupLinksDp128(benchmark::State& st) {
  std::vector<int> g;
  for (int n = 0; n < 128; ++n) g.push_back(n * 8 + 3);
  for (auto _ : st) benchmark::DoNotOptimize(group_links(big(), g));
}
BENCHMARK(BM_GroupLinksDp128);

void BM_GroupLinksAll1024(benchmark::State& st) {
  std::vector<int> g(1024);
  std::iota(g.begin(), g.end(), 0);
  for (auto _ : st) benchmark::DoNotOptimize(group_links(big(), g));
}
BENCHMARK(BM_GroupLinksAll1024);

void BM_GroupLinksUnsorted128(benchmark::State& st) {
  std::vector<int> g;
  for (int n = 127; n >= 0; --n) g.push_back(n * 8 + 3);
  for (auto _ : st) benchmark::DoNotOptimize(group_links(big(), g));
}
BENCHMARK(BM_GroupLinksUnsorted128);

void BM_GroupLinksAmpMatrix16(benchmark::State& st) {
  static const Cluster c = resolve_cluster(STRATA_SOURCE_DIR "/examples/cluster_amp_matrix.json", cat());
  std::vector<int> g(16);
  std::iota(g.begin(), g.end(), 0);
  for (auto _ : st) benchmark::DoNotOptimize(group_links(c, g));
}
BENCHMARK(BM_GroupLinksAmpMatrix16);

void BM_LinkBandwidth(benchmark::State& st) {
  int a = 0;
  for (auto _ : st) {
    benchmark::DoNotOptimize(link_bandwidth(big(), a, 1023 - a));
    a = (a + 1) & 511;
  }
}
BENCHMARK(BM_LinkBandwidth);

void BM_ResolveSpec(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", cat()));
}
BENCHMARK(BM_ResolveSpec);

void BM_BuiltinCatalog(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(builtin_catalog());
}
BENCHMARK(BM_BuiltinCatalog);

}  // namespace

BENCHMARK_MAIN();
