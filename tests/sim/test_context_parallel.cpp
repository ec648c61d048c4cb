// tests/sim/test_context_parallel: the simulator plays a context-parallel plan from the cost model's per-stage
// times (one worker per cp rank) and agrees with the estimate.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/cost/stage.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/from_cost.hpp"

using namespace strata;

TEST(SimContextParallel, CpPlanAgreesWithTheEstimate) {
  model::TransformerConfig cfg;
  cfg.name = "cp-sim";
  cfg.layers = 8;
  cfg.hidden = 2048;
  cfg.heads = 16;
  cfg.ffn = 8192;
  cfg.vocab = 32000;
  cfg.seq = 32768;
  const auto m = model::build_transformer(cfg, "test");
  const auto c = hw::resolve_cluster("dgx-h100:2", hw::builtin_catalog());
  const auto s = cost::complete_strategy(
      cost::parse_strategy("dp=2,cp=2,tp=2,pp=2,mbs=1,gbs=8,zero=1,sp=on,schedule=1f1b"), m, c);
  const auto sim = sim::simulate(m, c, s);
  EXPECT_EQ(sim.input.workers.size(), 8u);  // pp · dp · cp
  const double rel = std::abs(sim.result.iteration_time_s - sim.estimate.iteration_time_s) /
                     sim.estimate.iteration_time_s;
  EXPECT_LT(rel, 0.05) << sim.result.iteration_time_s << " vs " << sim.estimate.iteration_time_s;
  const double peak_rel = std::abs(sim.result.workers[0].peak_memory_bytes - sim.estimate.stages[0].memory_bytes) /
                          sim.estimate.stages[0].memory_bytes;
  EXPECT_LT(peak_rel, 0.05);
}
