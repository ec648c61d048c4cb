// tests/sim/test_replicated: the replay of pipelines with per-stage widths (issue 14) — its steady-state period
// equals PipeDream's closed form max_i max(T_i, W_i)/r_i (notes_003 §1.3) on the partitioner example (a stage
// replicated 3 times), and the cost model's pipedream time of per-stage strategies.
#include <gtest/gtest.h>

#include "strata/cost/estimate.hpp"
#include "strata/cost/per_stage.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/replicated.hpp"

namespace {

using namespace strata;

// tests/plan/test_pipedream's VGG-like example as chosen there: layers 0..3 on 3 replicas, 4..5 on one, 10 GB/s.
sim::ReplicatedInput pipedream_example() {
  sim::ReplicatedInput in;
  const double B = 10e9;
  sim::ReplicatedStage conv{3, 40e-3 / 3, 80e-3 / 3, 2.0 * 2 * 1.8e6 / B, true};
  sim::ReplicatedStage fc{1, 4e-3 / 3, 8e-3 / 3, 0.0, true};
  in.stages = {conv, fc};
  in.link_s = {6e6 / B};
  in.micro_batches = 6000;  // long: the early run-ahead of the input stage drains before the measured window
  return in;
}

TEST(Replicated, PipeDreamExampleSteadyStateEqualsClosedForm) {
  const auto in = pipedream_example();
  const auto r = sim::simulate_replicated(in);
  EXPECT_NEAR(sim::replicated_period_closed_form(in), 40e-3 / 3, 1e-15);
  EXPECT_NEAR(r.period_s, sim::replicated_period_closed_form(in), 1e-9 * r.period_s);
}

// Sync-bound and link-bound variants: the closed form's other terms.
TEST(Replicated, SyncAndLinkBoundPeriods) {
  auto in = pipedream_example();
  in.stages[0].sync_s = 60e-3;  // W > T on the replicated stage: period W / 3
  auto r = sim::simulate_replicated(in);
  EXPECT_NEAR(r.period_s, 20e-3, 1e-9 * 20e-3);
  in = pipedream_example();
  in.link_s = {9e-3};           // the boundary: 2 messages of 9 ms per micro-batch
  r = sim::simulate_replicated(in);
  EXPECT_NEAR(r.period_s, 18e-3, 1e-9 * 18e-3);
  in = pipedream_example();
  in.stages[0].sync_overlaps = false;  // blocking sync: (T + W)/r
  r = sim::simulate_replicated(in);
  EXPECT_NEAR(r.period_s, sim::replicated_period_closed_form(in), 1e-9 * r.period_s);
}

// A per-stage pipedream strategy: simulator period × M = cost::estimate's steady state M·max((t+sync)/r, e).
TEST(Replicated, PerStagePipeDreamEstimateEqualsSimulation) {
  static const hw::Catalog catalog = hw::builtin_catalog();
  const auto c = hw::resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", catalog);
  const auto m = model::zoo_model("small-gpt");
  for (const char* spec : {"mbs=2,gbs=48,schedule=pipedream,stages=v100:dp3:tp1:7/t4:dp1:tp2:3",
                           "mbs=1,gbs=24,schedule=pipedream,stages=t4:dp1:tp1:2/v100:dp2:tp2:6/t4:dp3:tp1:2"}) {
    const auto s = cost::complete_strategy(cost::parse_strategy(spec), m, c);
    const auto e = cost::estimate(m, c, s);
    auto in = sim::replicated_from_estimate(s, e);
    in.micro_batches = 6000;  // long enough for the input stage's early run-ahead to drain (steady state)
    const auto r = sim::simulate_replicated(in);
    const double M = static_cast<double>(s.global_batch / s.micro_batch);
    EXPECT_NEAR(r.period_s * M, e.pipeline_time_s, 1e-9 * e.pipeline_time_s) << spec;
  }
}

}  // namespace
