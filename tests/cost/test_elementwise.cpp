// tests/cost/test_elementwise: `elementwise=fused|eager` — the key parses, prints and round-trips through JSON,
// a bad value names itself, and an eager block pays exactly its element-wise traffic again at
// 1/eager_elementwise_efficiency of the bandwidth (docs/cost-model.md §Element-wise kernels).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "helpers.hpp"
#include "strata/cost/stage.hpp"

using namespace strata;
using namespace strata::cost;

TEST(ElementwiseKey, ParsesPrintsAndRoundTrips) {
  const auto s = parse_strategy("dp=2,tp=4,pp=1,mbs=1,gbs=8,elementwise=eager");
  EXPECT_TRUE(s.eager_elementwise);
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8,elementwise=fused").eager_elementwise);
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8").eager_elementwise);  // fused is the default
  EXPECT_NE(to_cli_string(s).find(",elementwise=eager"), std::string::npos);
  EXPECT_EQ(to_cli_string(parse_strategy("dp=2,gbs=8")).find("elementwise"), std::string::npos);
  EXPECT_EQ(to_json(s)["elementwise"], "eager");
  EXPECT_TRUE(strategy_from_json(nlohmann::json::parse(to_json(s).dump()), "s.json").eager_elementwise);
  EXPECT_TRUE(parse_strategy(to_cli_string(s)).eager_elementwise);
  EXPECT_NE(cost_test::error_of([] { parse_strategy("gbs=8,elementwise=lazy"); }).find("elementwise: 'lazy' is not fused or eager"),
            std::string::npos);
}

TEST(ElementwiseKey, EagerAddsTheTrafficAtTheEagerBandwidth) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1");
  const auto& k = builtin_constants();
  ASSERT_LT(k.eager_elementwise_efficiency, 1.0);
  // Sharded data parallelism: FSDP's 16-bit parameters (no autocast), whose traffic is the fused form's at the
  // eager factor; the autocast stack (plain loops) counts its ops one by one (TrainProbe tests).
  for (const char* spec : {"dp=8,mbs=1,gbs=8,zero=3", "dp=2,tp=4,mbs=2,gbs=8,sp=on,zero=1"}) {
    const auto fused = complete_strategy(parse_strategy(spec), m, c);
    const auto eager = complete_strategy(parse_strategy(std::string(spec) + ",elementwise=eager"), m, c);
    const auto ctx_f = make_stage_context(m, c, fused, cost_test::first_devices(8));  // the node (dp·tp = 8)
    const auto ctx_e = make_stage_context(m, c, eager, ctx_f.devices);
    const model::LayerSpec& block = m.layers[1];
    const auto f = layer_stage_cost(m, block, ctx_f, model::Recompute::none);
    const auto e = layer_stage_cost(m, block, ctx_e, model::Recompute::none);
    const double bytes = model::layer_cost(block, cost_test::stage_query(fused, m)).fwd_elementwise_bytes;
    const double fused_s = bytes / (ctx_f.memory_bw_bytes_per_s * k.memory_bw_efficiency);
    const double extra = fused_s * (1.0 / k.eager_elementwise_efficiency - 1.0);
    EXPECT_NEAR(e.fwd_compute_s - f.fwd_compute_s, extra, 1e-9 * f.fwd_compute_s) << spec;
    EXPECT_NEAR(e.bwd_compute_s - f.bwd_compute_s, 2 * extra, 1e-9 * f.bwd_compute_s) << spec;
    EXPECT_GT(extra, 0) << spec;
  }
}
