// tests/cli/test_plan_cli: end-to-end `strata plan` — the plan file round-trips through `strata estimate
// --strategy-file` (same iteration time), the file is byte-identical for --threads 1 and 2 (except
// search_time_s), --explain names the GPU types and reasons, the table's legend names the dtype's peak, and
// impossible requests exit 2 with one line.
#include <gtest/gtest.h>

#include "cli_run.hpp"
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using PlanRun = strata_test::CliResult;

PlanRun plan_run(const std::string& args) { return strata_test::run_cli(args); }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The file without its search_time_s line (the only non-deterministic value).
std::string without_time(const std::string& text) {
  std::stringstream in(text);
  std::string line, out;
  while (std::getline(in, line))
    if (line.find("\"search_time_s\"") == std::string::npos) out += line + "\n";
  return out;
}

const std::string kAmp = "plan --model amp-gpt2 --cluster p3.8xlarge:3+g4dn.12xlarge:1 --gbs 32";

TEST(PlanCli, JsonRoundTripsThroughEstimateAndIsThreadIndependent) {
  const std::string f1 = "/tmp/strata_plan_cli_t1.json", f2 = "/tmp/strata_plan_cli_t2.json";
  const PlanRun a = plan_run(kAmp + " --threads 1 --json " + f1);
  ASSERT_EQ(a.code, 0) << a.err;
  const PlanRun b = plan_run(kAmp + " --threads 2 --json " + f2);
  ASSERT_EQ(b.code, 0) << b.err;
  const std::string j1 = read_file(f1), j2 = read_file(f2);
  ASSERT_FALSE(j1.empty());
  EXPECT_EQ(without_time(j1), without_time(j2));
  const auto plan = nlohmann::json::parse(j1);
  for (const char* k : {"best", "candidates", "baselines", "search_time_s", "evaluated"})
    EXPECT_TRUE(plan.contains(k)) << k;
  EXPECT_GT(plan["evaluated"].get<long long>(), 0);
  const double best_time = plan["best"]["estimate"]["iteration_time_s"].get<double>();

  const PlanRun e = plan_run("estimate --model amp-gpt2 --cluster p3.8xlarge:3+g4dn.12xlarge:1 --strategy-file " +
                             f1 + " --json");
  ASSERT_EQ(e.code, 0) << e.err;
  const auto est = nlohmann::json::parse(e.out);
  EXPECT_DOUBLE_EQ(est["iteration_time_s"].get<double>(), best_time);
  EXPECT_EQ(est["strategy"]["split"], plan["best"]["strategy"]["split"]);
  std::remove(f1.c_str());
  std::remove(f2.c_str());
}

TEST(PlanCli, TableAndExplanation) {
  const PlanRun r = plan_run(kAmp + " --explain --top 3");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"Top 3 plans", "megatron", "uniform", "dp-only", "zero3-only", "faster than megatron",
                        "v100-16gb", "t4", "why", "pruned", "PTD-P count", "MFU: model FLOPs / the bf16 peak"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

// The legend names the peak the MFU column divides by: the plan's dtype, not always bf16.
TEST(PlanCli, LegendNamesThePlansDtypePeak) {
  const PlanRun r = plan_run("plan --model gpt2-small --cluster dgx-a100:1 --gbs 8 --dtype fp32 --top 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("MFU: model FLOPs / the fp32 peak"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("bf16 peak"), std::string::npos) << r.out;
}

TEST(PlanCli, ImpossibleRequestsExitTwoWithOneLine) {
  const PlanRun r = plan_run("plan --model gpt3-175b --cluster g4dn.12xlarge:1 --gbs 8");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("smallest memory"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const PlanRun bad = plan_run(kAmp + " --space 4d");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--space"), std::string::npos) << bad.err;
}

}  // namespace
