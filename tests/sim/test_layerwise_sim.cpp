// Tests for simulating per-layer strategies (sim/from_layerwise): a mixed per-layer plan (tp, SDP, recompute and
// Slice-Gathers inside two pipeline stages) replays within 5 % of its estimate and with the estimate's peak memory.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "strata/cost/layerwise.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/from_cost.hpp"

using namespace strata;

TEST(SimLayerwise, MixedPlanAgreesWithEstimate) {
  const auto m = model::zoo_model("swin-huge-32");
  const auto c = hw::resolve_cluster("dgx-a100", hw::builtin_catalog());
  const int L = static_cast<int>(m.layers.size()), a = L / 2, b = L - L / 2;
  const auto s = cost::complete_strategy(
      cost::parse_strategy(fmt::format("mbs=4,gbs=64,stages=0+1+2+3:dp4:tp1:{}/4+5+6+7:dp4:tp1:{},"
                                       "layers=tp1*{}+tp1.sdp.full*{}/tp2.sdp*{}+tp4*{}",
                                       a, b, a / 2, a - a / 2, b / 2, b - b / 2)),
      m, c);
  ASSERT_TRUE(cost::is_layerwise(s, c));
  const auto sim = sim::simulate(m, c, s);
  const double e = sim.estimate.iteration_time_s, t = sim.result.iteration_time_s;
  EXPECT_LT(std::abs(t - e) / e, 0.05) << t << " vs " << e;
  ASSERT_EQ(sim.result.workers.size(), 2u);
  // Stage 0 holds min(p, m) = 2 micro-batches of activations at its peak, as stage_memory counts it.
  EXPECT_NEAR(sim.result.workers[0].peak_memory_bytes, sim.estimate.stages[0].memory_bytes,
              0.02 * sim.estimate.stages[0].memory_bytes);
}
