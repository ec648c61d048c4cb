// End-to-end tests of `strata allocate` and `strata schedule`: the worked example through the binary, JSON keys,
// CSV output, determinism, and exit code 2 with a one-line error for bad input.
#include <gtest/gtest.h>

#include "cli_run.hpp"
#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>

namespace {
using Result = strata_test::CliResult;
Result run_strata(const std::string& args, bool merge_stderr = true) {
  return strata_test::run_cli(args, merge_stderr ? strata_test::Stderr::merged : strata_test::Stderr::discarded);
}
const std::string kExample = std::string(STRATA_SOURCE_DIR) + "/examples/sched_throughputs.json";
}  // namespace

TEST(SchedCli, AllocateJsonIsTheThesisExample) {
  const auto r = run_strata("allocate --policy max-min-fairness --throughputs " + kExample + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"allocation", "effective_throughput", "normalized_throughput", "objective"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_NEAR(j["allocation"]["job0"]["v100"].get<double>(), 5.0 / 11, 1e-6);
  EXPECT_NEAR(j["allocation"]["job1"]["k80"].get<double>(), 1.0 / 11, 1e-6);
  EXPECT_NEAR(j["allocation"]["job2"]["k80"].get<double>(), 10.0 / 11, 1e-6);
  for (const char* job : {"job0", "job1", "job2"})
    EXPECT_NEAR(j["normalized_throughput"][job].get<double>(), 8.0 / 11, 1e-6);
  EXPECT_NEAR(j["effective_throughput"]["job0"].get<double>(), 200.0 / 11, 1e-5);
}

TEST(SchedCli, AllocateTableAndEveryPolicyRuns) {
  const auto r = run_strata("allocate --throughputs " + kExample);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("X v100"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.7273"), std::string::npos) << r.out;
  for (const char* p : {"max-min-fairness-agnostic", "finish-time-fairness", "makespan", "fifo", "sjf",
                        "max-throughput", "min-cost", "min-cost-slo", "hierarchical"}) {
    const auto q = run_strata(std::string("allocate --policy ") + p + " --throughputs " + kExample + " --json", false);
    EXPECT_EQ(q.code, 0) << p << ": " << q.out;
    EXPECT_TRUE(nlohmann::json::accept(q.out)) << p;
  }
  EXPECT_EQ(run_strata("allocate --policy makespan-budget --budget 100 --throughputs " + kExample).code, 0);
}

TEST(SchedCli, BadInputExitsTwoWithOneLine) {
  const std::string path = ::testing::TempDir() + "/sched_bad.json";
  std::ofstream(path) << R"({"workers": {"v100": 1}, "jobs": [{"name": "a", "throughputs": {"v100": 0}}]})";
  auto r = run_strata("allocate --throughputs " + path);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("runs on no GPU type"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run_strata("allocate --policy nope --throughputs " + kExample);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("unknown policy"), std::string::npos);
  r = run_strata("schedule --cluster v100:4 --generate jobs=5,rate=1 --trace " + kExample);
  EXPECT_EQ(r.code, 2);
  r = run_strata("schedule --cluster v100 --generate jobs=5");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--cluster"), std::string::npos) << r.out;
  r = run_strata("allocate --policy makespan-budget --throughputs " + kExample);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--budget"), std::string::npos) << r.out;
}

TEST(SchedCli, ScheduleJsonCsvAndDeterminism) {
  const std::string csv = ::testing::TempDir() + "/sched_jobs.csv";
  const std::string args = "schedule --policy max-min-fairness --cluster \"v100:2,p100:2,k80:2\" --generate "
                           "\"jobs=12,rate=1,seed=4\" --json --csv " + csv;
  const auto a = run_strata(args, false);
  ASSERT_EQ(a.code, 0) << a.out;
  const auto j = nlohmann::json::parse(a.out);
  for (const char* k : {"avg_jct_s", "p50_jct_s", "p90_jct_s", "p99_jct_s", "makespan_s", "total_cost_usd",
                        "utilization", "jain_fairness"})
    EXPECT_TRUE(j["metrics"].contains(k)) << k;
  EXPECT_EQ(j["metrics"]["jobs_finished"].get<int>(), 12);
  EXPECT_GT(j["metrics"]["total_cost_usd"].get<double>(), 0);  // default job types carry GCP prices
  std::ifstream in(csv);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 13);
  EXPECT_EQ(text.rfind("name,job_type,scale_factor", 0), 0u);
  EXPECT_EQ(run_strata(args, false).out, a.out);
}

TEST(SchedCli, ScheduleTraceFileWithClusterFlag) {
  const std::string path = ::testing::TempDir() + "/sched_trace.json";
  std::ofstream(path) << R"({"jobs": [
    {"name": "a", "throughputs": {"v100": 2, "k80": 1}, "steps": 7200, "arrival_s": 0},
    {"name": "b", "throughputs": {"v100": 2, "k80": 1}, "steps": 3600, "arrival_s": 600}]})";
  const auto r = run_strata("schedule --policy fifo --cluster \"v100:1,k80:1\" --trace " + path + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["metrics"]["jobs_finished"].get<int>(), 2);
  // FIFO: a holds the V100 (7200 steps at 2/s = 3600 s + 5 s restart); b gets the K80 from the round at 720 s.
  EXPECT_NEAR(j["jobs_detail"][0]["jct_s"].get<double>(), 3605.0, 1e-6);
  const auto no_cluster = run_strata("schedule --trace " + path);
  EXPECT_EQ(no_cluster.code, 2);
}

TEST(SchedCli, PriceTraceAndGeneratedExtras) {
  const std::string prices = std::string(STRATA_SOURCE_DIR) + "/examples/sched_price_trace.json";
  const auto r = run_strata("schedule --policy min-cost-slo --price spot --cluster v100:2,p100:2,k80:2 --generate "
                            "\"jobs=8,rate=1,seed=2,slo=1\" --price-trace " + prices);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("price trace:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SLO violations:"), std::string::npos) << r.out;
  const auto bad = run_strata("schedule --cluster v100:2 --generate jobs=2 --price-trace " + kExample);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("unknown field"), std::string::npos) << bad.out;
}
