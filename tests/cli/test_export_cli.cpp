// tests/cli/test_export_cli: `strata export` (exit 2 naming an unexpressible feature, --closest with both
// predicted times), `strata estimate --from megatron`, and `strata plan --compare-to` on a Megatron command line
// for gpt3-175b on dgx-a100:128.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "cli_run.hpp"

using strata_test::run_cli;
using strata_test::Stderr;

namespace {

const char* kMegatron175b =
    "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 96 --hidden-size 12288 --num-attention-heads 96 "
    "--seq-length 2048 --max-position-embeddings 2048 --vocab-size 51200 --tensor-model-parallel-size 8 "
    "--pipeline-model-parallel-size 16 --micro-batch-size 1 --global-batch-size 1536 --recompute-granularity full "
    "--recompute-method uniform --recompute-num-layers 1 --bf16 --lr 6e-5 --data-path my_text_document";

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = "/tmp/strata_export_test_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ExportCli, UnexpressibleExitsTwoNamingTheFeatureAndClosestPrintsBothTimes) {
  const std::string plan = write_temp("plan.json",
      R"({"model": "gpt3-175b", "cluster": "dgx-a100:16", "best": {"strategy": {"tp": 8, "pp": 8, "mbs": 1, "gbs": 64, "schedule": "gpipe"}}})");
  auto r = run_cli("export --plan " + plan + " --to megatron");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("gpipe"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_cli("export --plan " + plan + " --to megatron --closest");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("closest"), std::string::npos);
  EXPECT_NE(r.err.find("predicted"), std::string::npos);
  // --closest writes the fastest plan Megatron can run that fits (issue 37), not only the schedule swapped.
  EXPECT_NE(r.out.find("--pipeline-model-parallel-size"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("DOES NOT FIT"), std::string::npos) << r.err;
  r = run_cli("export --plan " + plan + " --to nemo");
  EXPECT_EQ(r.code, 2);
  std::remove(plan.c_str());
}

TEST(ExportCli, EstimateFromMegatronBuildsTheModelFromTheArgs) {
  const auto r = run_cli(std::string("estimate --cluster dgx-a100:128 --from megatron \"") + kMegatron175b + "\"");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("dp=8,tp=8,pp=16"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("iteration time"), std::string::npos);
}

TEST(ExportCli, EstimateFromArgsStartingWithDashesAndUnknownFlagsStillFail) {
  auto r = run_cli("estimate --cluster dgx-a100:16 --from megatron \"--num-layers 96 --hidden-size 12288 "
                   "--num-attention-heads 96 --seq-length 2048 --vocab-size 51200 --tensor-model-parallel-size 8 "
                   "--pipeline-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 64 --bf16\"");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("dp=2,tp=8,pp=8"), std::string::npos) << r.out;
  r = run_cli("estimate --model gpt3-175b --cluster dgx-a100:16 --strategy tp=8,pp=8,gbs=64 --bogus 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--bogus"), std::string::npos) << r.err;
}

TEST(ExportCli, PlanCompareToMegatronCommandLine) {
  const std::string file = write_temp("megatron_175b.sh", kMegatron175b);
  const auto r = run_cli("plan --model gpt3-175b --cluster dgx-a100:128 --gbs 1536 --threads 2 --top 1 --compare-to " + file);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Your config (megatron"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("x faster than your config"), std::string::npos) << r.out;
  std::remove(file.c_str());
}

TEST(ExportCli, PlanExportAndOutDirectory) {
  auto r = run_cli("plan --model small-gpt --cluster dgx-a100:1 --gbs 16 --top 1 --export deepspeed --closest-free", Stderr::separate);
  EXPECT_EQ(r.code, 2);  // an unknown flag stays an error
  r = run_cli("plan --model small-gpt --cluster dgx-a100:1 --gbs 16 --top 1 --space 3d --export megatron --json /tmp/strata_export_test_p.json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("--micro-batch-size"), std::string::npos) << r.out;
  const std::string dir = "/tmp/strata_export_test_dir";
  r = run_cli("export --plan /tmp/strata_export_test_p.json --to torchrun --out " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::ifstream(dir + "/launch_torchrun.sh").good());
  r = run_cli("estimate --model small-gpt --cluster dgx-a100:1 --from-file " + dir + "/launch_torchrun.sh");
  EXPECT_EQ(r.code, 0) << r.err;
  std::remove((dir + "/launch_torchrun.sh").c_str());
  std::remove(dir.c_str());
  std::remove("/tmp/strata_export_test_p.json");
}

}  // namespace
