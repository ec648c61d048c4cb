// tests/cli/test_model_cli: end-to-end runs of `strata describe` — the table and --json for zoo models and model
// files, the cluster summary, --seq — and bad model input (malformed JSON, heads not dividing hidden, zero sizes,
// unknown model) giving exit code 2 and one error line.
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

using ModelRun = strata_test::CliResult;

ModelRun model_run(const std::string& args) { return strata_test::run_cli(args); }

// Writes `text` to a fresh temporary .json file and returns its path.
std::string temp_model(const std::string& text) {
  char path[] = "/tmp/strata_model_XXXXXX.json";
  const int fd = mkstemps(path, 5);
  if (fd >= 0) close(fd);
  std::ofstream(path) << text;
  return path;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(ModelCli, DescribeTable) {
  const ModelRun r = model_run("describe --model gpt3-175b");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("parameters: 174.6 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("block.0 .. block.95"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("training FLOPs per token"), std::string::npos);
  EXPECT_NE(r.out.find("lm_head"), std::string::npos);
}

TEST(ModelCli, DescribeJsonWithCluster) {
  const ModelRun r = model_run("describe --model llama3-8b --cluster dgx-a100:2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j.at("params").get<double>() / 8.03e9, 1.0, 0.01);
  EXPECT_EQ(j.at("num_layers").get<int>(), 34);
  EXPECT_EQ(j.at("layers").size(), 34u);
  EXPECT_GT(j.at("train_flops_per_token").get<double>(), 6 * 7e9);
  const auto& c = j.at("cluster");
  EXPECT_EQ(c.at("devices").get<int>(), 16);
  EXPECT_EQ(c.at("gpu_types").size(), 1u);
  EXPECT_EQ(c.at("gpu_types")[0].at("count").get<int>(), 16);
  EXPECT_NEAR(c.at("total_peak_bf16_flops").get<double>(), 16 * 312e12, 1e12);
  EXPECT_GE(c.at("bandwidth_classes").size(), 2u);  // intra- and inter-node
}

TEST(ModelCli, DescribeHeterogeneousCluster) {
  const ModelRun r = model_run("describe --model amp-gpt2 --cluster p3.8xlarge:3+g4dn.12xlarge:1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("16 devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("v100-16gb"), std::string::npos);
  EXPECT_NE(r.out.find("t4"), std::string::npos);
  EXPECT_NE(r.out.find("bandwidth classes"), std::string::npos);
}

TEST(ModelCli, DescribeSeqAndFiles) {
  const ModelRun a = model_run("describe --model gpt2-small --seq 2048 --json");
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out).at("seq").get<int>(), 2048);
  const ModelRun b = model_run("describe --model " + std::string(STRATA_SOURCE_DIR) +
                               "/examples/model_custom_layers.json --json");
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(nlohmann::json::parse(b.out).at("num_layers").get<int>(), 11);
}

void expect_input_error(const ModelRun& r, const std::string& fragment) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

TEST(ModelCli, BadModelFileExitsTwo) {
  const std::string malformed = temp_model("{\n  \"layers\": 2,\n  \"hidden\": 64,,\n}");
  expect_input_error(model_run("describe --model " + malformed), malformed + ":3:");
  const std::string heads = temp_model(R"({"layers": 2, "hidden": 64, "heads": 6, "vocab": 10, "seq": 8})");
  expect_input_error(model_run("describe --model " + heads), heads + ": heads: 6 heads do not divide hidden 64");
  const std::string zero = temp_model(R"({"layers": 2, "hidden": 0, "heads": 4, "vocab": 10, "seq": 8})");
  expect_input_error(model_run("describe --model " + zero), zero + ": hidden: must be > 0, got 0");
  expect_input_error(model_run("describe --model gpt5"), "unknown model 'gpt5' (valid: ");
  expect_input_error(model_run("describe --model vit-huge-32 --seq 512"), "--seq: model 'vit-huge-32'");
  expect_input_error(model_run("describe --model gpt2-small --seq 0"), "--seq: must be an integer >= 1");
  for (const std::string& p : {malformed, heads, zero}) unlink(p.c_str());
}

}  // namespace
