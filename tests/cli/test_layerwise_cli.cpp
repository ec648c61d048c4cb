// tests/cli/test_layerwise_cli: `strata plan --layerwise --memory-budget --gbs auto` end to end — the per-layer
// plan is printed with its choices, its plan file reads back in `strata estimate --strategy-file` with the same
// throughput, and `--gbs auto` picks a batch size by itself.
#include <gtest/gtest.h>

#include <cstdio>
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

// The layerwise plan file has the shape every search writes (issue 41) and round-trips through simulate, report
// and export; --report and --export are honoured, not ignored.
TEST(LayerwiseCli, PlanFileRoundTripsThroughSimulateReportExport) {
  const std::string f = "/tmp/strata_layerwise_roundtrip.json", html = "/tmp/strata_layerwise_roundtrip.html";
  std::remove(html.c_str());
  // A decoder (Megatron-LM trains decoder-only transformers) whose per-layer plan beats the uniform one at 8 GiB.
  const auto r = strata_test::run_cli("plan --model gpt2-large --cluster dgx-a100 --gbs 64 --memory-budget 8 "
                                      "--layerwise --max-pp 2 --json " + f + " --report " + html + " --export megatron",
                                      strata_test::Stderr::merged);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("--tensor-model-parallel-size"), std::string::npos) << r.out;  // --export honoured
  EXPECT_TRUE(std::ifstream(html).good());                                             // --report honoured
  std::ifstream in(f);
  const auto j = nlohmann::json::parse(in);
  for (const char* key : {"model", "cluster", "devices", "gbs", "seq", "best", "candidates", "baselines", "search"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["model"], "gpt2-large");
  EXPECT_EQ(j["gbs"].get<int>(), 64);
  EXPECT_GE(j["candidates"].size(), 2u);
  const auto s = strata_test::run_cli("simulate --plan " + f + " --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const auto sj = nlohmann::json::parse(s.out);
  EXPECT_GT(sj["iteration_time_s"].get<double>(), 0);
  const auto rep = strata_test::run_cli("report --quiet --plan " + f + " --out " + html);
  EXPECT_EQ(rep.code, 0) << rep.err;
  // The per-layer plan exports as its closest uniform plan (--closest); plainly, a per-layer best is refused by name.
  const auto x = strata_test::run_cli("export --plan " + f + " --to megatron --closest");
  EXPECT_EQ(x.code, 0) << x.err;
  EXPECT_NE(x.out.find("--tensor-model-parallel-size"), std::string::npos) << x.out;
  const auto plain = strata_test::run_cli("export --plan " + f + " --to megatron");
  if (j["best"]["strategy"].contains("stages")) {
    EXPECT_EQ(plain.code, 2) << plain.out;
    EXPECT_NE(plain.err.find("per-layer choices"), std::string::npos) << plain.err;
  } else {
    EXPECT_EQ(plain.code, 0) << plain.err;
  }
}

}  // namespace
