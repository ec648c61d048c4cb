// tests/cost/test_fp8_casts: `fp8cast=fused|separate` — TransformerEngine's fused cast kernels against torchao
// float8's separate amax and cast kernels per GEMM operand (data/precision_recipes.json). The key parses, prints,
// round-trips and needs dtype=fp8; a separate-cast block pays exactly the recipe's extra bytes per GEMM input
// element, once in forward and twice in backward, at the element-wise bandwidth.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "helpers.hpp"
#include "strata/cost/precision.hpp"
#include "strata/cost/stage.hpp"

using namespace strata;
using namespace strata::cost;

TEST(Fp8Casts, KeyParsesPrintsRoundTripsAndNeedsFp8) {
  const auto s = parse_strategy("dp=2,tp=4,pp=1,mbs=1,gbs=8,dtype=fp8,fp8cast=separate");
  EXPECT_TRUE(s.fp8_separate_casts);
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8,dtype=fp8").fp8_separate_casts);  // fused is the default
  EXPECT_FALSE(parse_strategy("dp=2,gbs=8,dtype=fp8,fp8cast=fused").fp8_separate_casts);
  EXPECT_NE(to_cli_string(s).find(",fp8cast=separate"), std::string::npos);
  EXPECT_EQ(to_cli_string(parse_strategy("dp=2,gbs=8,dtype=fp8")).find("fp8cast"), std::string::npos);
  EXPECT_EQ(to_json(s)["fp8_cast"], "separate");
  EXPECT_TRUE(strategy_from_json(nlohmann::json::parse(to_json(s).dump()), "s.json").fp8_separate_casts);
  EXPECT_TRUE(parse_strategy(to_cli_string(s)).fp8_separate_casts);
  EXPECT_NE(cost_test::error_of([] { parse_strategy("gbs=8,fp8cast=maybe"); }).find("fp8cast: 'maybe' is not fused or separate"),
            std::string::npos);
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1");
  EXPECT_NE(cost_test::error_of([&] { complete_strategy(parse_strategy("dp=8,gbs=8,fp8cast=separate"), m, c); })
                .find("fp8cast=separate needs dtype=fp8"),
            std::string::npos);
}

TEST(Fp8Casts, SeparateCastsAddTheRecipesExtraBytes) {
  const auto& r = precision_recipe(hw::Dtype::fp8);
  ASSERT_GT(r.fp8_separate_scaling_bytes_per_gemm_input_element, r.fp8_scaling_bytes_per_gemm_input_element);
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1");
  const auto& k = builtin_constants();
  for (const char* spec : {"dp=8,mbs=1,gbs=8,dtype=fp8", "dp=2,tp=4,mbs=2,gbs=8,sp=on,dtype=fp8"}) {
    const auto fused = complete_strategy(parse_strategy(spec), m, c);
    const auto sep = complete_strategy(parse_strategy(std::string(spec) + ",fp8cast=separate"), m, c);
    const auto ctx_f = make_stage_context(m, c, fused, cost_test::first_devices(8));
    const auto ctx_s = make_stage_context(m, c, sep, ctx_f.devices);
    const model::LayerSpec& block = m.layers[1];
    const auto f = layer_stage_cost(m, block, ctx_f, model::Recompute::none);
    const auto e = layer_stage_cost(m, block, ctx_s, model::Recompute::none);
    double inputs = 0;  // Σ m·k over the block's forward GEMMs on one tp rank
    for (const auto& g : model::layer_cost(block, cost_test::stage_query(fused, m)).fwd_gemms) inputs += g.count * g.m * g.k;
    const double extra = (r.fp8_separate_scaling_bytes_per_gemm_input_element - r.fp8_scaling_bytes_per_gemm_input_element) *
                         inputs / (ctx_f.memory_bw_bytes_per_s * k.memory_bw_efficiency);
    EXPECT_GT(extra, 0) << spec;
    EXPECT_NEAR(e.fwd_compute_s - f.fwd_compute_s, extra, 1e-9 * f.fwd_compute_s) << spec;
    EXPECT_NEAR(e.bwd_compute_s - f.bwd_compute_s, 2 * extra, 1e-9 * f.bwd_compute_s) << spec;
  }
}
