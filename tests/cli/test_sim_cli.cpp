// tests/cli/test_sim_cli: end-to-end runs of `strata simulate` — the JSON keys (iteration time, bubble, peak
// memory per device, the analytical estimate beside it), the readable table, a Chrome trace file, a plan file
// as input, and bad input giving exit code 2 with one error line.
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

using SimRun = strata_test::CliResult;

SimRun sim_run(const std::string& args) { return strata_test::run_cli(args); }

std::string temp_path(const char* suffix) {
  char path[] = "/tmp/strata_sim_cli_fileXXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  unlink(path);
  return std::string(path) + suffix;
}

const char* kArgs = "--model megatron-1.7b --cluster dgx-a100:2 --strategy \"dp=2,tp=2,pp=4,mbs=1,gbs=16\"";

}  // namespace

TEST(SimCli, JsonHasTheDocumentedKeys) {
  const auto r = sim_run(std::string("simulate ") + kArgs + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"iteration_time_s", "bubble_fraction", "peak_memory_bytes", "analytical_iteration_time_s",
                        "peak_memory_time_s", "devices", "events"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0);
  ASSERT_EQ(j["peak_memory_bytes"].size(), 16u);
  for (const auto& b : j["peak_memory_bytes"]) EXPECT_GT(b.get<double>(), 1e9);
  const double sim = j["iteration_time_s"], est = j["analytical_iteration_time_s"];
  EXPECT_NEAR(sim, est, 0.1 * est);
  const double bubble = j["bubble_fraction"];
  EXPECT_GT(bubble, 0.0);
  EXPECT_LT(bubble, 0.5);
}

TEST(SimCli, TableForPeople) {
  const auto r = sim_run(std::string("simulate ") + kArgs);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* s : {"simulated iteration", "analytical estimate", "bubble", "peak memory", "stage"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

TEST(SimCli, TraceFileIsChromeJson) {
  const std::string path = temp_path(".json");
  const auto r = sim_run(std::string("simulate ") + kArgs + " --trace " + path);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(path);
  ASSERT_TRUE(f.good());
  const auto j = nlohmann::json::parse(f);
  ASSERT_TRUE(j["traceEvents"].is_array());
  int complete = 0, names = 0;
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid"));
    if (e["ph"] == "X") ++complete;
    if (e["ph"] == "M" && e["name"] == "thread_name") ++names;
  }
  EXPECT_GT(complete, 100);
  EXPECT_EQ(names, 16 * 4);  // every GPU: compute, two send streams, dp communication
  std::remove(path.c_str());
}

TEST(SimCli, PlanFileAsInput) {
  const std::string path = temp_path(".json");
  {
    std::ofstream f(path);
    f << R"({"model": "megatron-1.7b", "cluster": "dgx-a100:2",
             "best": {"strategy": {"dp": 2, "tp": 2, "pp": 4, "mbs": 1, "gbs": 16, "schedule": "interleaved", "v": 2}}})";
  }
  const auto r = sim_run("simulate --plan " + path + " --json");
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code == 0) {
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["strategy"]["schedule"], "interleaved");
  }
  std::remove(path.c_str());
}

TEST(SimCli, AsyncSchedulesReportSteadyState) {
  const auto r = sim_run("simulate --model megatron-1.7b --cluster dgx-a100:1 --strategy "
                         "\"tp=2,pp=4,mbs=1,gbs=8,schedule=2bw\" --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["iterations"], 4);
  for (const auto& d : j["devices"]) EXPECT_LE(d["max_weight_versions"].get<int>(), 2);
}

TEST(SimCli, BadInputExitsTwoWithOneLine) {
  for (const std::string args :
       {std::string("simulate --model megatron-1.7b --cluster dgx-a100:2"),
        std::string("simulate ") + kArgs + " --iterations -3",
        std::string("simulate --model megatron-1.7b --cluster dgx-a100:2 --strategy \"dp=3,tp=2,pp=4,gbs=16\""),
        std::string("simulate --plan /nonexistent/plan.json")}) {
    const auto r = sim_run(args);
    EXPECT_EQ(r.code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find("error"), std::string::npos) << args;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(SimCli, HelpTeaches) {
  const auto r = sim_run("simulate --help");
  ASSERT_EQ(r.code, 0);
  for (const char* s : {"--plan", "--trace", "--iterations", "Example", "Perfetto"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
}

// A measured profile drives the task durations, and on a host with more ranks than cores the output says that the
// analytical figure is the host-CPU bound while the simulator plays the schedule alone.
TEST(SimCli, ProfileAndSharedCpuHost) {
  const std::string profile = temp_path(".json"), cluster = temp_path(".json");
  std::ofstream(profile) << R"({"layers": [
      {"kind": "embedding", "hidden": 64, "seq": 32, "fwd_s": 1e-4, "bwd_s": 1e-4},
      {"kind": "transformer", "hidden": 64, "seq": 32, "fwd_s": 1e-2, "bwd_s": 2e-2},
      {"kind": "lm_head", "hidden": 64, "seq": 32, "fwd_s": 5e-3, "bwd_s": 1e-2}]})";
  std::ofstream(cluster) << R"({"nodes": [{"gpu": "cpu", "gpus": 4, "intra_link": "loopback", "nics": 1,
                                           "nic_link": "loopback", "cpu_cores": 2, "count": 1}]})";
  const std::string args = "simulate --model tiny-gpt --cluster " + cluster + " --profile " + profile +
                           " --strategy dp=4,gbs=8,mbs=1,dtype=fp32";
  const auto r = sim_run(args + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const double sim = j["iteration_time_s"], schedule = j["analytical_schedule_time_s"];
  // 2 micro-batches of 4·30 ms + 15 ms + 0.2 ms per rank: the simulator follows the profile, not the roofline.
  EXPECT_NEAR(schedule, 2 * 0.1352, 0.05 * schedule);
  EXPECT_NEAR(sim, schedule, 0.05 * schedule);
  // Four ranks on two cores: twice the per-rank compute, at least.
  EXPECT_GE(j["host_cpu_bound_s"].get<double>(), 2 * 2 * 0.1352);
  EXPECT_DOUBLE_EQ(j["analytical_iteration_time_s"].get<double>(), j["host_cpu_bound_s"].get<double>());
  const auto human = sim_run(args);
  EXPECT_NE(human.out.find("host-CPU bound: 4 ranks share 2 cores"), std::string::npos) << human.out;
  std::remove(profile.c_str());
  std::remove(cluster.c_str());
}
