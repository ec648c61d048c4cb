// tests/cli/test_hw_cli: end-to-end runs of `strata hardware`, `strata clusters` and `strata models` (the lists
// contain the expected names, --json parses), and an unknown cluster preset giving exit 2 and one error line
// that lists the valid presets.
#include <gtest/gtest.h>

#include "cli_run.hpp"
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace {

using HwRun = strata_test::CliResult;

HwRun hw_run(const std::string& args) { return strata_test::run_cli(args); }

TEST(HwCli, HardwareListsGpusAndLinks) {
  const HwRun r = hw_run("hardware");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"v100-16gb", "a100-80gb", "h100-sxm", "h200", "t4", "mi300x", "cpu", "nvlink3", "pcie4",
                           "ib-ndr", "eth-10g", "loopback"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  EXPECT_NE(r.out.find("312 TFLOP/s"), std::string::npos);  // A100 bf16 dense
}

TEST(HwCli, HardwareJson) {
  const HwRun r = hw_run("hardware --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_TRUE(j.contains("gpus"));
  ASSERT_TRUE(j.contains("links"));
  bool found = false;
  for (const auto& g : j["gpus"]) {
    EXPECT_GT(g["memory_bytes"].get<double>(), 0);
    EXPECT_FALSE(g["source"].get<std::string>().empty());
    if (g["name"] == "h100-sxm") {
      found = true;
      EXPECT_DOUBLE_EQ(g["peak_flops"]["bf16"].get<double>(), 989.4e12);
    }
  }
  EXPECT_TRUE(found);
}

TEST(HwCli, ClustersListsPresets) {
  const HwRun r = hw_run("clusters");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"p3.8xlarge", "p3.16xlarge", "g4dn.12xlarge", "p4d.24xlarge", "p5.48xlarge", "dgx-a100",
                           "dgx-h100", "dgx-h200"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  const HwRun js = hw_run("clusters --json");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  ASSERT_TRUE(j.is_array());
  EXPECT_GE(j.size(), 8u);
  EXPECT_EQ(j[0]["name"], "p3.8xlarge");
  EXPECT_EQ(j[0]["gpus"], 4);
}

TEST(HwCli, ModelsListsTheZoo) {
  const HwRun r = hw_run("models");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"gpt2-small", "gpt3-175b", "llama3-8b", "amp-gpt2", "resnet50"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
  const HwRun js = hw_run("models --json");
  ASSERT_EQ(js.code, 0) << js.err;
  const auto j = nlohmann::json::parse(js.out);
  ASSERT_TRUE(j.is_array());
  bool found = false;
  for (const auto& m : j) {
    EXPECT_GT(m["params"].get<double>(), 0) << m["name"];
    if (m["name"] == "gpt3-175b") {
      found = true;
      EXPECT_NEAR(m["params"].get<double>(), 174.6e9, 0.001 * 174.6e9);
    }
  }
  EXPECT_TRUE(found);
}

TEST(HwCli, UnknownPresetExitsTwoWithOneLineListingValidPresets) {
  const HwRun r = hw_run("clusters --show dgx-z100:2");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;  // exactly one line
  EXPECT_NE(r.err.find("unknown node type 'dgx-z100'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("dgx-a100"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("p3.8xlarge"), std::string::npos) << r.err;

  const HwRun bad = hw_run("clusters --show p3.8xlarge:x");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("count 'x'"), std::string::npos) << bad.err;
}

TEST(HwCli, ShowResolvesAmpCluster) {
  const HwRun r = hw_run("clusters --show p3.8xlarge:3+g4dn.12xlarge:1 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["num_devices"], 16);
  EXPECT_EQ(j["num_nodes"], 4);
  EXPECT_EQ(j["gpu_types"], nlohmann::json::array({"v100-16gb", "t4"}));
  EXPECT_EQ(j["nodes"][3]["nic_link"], "eth-50g");
  const HwRun file = hw_run("clusters --show " STRATA_SOURCE_DIR "/examples/cluster_heterogeneous.json");
  ASSERT_EQ(file.code, 0) << file.err;
  EXPECT_NE(file.out.find("roce-200g"), std::string::npos);
  EXPECT_NE(file.out.find("inter-rack"), std::string::npos);
}

}  // namespace
