// tests/cli/test_layerwise_cli: `strata plan --layerwise --memory-budget --gbs auto` end to end — the per-layer
// plan is printed with its choices, its plan file reads back in `strata estimate --strategy-file` with the same
// throughput, and `--gbs auto` picks a batch size by itself.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace {

TEST(LayerwiseCli, PlanFileReadsBackInEstimate) {
  const std::string f = "/tmp/strata_layerwise_cli.json";
  const auto r = strata_test::run_cli("plan --model bert-huge-32 --cluster dgx-a100 --gbs 64 --memory-budget 12 "
                                      "--layerwise --max-pp 2 --json " + f);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("per-layer choices:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best uniform"), std::string::npos) << r.out;
  std::ifstream in(f);
  const auto j = nlohmann::json::parse(in);
  const double rate = j["best"]["estimate"]["samples_per_s"].get<double>();
  const auto e = strata_test::run_cli("estimate --model bert-huge-32 --cluster dgx-a100 --json --strategy-file " + f);
  ASSERT_EQ(e.code, 0) << e.out << e.err;
  const auto je = nlohmann::json::parse(e.out);
  EXPECT_NEAR(je["samples_per_s"].get<double>(), rate, 1e-6 * rate);
}

TEST(LayerwiseCli, GbsAutoChoosesABatch) {
  const auto r = strata_test::run_cli("plan --model vit-huge-32 --cluster dgx-a100 --gbs auto --memory-budget 8 "
                                      "--max-pp 1");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("gbs auto"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best strategy: "), std::string::npos) << r.out;
}

}  // namespace
