// End-to-end tests of `strata estimate` and `strata validate`: JSON keys, exit code 2 with a one-line error
// naming the rule, the note on a dtype the GPU runs on a fallback path, the plan-file round trip.
#include <gtest/gtest.h>

#include "cli_run.hpp"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <string>
#include <sys/wait.h>

namespace {
using Result = strata_test::CliResult;
Result run_strata(const std::string& args) { return strata_test::run_cli(args, strata_test::Stderr::merged); }
}  // namespace

TEST(CostCli, EstimateJsonHasTheDocumentedKeys) {
  const auto r = run_strata("estimate --model gpt3-175b --cluster dgx-a100:8 --json "
                            "--strategy \"tp=8,pp=8,mbs=1,gbs=64,v=3,recompute=selective,sp=on\"");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"iteration_time_s", "samples_per_s", "tokens_per_s", "tflops_per_gpu", "mfu", "fits",
                        "peak_memory_bytes", "stages"})
    EXPECT_TRUE(j.contains(k)) << k;
  ASSERT_EQ(j["stages"].size(), 8u);
  for (const char* k : {"time_s", "compute_s", "tp_comm_s", "p2p_s", "dp_comm_s", "memory_bytes", "devices"})
    EXPECT_TRUE(j["stages"][0].contains(k)) << k;
  EXPECT_TRUE(j["fits"].get<bool>());
}

TEST(CostCli, ImpossibleStrategyExitsTwoNamingTheRule) {
  const auto r = run_strata("estimate --model gpt3-175b --cluster dgx-a100:8 --strategy \"tp=8,pp=3,gbs=64\"");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("dp·tp·pp = devices"), std::string::npos) << r.out;
}

// fp8 on an A100 runs at its bf16 rate (docs/hardware.md §The peak fallback rule): the output says so, and says
// nothing when the dtype is native.
TEST(CostCli, EstimateNamesADtypeFallback) {
  const auto a100 = run_strata("estimate --model gpt2-xl --cluster dgx-a100:1 --strategy \"gbs=32,dtype=fp8\"");
  ASSERT_EQ(a100.code, 0) << a100.out;
  EXPECT_NE(a100.out.find("a100-80gb has no fp8 path and is costed at its bf16 rate, 312 TFLOP/s"), std::string::npos)
      << a100.out;
  const auto h100 = run_strata("estimate --model gpt2-xl --cluster dgx-h100:1 --strategy \"gbs=32,dtype=fp8\"");
  ASSERT_EQ(h100.code, 0) << h100.out;
  EXPECT_EQ(h100.out.find("fallback"), std::string::npos) << h100.out;
}

TEST(CostCli, StrategyFileAndPlanFileRoundTrip) {
  const auto first = run_strata("estimate --model small-gpt --cluster dgx-a100:1 --json --strategy \"dp=2,tp=2,pp=2,gbs=16\"");
  ASSERT_EQ(first.code, 0) << first.out;
  const auto j = nlohmann::json::parse(first.out);
  const std::string path = ::testing::TempDir() + "/strata_cost_cli_plan.json";
  {
    std::ofstream f(path);
    f << nlohmann::json{{"best", {{"strategy", j["strategy"]}, {"estimate", {}}}}}.dump();
  }
  const auto second = run_strata("estimate --model small-gpt --cluster dgx-a100:1 --json --strategy-file " + path);
  ASSERT_EQ(second.code, 0) << second.out;
  EXPECT_EQ(nlohmann::json::parse(second.out)["iteration_time_s"], j["iteration_time_s"]);
  std::remove(path.c_str());
}

TEST(CostCli, ValidateJsonMeetsTargets) {
  const auto r = run_strata("validate --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_LE(j["time_mean_abs_pct"].get<double>(), 8.0);
  EXPECT_LE(j["time_max_abs_pct"].get<double>(), 15.0);
  EXPECT_LE(j["memory_mean_abs_pct"].get<double>(), 10.0);
  EXPECT_GE(j["rows"].size(), 24u);
  // Throughput rows carry the predicted share of GPU memory used: in (0, 1] for every row predicted to fit.
  int with_fraction = 0;
  for (const auto& row : j["rows"]) {
    if (!row.contains("memory_fraction")) continue;
    ++with_fraction;
    EXPECT_GT(row["memory_fraction"].get<double>(), 0.0) << row["name"];
    if (row["fits"].get<bool>()) EXPECT_LE(row["memory_fraction"].get<double>(), 1.0) << row["name"];
  }
  EXPECT_GE(with_fraction, 200);
}

// `validate --constants FILE` costs with a candidate constants file: the data file itself reproduces the built-in
// report byte for byte, a changed value changes it, and an out-of-range value is one input error naming the field.
TEST(CostCli, ValidateWithACandidateConstantsFile) {
  const std::string data = std::string(STRATA_SOURCE_DIR) + "/data/cost_constants.json";
  const auto builtin = run_strata("validate --json");
  const auto same = run_strata("validate --json --constants " + data);
  ASSERT_EQ(same.code, 0) << same.out;
  EXPECT_EQ(same.out, builtin.out);

  std::ifstream in(data);
  auto j = nlohmann::json::parse(in);
  const std::string path = testing::TempDir() + "strata_candidate_constants.json";
  j["constants"]["gemm_max_efficiency"]["value"] = 0.5;
  std::ofstream(path) << j.dump();
  const auto slower = run_strata("validate --json --constants " + path);
  ASSERT_EQ(slower.code, 0) << slower.out;
  EXPECT_GT(nlohmann::json::parse(slower.out)["time_mean_abs_pct"].get<double>(),
            nlohmann::json::parse(builtin.out)["time_mean_abs_pct"].get<double>() + 10.0);

  j["constants"]["gemm_max_efficiency"]["value"] = 2.0;
  std::ofstream(path) << j.dump();
  const auto bad = run_strata("validate --constants " + path);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find(path), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("gemm_max_efficiency"), std::string::npos) << bad.out;
  EXPECT_EQ(std::count(bad.out.begin(), bad.out.end(), '\n'), 1) << bad.out;

  // A per-GPU map entry out of range names the map and the GPU prefix.
  j["constants"]["gemm_max_efficiency"]["value"] = 0.75;
  j["constants"]["ampere_attention_gpu_efficiency"]["value"]["h100"] = 1.5;
  std::ofstream(path) << j.dump();
  const auto bad_map = run_strata("validate --constants " + path);
  EXPECT_EQ(bad_map.code, 2);
  EXPECT_NE(bad_map.out.find("ampere_attention_gpu_efficiency"), std::string::npos) << bad_map.out;
  EXPECT_NE(bad_map.out.find("h100"), std::string::npos) << bad_map.out;
  EXPECT_EQ(std::count(bad_map.out.begin(), bad_map.out.end(), '\n'), 1) << bad_map.out;
  std::remove(path.c_str());
}
