// tests/cost/test_profile_types: measured profiles per GPU type — a cluster of A100 and V100 nodes with rows
// measured on the A100 only: A100 stages take the measured times, V100 stages the roofline; untyped rows still
// apply to every type, and a typed row wins over an untyped one.
#include <gtest/gtest.h>

#include <vector>

#include "helpers.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/stage.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

Profile profile_with(const std::string& rows) {
  return profile_from_json(nlohmann::json::parse(R"({"source": "test", "device": "gpu", "dtype": "bf16",
                                                     "layers": [)" + rows + "]}"),
                           "p.json");
}

}  // namespace

TEST(ProfileGpuTypes, MixedClusterUsesMeasuredRowsOnlyForTheirType) {
  const auto m = cost_test::gpt(2, 1024, 16, 512);
  const auto c = cost_test::cluster("dgx-a100:1+p3.16xlarge:1");
  const auto s = complete_strategy(parse_strategy("dp=8,pp=2,mbs=1,gbs=16,attention=eager"), m, c);
  const auto p = profile_with(R"({"kind": "transformer", "hidden": 1024, "heads": 16, "ffn": 4096, "seq": 512, "tp": 1, "mbs": 1,
                                  "fwd_s": 0.125, "bwd_s": 0.25, "gpu_type": "A100-80GB"})");
  ASSERT_EQ(p.layers.size(), 1u);
  EXPECT_EQ(p.layers[0].gpu_type, "a100-80gb");
  CostOptions with;
  with.profile = &p;
  std::vector<int> a100(8), v100(8);
  for (int i = 0; i < 8; ++i) {
    a100[i] = i;
    v100[i] = 8 + i;
  }
  const model::LayerSpec& block = m.layers[1];
  const auto measured = layer_stage_cost(m, block, make_stage_context(m, c, s, a100, with), s.recompute);
  EXPECT_DOUBLE_EQ(measured.fwd_compute_s, 0.125);
  EXPECT_DOUBLE_EQ(measured.bwd_compute_s, 0.25);
  const auto analytic = layer_stage_cost(m, block, make_stage_context(m, c, s, v100, with), s.recompute);
  const auto roofline = layer_stage_cost(m, block, make_stage_context(m, c, s, v100, {}), s.recompute);
  EXPECT_DOUBLE_EQ(analytic.fwd_compute_s, roofline.fwd_compute_s);
  EXPECT_NE(analytic.fwd_compute_s, 0.125);
  // The profile round-trips with its type.
  EXPECT_EQ(profile_from_json(to_json(p), "again.json").layers[0].gpu_type, "a100-80gb");
}

TEST(ProfileGpuTypes, UntypedRowsApplyToAllAndTypedRowsWin) {
  const auto p = profile_with(R"({"kind": "transformer", "hidden": 64, "seq": 32, "fwd_s": 1.0, "bwd_s": 2.0},
                                 {"kind": "transformer", "hidden": 64, "seq": 32, "fwd_s": 3.0, "bwd_s": 6.0,
                                  "gpu_type": "h100-sxm"})");
  EXPECT_DOUBLE_EQ(profile_layer_times(p, model::LayerKind::transformer, 64, 32, 1, 1, "v100-16gb")->fwd_s, 1.0);
  EXPECT_DOUBLE_EQ(profile_layer_times(p, model::LayerKind::transformer, 64, 32, 1, 1, "h100-sxm")->fwd_s, 3.0);
  EXPECT_DOUBLE_EQ(profile_layer_times(p, model::LayerKind::transformer, 64, 32, 1, 1)->fwd_s, 1.0);
  // A top-level gpu_type labels every row without one.
  const auto labelled = profile_from_json(
      nlohmann::json::parse(R"({"gpu_type": "a100-40gb", "layers": [{"kind": "transformer", "hidden": 64,
                                "seq": 32, "fwd_s": 1.0, "bwd_s": 2.0}]})"),
      "l.json");
  EXPECT_EQ(labelled.layers[0].gpu_type, "a100-40gb");
  EXPECT_FALSE(profile_layer_times(labelled, model::LayerKind::transformer, 64, 32, 1, 1, "h100-sxm").has_value());
}
