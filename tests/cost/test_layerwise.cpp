// Tests for per-layer strategies in the cost model (cost/layerwise): a per-layer strategy whose layers all make
// the same choice costs exactly what the equivalent uniform strategy costs (time and memory), Slice-Gather is
// free for a slice and paid for a gather (one direction each), a mixed strategy is estimated with its
// transformations, SDP buffers only for SDP layers, and the rules name the field.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "strata/cost/layerwise.hpp"

using namespace strata;
using namespace strata::cost;
using cost_test::error_of;

namespace {

Strategy completed(const std::string& text, const model::Model& m, const hw::Cluster& c) {
  return complete_strategy(parse_strategy(text), m, c);
}

void expect_same_estimate(const Estimate& a, const Estimate& b) {
  EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-9 * b.iteration_time_s);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t i = 0; i < a.stages.size(); ++i) {
    EXPECT_NEAR(a.stages[i].time_s, b.stages[i].time_s, 1e-9 * b.stages[i].time_s) << i;
    EXPECT_NEAR(a.stages[i].memory_bytes, b.stages[i].memory_bytes, 1e-6 * b.stages[i].memory_bytes) << i;
    EXPECT_NEAR(a.stages[i].dp_comm_s, b.stages[i].dp_comm_s, 1e-9 + 1e-9 * b.stages[i].dp_comm_s) << i;
  }
}

TEST(Layerwise, AllLayersTp2EqualsUniformDp4Tp2) {
  // A stage of 8 devices at dp 8 whose every layer chooses tp 2: each layer runs as dp 4 × tp 2 on 2 samples per
  // device, i.e. the uniform strategy dp=4,tp=2,mbs=2 (same m = gbs / 8).
  const auto m = model::zoo_model("bert-huge-32");
  const auto c = cost_test::cluster("dgx-a100");
  const int L = static_cast<int>(m.layers.size());
  const Strategy lw = completed(fmt::format("mbs=1,gbs=64,stages=0+1+2+3+4+5+6+7:dp8:tp1:{},layers=tp2*{}", L, L), m, c);
  ASSERT_TRUE(is_layerwise(lw, c));
  const Strategy un = completed("dp=4,tp=2,pp=1,mbs=2,gbs=64", m, c);
  expect_same_estimate(estimate(m, c, lw), estimate(m, c, un));
}

TEST(Layerwise, AllLayersSdpEqualsZero3AcrossTwoStages) {
  // Two stages of 4 devices, every layer SDP at tp 1 = the uniform dp=4,pp=2 strategy with ZeRO-3 (p2p too).
  const auto m = model::zoo_model("vit-huge-32");
  const auto c = cost_test::cluster("dgx-a100");
  const Strategy un = completed("dp=4,tp=1,pp=2,mbs=2,gbs=64,zero=3", m, c);
  const int a = un.split[0], b = un.split[1];
  const Strategy lw = completed(
      fmt::format("mbs=2,gbs=64,stages=0+1+2+3:dp4:tp1:{}/4+5+6+7:dp4:tp1:{},layers=tp1.sdp*{}/tp1.sdp*{}", a, b, a, b),
      m, c);
  ASSERT_TRUE(is_layerwise(lw, c));
  expect_same_estimate(estimate(m, c, lw), estimate(m, c, un));
}

TEST(Layerwise, SliceGatherSliceIsFreeGatherIsPaid) {
  const auto c = cost_test::cluster("dgx-a100");
  const std::vector<int> group{0, 1, 2, 3, 4, 5, 6, 7};
  LayerChoice dp8, tp2, tp2s;
  dp8.tp = 1;
  tp2.tp = 2;
  tp2s.tp = 2;
  tp2s.tp_order = TpOrder::strided;
  // dp 8 → dp 4: each device needs its neighbour's samples (forward gather); the gradient goes back as a slice.
  const TransformCost up = slice_gather_cost(c, group, 8, dp8, tp2, 1e6);
  EXPECT_GT(up.fwd_s, 0);
  EXPECT_EQ(up.bwd_s, 0);
  const TransformCost down = slice_gather_cost(c, group, 8, tp2, dp8, 1e6);
  EXPECT_EQ(down.fwd_s, 0);
  EXPECT_DOUBLE_EQ(down.bwd_s, up.fwd_s);
  // Same tp, different order: both directions move data; same layout: nothing.
  const TransformCost order = slice_gather_cost(c, group, 8, tp2, tp2s, 1e6);
  EXPECT_GT(order.fwd_s, 0);
  EXPECT_GT(order.bwd_s, 0);
  EXPECT_EQ(slice_gather_cost(c, group, 8, tp2, tp2, 1e6).time_s(), 0);
  // Gathering 4× the samples costs more than 2×.
  LayerChoice tp4;
  tp4.tp = 4;
  EXPECT_GT(slice_gather_cost(c, group, 8, dp8, tp4, 1e6).fwd_s, up.fwd_s);
}

TEST(Layerwise, StridedDevicesAndDpRanks) {
  const std::vector<int> group{10, 11, 12, 13, 14, 15, 16, 17};
  // tp 2 strided over 8: tp groups {10,14}, {11,15}, ...
  const auto d = layer_choice_devices(group, 2, TpOrder::strided);
  EXPECT_EQ(d, (std::vector<int>{10, 14, 11, 15, 12, 16, 13, 17}));
  EXPECT_EQ(layer_choice_devices(group, 2, TpOrder::consecutive), group);
  EXPECT_EQ(layout_dp_rank(5, 8, 2, TpOrder::consecutive), 2);
  EXPECT_EQ(layout_dp_rank(5, 8, 2, TpOrder::strided), 1);
}

TEST(Layerwise, MixedStrategyPaysTransformationsAndFits) {
  const auto m = model::zoo_model("swin-huge-32");
  const auto c = cost_test::cluster("dgx-a100");
  const int L = static_cast<int>(m.layers.size());
  const int half = L / 2;
  const Strategy mixed = completed(fmt::format("mbs=4,gbs=64,stages=0+1+2+3+4+5+6+7:dp8:tp1:{},layers=tp1*{}+tp4*{}",
                                               L, half, L - half),
                                   m, c);
  const Estimate e = estimate(m, c, mixed);
  EXPECT_GT(e.samples_per_s, 0);
  ASSERT_EQ(e.stages.size(), 1u);
  // The stage time is the layers' times plus one Slice-Gather (tp1 → tp4) between them.
  Strategy px = completed("dp=8,tp=1,pp=1,mbs=4,gbs=64", m, c);
  LayerwiseCoster k(m, c, px, px.placement, 32);
  LayerChoice a, b;
  a.tp = 1;
  b.tp = 4;
  double sum = 0;
  for (int l = 0; l < L; ++l) sum += k.cost(l, l < half ? a : b).time_s();
  const TransformCost t = k.transform(a, b, k.output_bytes_per_sample(half - 1, a));
  EXPECT_GT(t.time_s(), 0);
  EXPECT_NEAR(e.stages[0].time_s, sum + t.time_s(), 1e-9 * e.stages[0].time_s);
}

TEST(Layerwise, RulesNameTheField) {
  const auto m = model::zoo_model("bert-huge-32");
  const auto c = cost_test::cluster("dgx-a100");
  const int L = static_cast<int>(m.layers.size());
  // Layer dp must divide the stage's samples per round: stage dp 2 × tp 4, mbs 1 = 2 samples; tp 1 → dp 8.
  const Strategy s = completed(
      fmt::format("mbs=1,gbs=64,stages=0+1+2+3+4+5+6+7:dp2:tp4:{},layers=tp1*{}", L, L), m, c);
  const std::string err = error_of([&] { estimate(m, c, s); });
  EXPECT_NE(err.find("layer dp divides the stage's samples per round"), std::string::npos) << err;
}

}  // namespace
