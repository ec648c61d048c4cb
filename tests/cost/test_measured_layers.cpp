// tests/cost/test_measured_layers: the per-layer GPU measurements of scripts/gpu_layer_profile.py
// (data/calibration/gpu_layer_*.json, issue 13 item 8) — they load as measured profiles that replace the roofline
// of a Llama-3-8B block on their own GPU type, and `strata validate` compares every row with the cost model.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "strata/core/data.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/validate.hpp"

using namespace strata;
using namespace strata::cost;

TEST(MeasuredLayers, FilesAreProfilesThatReplaceTheRooflineOnTheirGpuType) {
  const auto doc = core::embedded_json("calibration/gpu_layer_h100-sxm_bf16.json");
  const auto p = profile_from_json(doc, "data/calibration/gpu_layer_h100-sxm_bf16.json");
  ASSERT_EQ(p.layers.size(), 4u);
  EXPECT_EQ(p.gpu_type, "h100-sxm");
  const auto m = model::zoo_model("llama3-8b");
  const auto c = cost_test::cluster("dgx-h100:1+dgx-a100:1");
  CostOptions with;
  with.profile = &p;
  for (const auto& row : doc.at("layers")) {
    const int tp = row.at("tp").get<int>();
    // One stage = one tp group (pipeline over the rest), so that a stage's devices are exactly tp GPUs.
    const auto s = complete_strategy(parse_strategy(fmt::format("dp=1,tp={},pp={},mbs=1,gbs=16", tp, 16 / tp)), m, c);
    std::vector<int> h100(tp), a100(tp);
    for (int i = 0; i < tp; ++i) {
      h100[i] = i;
      a100[i] = 8 + i;
    }
    const model::LayerSpec& block = m.layers[1];
    const auto on_h100 = layer_stage_cost(m, block, make_stage_context(m, c, s, h100, with), model::Recompute::none);
    EXPECT_DOUBLE_EQ(on_h100.fwd_compute_s, row.at("fwd_s").get<double>()) << "tp " << tp;
    EXPECT_DOUBLE_EQ(on_h100.bwd_compute_s, row.at("bwd_s").get<double>()) << "tp " << tp;
    // The A100 of the same cluster has no measured row: the roofline, which is not the H100's measurement.
    const auto on_a100 = layer_stage_cost(m, block, make_stage_context(m, c, s, a100, with), model::Recompute::none);
    const auto roofline = layer_stage_cost(m, block, make_stage_context(m, c, s, a100), model::Recompute::none);
    EXPECT_DOUBLE_EQ(on_a100.fwd_compute_s, roofline.fwd_compute_s) << "tp " << tp;
    EXPECT_NE(on_a100.fwd_compute_s, on_h100.fwd_compute_s);
  }
}

TEST(MeasuredLayers, ValidateComparesEveryMeasuredRow) {
  const auto r = validate_calibration(builtin_constants());
  // 4 tp degrees per file (1 in the mbs-12 files); fwd, bwd and (where measured) the forward projection GEMMs.
  std::map<std::string, int> per_dataset;
  for (const auto& row : r.measured_layers) {
    ++per_dataset[row.dataset + " " + row.metric];
    EXPECT_GT(row.predicted, 0) << row.dataset << " " << row.name;
    EXPECT_NEAR(row.error_pct, 100.0 * (row.predicted - row.measured) / row.measured, 1e-9);
  }
  EXPECT_EQ(per_dataset["measured h100-sxm bf16 eager fwd ms"], 5);
  EXPECT_EQ(per_dataset["measured h100-sxm bf16 fused bwd ms"], 5);
  EXPECT_EQ(per_dataset["measured h100-sxm fp8 eager proj GEMMs fwd ms"], 4);
  EXPECT_EQ(per_dataset["measured h200 bf16 eager fwd ms"], 4);
  EXPECT_EQ(per_dataset["measured h200 fp8 eager bwd ms"], 4);
  EXPECT_EQ(r.measured_layers.size(), 58u);
  // Not fitted: the measured rows are not in the per-source summaries.
  for (const auto& s : r.sources) EXPECT_EQ(s.dataset.rfind("measured", 0), std::string::npos) << s.dataset;
}

TEST(MeasuredLayers, Bf16BlockOnH100WithinTheDocumentedError) {
  // docs/cost-model.md §Measured GPU layers: the bf16 H100 block at tp 1 and 2 (fwd and bwd) within 30 % (the
  // block ran with bf16 parameters, which a dp=1 strategy cannot state, so it is costed as the autocast stack and
  // its op-by-op casts: +25 to +28 % since issue 38, +4 to +16 % before); the fp8 rows are plain-PyTorch fp8 (not
  // TransformerEngine) and are reported, not bounded.
  const auto r = validate_calibration(builtin_constants());
  int checked = 0;
  for (const auto& row : r.measured_layers) {
    if (row.dataset != "measured h100-sxm bf16 eager" || row.metric == "proj GEMMs fwd ms") continue;
    if (row.name.find("tp=1 mbs=1 ") == std::string::npos && row.name.find("tp=2 mbs=1 ") == std::string::npos)
      continue;
    EXPECT_LE(std::abs(row.error_pct), 30.0) << row.name << " " << row.metric;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
}
