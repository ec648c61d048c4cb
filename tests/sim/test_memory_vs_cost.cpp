// tests/sim/test_memory_vs_cost: one memory model (cost/memory). The simulator's peak per device is the cost
// model's stage_memory for the flush schedules — exactly, for every strategy below — and the simulator reports
// a worker that does not fit its devices' memory after the headroom. Also: the simulator's DP buckets are
// cost::dp_bucket_partition's.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "strata/core/units.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/stage.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/from_cost.hpp"

using namespace strata;

namespace {

const hw::Catalog& catalog() {
  static const hw::Catalog c = hw::builtin_catalog();
  return c;
}

sim::Simulation run(const char* model, const char* cluster, const std::string& strategy,
                    const sim::CostSimOptions& opt = {}) {
  const auto m = model::zoo_model(model);
  const auto c = hw::resolve_cluster(cluster, catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy(strategy), m, c);
  return sim::simulate(m, c, s, opt);
}

// Every worker's simulated peak against its stage's estimated memory.
void expect_peaks_equal(const sim::Simulation& r, const std::string& what) {
  ASSERT_EQ(r.result.workers.size(), r.input.workers.size());
  for (std::size_t w = 0; w < r.result.workers.size(); ++w) {
    const auto& stage = r.estimate.stages[w / r.input.dp];
    EXPECT_NEAR(r.result.workers[w].peak_memory_bytes, stage.memory_bytes, 1e-9 * stage.memory_bytes)
        << what << " worker " << w;
  }
  double sim_peak = 0;
  for (const auto& w : r.result.workers) sim_peak = std::max(sim_peak, w.peak_memory_bytes);
  EXPECT_NEAR(sim_peak, r.estimate.peak_memory_bytes, 1e-9 * sim_peak) << what;
}

}  // namespace

TEST(SimMemory, PeakEqualsTheEstimateForFlushSchedules) {
  // GPipe and 1F1B, every recompute mode, ZeRO 0–3, tp with and without sp, a tied head on the last stage.
  const char* cases[] = {
      "dp=4,tp=2,pp=4,mbs=1,gbs=32,schedule=1f1b",
      "dp=1,tp=8,pp=4,mbs=1,gbs=32,schedule=gpipe,recompute=full",
      "dp=2,tp=4,pp=4,mbs=2,gbs=64,schedule=1f1b,recompute=selective,sp=on,zero=1",
      "dp=4,tp=2,pp=4,mbs=1,gbs=64,schedule=gpipe,recompute=selective,zero=2",
      "dp=4,tp=4,pp=2,mbs=1,gbs=16,schedule=1f1b,zero=3,recompute=full",
      "dp=2,tp=2,pp=8,mbs=1,gbs=4,schedule=1f1b",  // m < p: fewer micro-batches in flight than stages
      // No flush, but the same count: p − r micro-batches and weight versions (PipeDream), 2 versions (2BW).
      "dp=1,tp=8,pp=4,mbs=1,gbs=32,schedule=pipedream",
      "dp=1,tp=8,pp=4,mbs=1,gbs=32,schedule=2bw,recompute=selective",
  };
  for (const char* text : cases) {
    const auto r = run("megatron-3.6b", "dgx-a100:4", text);
    expect_peaks_equal(r, text);
  }
  // Mixed GPUs: each stage's own memory.
  expect_peaks_equal(run("gpt2-medium", "p3.8xlarge:2+g4dn.12xlarge:2", "dp=2,tp=2,pp=4,mbs=2,gbs=32,recompute=full"),
                     "hetero");
}

TEST(SimMemory, InterleavedPeakEqualsTheEstimateWithUniformChunks) {
  // Interleaved 1F1B: Megatron's warm-up keeps 2(p − r − 1) + (v − 1)p + 1 chunk passes in flight on stage r,
  // which is Korthikanti's in-flight count when every chunk of the stage holds the same activations.
  for (const char* text : {"dp=1,tp=8,pp=4,mbs=1,gbs=32,v=2,schedule=interleaved,recompute=selective,sp=on",
                           "dp=2,tp=4,pp=4,mbs=1,gbs=64,v=2,schedule=interleaved,zero=1"}) {
    auto m = model::zoo_model("megatron-18.4b");
    const auto c = hw::resolve_cluster("dgx-a100:4", catalog());
    const auto s = cost::complete_strategy(cost::parse_strategy(text), m, c);
    const auto r = sim::simulate(m, c, s);
    // The stages holding neither the embedding nor the head have identical chunks: equal.
    for (std::size_t w = 0; w < r.result.workers.size(); ++w) {
      const int stage = static_cast<int>(w) / r.input.dp;
      if (stage == 0 || stage == s.pp - 1) continue;
      EXPECT_NEAR(r.result.workers[w].peak_memory_bytes, r.estimate.stages[stage].memory_bytes,
                  1e-9 * r.estimate.stages[stage].memory_bytes)
          << text << " stage " << stage;
    }
  }
}

TEST(SimMemory, InterleavedWithAsManyMicroBatchesAsStagesHoldsThemAll) {
  // m = p: Megatron (and the pipeline program both models follow) run every forward pass before the first
  // backward, so stage r holds all m·v chunk passes; cost::in_flight_micro_batches counts them too (m), so the
  // simulator's peak equals the estimate's on stages with identical chunks.
  const auto m = model::zoo_model("megatron-18.4b");
  const auto c = hw::resolve_cluster("dgx-a100:4", catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("dp=1,tp=8,pp=4,mbs=1,gbs=4,v=2,schedule=interleaved"),
                                         m, c);
  const auto r = sim::simulate(m, c, s);
  const int p = s.pp, v = s.virtual_stages;
  for (int stage = 1; stage + 1 < p; ++stage) {
    EXPECT_EQ(cost::in_flight_micro_batches(s.schedule, p, stage, s.num_micro_batches(), v),
              static_cast<double>(s.num_micro_batches()));
    const auto& est = r.estimate.stages[stage];
    EXPECT_NEAR(r.result.workers[stage].peak_memory_bytes, est.memory_bytes, 1e-9 * est.memory_bytes)
        << "stage " << stage;
  }
}

TEST(SimMemory, ReportsAPeakAboveTheUsableMemory) {
  // megatron-3.6b on four 16 GB V100s without tp or recompute cannot fit; the simulator says so.
  const auto r = run("megatron-3.6b", "p3.8xlarge:1", "dp=1,tp=1,pp=4,mbs=8,gbs=64,schedule=gpipe");
  EXPECT_FALSE(r.estimate.fits);
  EXPECT_FALSE(r.fits);
  EXPECT_FALSE(r.not_fit_reason.empty());
  ASSERT_EQ(r.memory.size(), r.result.workers.size());
  EXPECT_FALSE(r.memory[0].fits);
  // The usable memory is the capacity less the default headroom (5 % of 16 GiB).
  EXPECT_NEAR(r.memory[0].usable_bytes, 0.95 * r.memory[0].capacity_bytes, 1.0);
}

TEST(SimMemory, HeadroomDecidesFitsInBothModels) {
  // A strategy whose peak lies between capacity − 10 GiB and capacity fits with no headroom only.
  const auto m = model::zoo_model("megatron-3.6b");
  const auto c = hw::resolve_cluster("dgx-a100:1", catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("dp=1,tp=8,pp=1,mbs=4,gbs=64"), m, c);
  sim::CostSimOptions opt;
  const auto base = sim::simulate(m, c, s, opt);
  const double cap = base.estimate.stages[0].memory_capacity_bytes;
  const double peak = base.estimate.peak_memory_bytes;
  ASSERT_LT(peak, cap);
  // Headroom just above / below the free memory.
  for (const double delta : {-0.5, 0.5}) {
    opt.cost.memory_headroom = cost::parse_memory_headroom(std::to_string((cap - peak) / core::kGiB + delta), "h");
    const auto r = sim::simulate(m, c, s, opt);
    EXPECT_EQ(r.estimate.fits, delta < 0) << delta;
    EXPECT_EQ(r.fits, delta < 0) << delta;
    EXPECT_NEAR(r.memory[0].usable_bytes, r.estimate.stages[0].memory_usable_bytes, 1.0);
  }
}

TEST(SimMemory, GradientBucketsAreTheCostModelsPartition) {
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster("dgx-a100:2", catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("dp=4,tp=2,pp=2,mbs=1,gbs=32"), m, c);
  for (const double bucket_bytes : {50e6, 1.0 * core::kMiB, 1e9}) {
    cost::CostConstants k = cost::builtin_constants();
    k.dp_bucket_bytes = bucket_bytes;
    sim::CostSimOptions opt;
    opt.cost.constants = &k;
    const auto in = sim::pipeline_from_cost(m, c, s, opt);
    const auto e = cost::estimate(m, c, s, opt.cost);
    for (int r = 0; r < s.pp; ++r) {
      // v = 1: one chunk per stage holds the stage's parameters.
      std::vector<int> devs;
      for (int d = 0; d < s.dp; ++d)
        for (int j = 0; j < s.tp; ++j) devs.push_back(s.device(r, d, j));
      double params = 0;
      const auto costs = cost::layer_stage_costs(m, c, s, devs, opt.cost);
      for (int l : e.stages[r].layers) params += costs[l].params_per_device;
      const auto want = cost::dp_bucket_partition(params * k.grad_comm_bytes_per_param, k);
      ASSERT_EQ(static_cast<int>(in.sync[r].grad_buckets[0].size()), want.count) << bucket_bytes;
      const int expect_count = static_cast<int>(std::clamp(
          std::ceil(params * k.grad_comm_bytes_per_param / bucket_bytes), 1.0, k.dp_max_buckets));
      EXPECT_EQ(want.count, expect_count);
      EXPECT_NEAR(want.bytes_per_bucket * want.count, params * k.grad_comm_bytes_per_param, 1.0);
    }
  }
}
