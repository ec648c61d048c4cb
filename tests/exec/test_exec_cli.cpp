// tests/exec/test_exec_cli: `strata run` and `strata profile` end to end through the binary — the JSON record,
// user errors (exit 2, one line), and a profile + cluster file that the cost model and hw loaders accept.
#include <gtest/gtest.h>

#include "cli_run.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include "strata/core/json.hpp"
#include "strata/cost/profile.hpp"
#include "strata/hw/cluster.hpp"

namespace {

using Result = strata_test::CliResult;

Result run(const std::string& args) { return strata_test::run_cli(args, strata_test::Stderr::merged); }

std::string tmp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata-exec-cli-" + std::to_string(::getpid()) + "-" + name)).string();
}

TEST(ExecCli, RunWritesARecord) {
  const auto json = tmp("run.json");
  const auto r = run("run --model tiny-gpt --strategy dp=2,tp=1,pp=1,mbs=1,gbs=4 --steps 3 --quiet --json " + json);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("iteration time"), std::string::npos) << r.out;
  const auto j = strata::core::load_json_file(json);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["losses"].size(), 3u);
  EXPECT_GT(j["iteration_time_s"].get<double>(), 0.0);
  EXPECT_EQ(j["ranks"].size(), 2u);
  EXPECT_GT(j["ranks"][0]["peak_rss_bytes"].get<double>(), 1e6);
  EXPECT_EQ(j["plan"]["strategy"]["dp"], 2);
  std::filesystem::remove(json);
}

TEST(ExecCli, WorldSizeCompletesThePartialStrategy) {
  const auto r = run("run --model tiny-gpt --strategy tp=2,gbs=4 --world-size 2 --steps 1 --quiet --json -");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_EQ(j["plan"]["strategy"]["tp"], 2);
  EXPECT_EQ(j["plan"]["strategy"]["dp"], 1);
}

TEST(ExecCli, TorchrunEnvironmentMakesEachProcessOneRank) {
  // What torchrun sets: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT. Rank 0 hosts the TCPStore and reports.
  const int port = 20000 + ::getpid() % 20000;
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " GLOO_SOCKET_IFNAME=lo";
  const std::string args = " run --model tiny-gpt --strategy dp=1,tp=1,pp=2,mbs=1,gbs=4 --steps 2 --quiet";
  const std::string cmd = "sh -c '" + env + " RANK=1 " + STRATA_BIN + args + " >/dev/null 2>&1 & " + env + " RANK=0 " +
                          STRATA_BIN + args + " --json -; wait'";
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (p && std::fgets(buf.data(), buf.size(), p)) out += buf.data();
  ASSERT_EQ(p ? ::pclose(p) : -1, 0) << out;
  const auto j = nlohmann::json::parse(out.substr(out.find('{')));
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["losses"].size(), 2u);
}

TEST(ExecCli, UserErrorsExitTwoWithOneLine) {
  auto r = run("run --model resnet50 --strategy dp=1,tp=1,pp=1,gbs=2 --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("GPT-style"), std::string::npos) << r.out;
  r = run("run --model tiny-gpt --strategy dp=1,tp=3,pp=1,gbs=2 --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  r = run("run --model tiny-gpt --steps 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--plan"), std::string::npos) << r.out;
  r = run("run --model tiny-gpt --strategy dp=1,tp=1,pp=1,gbs=2 --resume /nonexistent-dir --steps 1 --quiet");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("nonexistent-dir"), std::string::npos) << r.out;
}

TEST(ExecCli, ProfileWritesFilesTheCostModelReads) {
  const auto prof = tmp("profile.json"), cluster = tmp("cluster.json");
  const auto r = run("profile --model tiny-gpt --tp 1,2 --mbs 1,2 --max-group 3 --repeats 1 --comm-repeats 2 "
                     "--devices 4 --cpu-cores 2 --out " + prof + " --cluster-out " + cluster);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto p = strata::cost::load_profile_file(prof);
  EXPECT_EQ(p.device, "cpu");
  EXPECT_EQ(p.layers.size(), 3u * 2u * 2u);  // embedding, transformer, lm_head × tp × mbs
  for (const auto& l : p.layers) {
    EXPECT_GT(l.fwd_s, 0.0);
    EXPECT_FALSE(l.includes_tp_comm);  // compute only: the collective rows price the TP all-reduces
  }
  int p2p = 0, groups3 = 0;
  for (const auto& c : p.collectives) {
    p2p += c.op == strata::cost::Collective::p2p;
    groups3 += c.group_size == 3;
  }
  EXPECT_GT(p2p, 0);
  EXPECT_GT(groups3, 0);
  EXPECT_TRUE(strata::cost::profile_layer_times(p, strata::model::LayerKind::transformer, 64, 32, 2, 2).has_value());
  const auto c = strata::hw::load_cluster_file(cluster, strata::hw::builtin_catalog());
  EXPECT_EQ(c.num_devices(), 4);
  EXPECT_EQ(c.nodes[0].cpu_cores, 2);
  EXPECT_EQ(c.gpu_of(0).name, "cpu-local");
  // Four ranks on two cores: the estimate on these files reports the host-CPU bound.
  const auto e = run("estimate --model tiny-gpt --cluster " + cluster + " --profile " + prof +
                     " --strategy dp=4,gbs=8,dtype=fp32");
  ASSERT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("host CPU bound"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("4 ranks share 2 cores"), std::string::npos) << e.out;
  std::filesystem::remove(prof);
  std::filesystem::remove(cluster);
}

TEST(ExecCli, ProfileGpuTypeLabelsEveryRow) {
  const auto prof = tmp("profile_typed.json");
  const auto r = run("profile --model tiny-gpt --tp 1 --mbs 1 --max-group 0 --repeats 1 --gpu-type H100-SXM --out " +
                     prof);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("gpu_type h100-sxm"), std::string::npos) << r.out;
  const auto p = strata::cost::load_profile_file(prof);
  ASSERT_FALSE(p.layers.empty());
  for (const auto& l : p.layers) EXPECT_EQ(l.gpu_type, "h100-sxm");
  // The rows apply to h100-sxm devices only.
  EXPECT_TRUE(strata::cost::profile_layer_times(p, strata::model::LayerKind::transformer, 64, 32, 1, 1, "h100-sxm").has_value());
  EXPECT_FALSE(strata::cost::profile_layer_times(p, strata::model::LayerKind::transformer, 64, 32, 1, 1, "a100-80gb").has_value());
  std::filesystem::remove(prof);
  const auto bad = run("profile --model tiny-gpt --tp 1 --mbs 1 --max-group 0 --gpu-type h900 --out " + prof);
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--gpu-type"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("h900"), std::string::npos) << bad.out;
}

}  // namespace

TEST(ExecCli, RunRefusesAModelTheHostCannotHold) {
  // gpt3-175b needs ~2.8 TB in fp32 with Adam: refused with both figures before any rank allocates.
  const auto r = run("run --model gpt3-175b --strategy dp=1,tp=1,pp=1,gbs=1 --steps 1 --quiet");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("MemAvailable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("needs at least"), std::string::npos) << r.out;
}
