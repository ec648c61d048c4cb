// tests/cli/test_sim_plan_file_cli: one strategy type through every consumer (issue 41) — per-stage 1F1B / GPipe
// strategies simulate within 5 % of their estimate, export refuses them by name instead of writing the zeros of the
// unused uniform fields, and a plan made from model and cluster files is simulated, reported and exported after
// the files are deleted (the plan file embeds their definitions).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli_run.hpp"

namespace {

const std::string kPerStage = "mbs=2,gbs=48,stages=v100:dp3:tp1:7/t4:dp1:tp2:3";
const std::string kCluster = " --cluster p3.8xlarge:3+g4dn.12xlarge:1";

TEST(SimPlanFileCli, PerStageFlushSchedulesSimulateWithinFivePercent) {
  for (const char* sched : {"1f1b", "gpipe"}) {
    const auto r = strata_test::run_cli("simulate --model small-gpt" + kCluster + " --json --strategy " + kPerStage +
                                        ",schedule=" + sched);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const double sim = j["iteration_time_s"].get<double>(), est = j["analytical_iteration_time_s"].get<double>();
    EXPECT_GT(sim, 0);
    EXPECT_NEAR(sim, est, 0.05 * est) << sched;
    EXPECT_EQ(j["stages"].size(), 2u);
  }
  const auto h = strata_test::run_cli("simulate --model small-gpt" + kCluster + " --strategy " + kPerStage);
  ASSERT_EQ(h.code, 0) << h.out << h.err;
  EXPECT_NE(h.out.find("one flushed iteration"), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("12-13"), std::string::npos) << h.out;  // the t4 stage's devices as a range
}

// `estimate --json` of a per-stage strategy, exported: refused by name (exit 2), never tp 0 / dp 0.
TEST(SimPlanFileCli, ExportRefusesUnequalStagesByName) {
  const std::string f = "/tmp/strata_onepath_estimate.json";
  const auto e = strata_test::run_cli("estimate --model small-gpt" + kCluster + " --json --strategy " + kPerStage);
  ASSERT_EQ(e.code, 0) << e.err;
  std::ofstream(f) << e.out;
  for (const char* engine : {"megatron", "torchtitan", "deepspeed", "torchrun"}) {
    const auto x = strata_test::run_cli("export --model small-gpt" + kCluster + " --plan " + f + " --to " + engine);
    EXPECT_EQ(x.code, 2) << engine << x.out;
    EXPECT_NE(x.err.find("per-stage (dp, tp) that differ between stages"), std::string::npos) << x.err;
    EXPECT_EQ(x.out.find("size 0"), std::string::npos) << x.out;
  }
  // Alike stages over every device fold into the uniform form (an uneven split): exported.
  const auto a = strata_test::run_cli("estimate --model small-gpt --cluster p3.8xlarge:2 --json --strategy "
                                      "mbs=1,gbs=16,dtype=fp16,stages=v100:dp2:tp2:4/v100:dp2:tp2:6");
  ASSERT_EQ(a.code, 0) << a.err;
  std::ofstream(f) << a.out;
  const auto u = strata_test::run_cli("export --model small-gpt --cluster p3.8xlarge:2 --to megatron --plan " + f);
  EXPECT_EQ(u.code, 0) << u.out << u.err;
  EXPECT_NE(u.out.find("--tensor-model-parallel-size 2"), std::string::npos) << u.out;
  std::remove(f.c_str());
}

// `plan --per-stage` puts its plan among the plan file's candidates; with it as `best`, the file is reported
// (stage-by-stage words, the flushed replay as the Gantt) and simulated.
TEST(SimPlanFileCli, PerStagePlanFileIsReportedAndSimulated) {
  const std::string f = "/tmp/strata_onepath_per_stage.json", g = "/tmp/strata_onepath_per_stage_best.json";
  const std::string html = "/tmp/strata_onepath_per_stage.html";
  const auto p = strata_test::run_cli("plan --model small-gpt" + kCluster + " --gbs 48 --per-stage --json " + f);
  ASSERT_EQ(p.code, 0) << p.out << p.err;
  std::ifstream in(f);
  auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.contains("per_stage"));
  int found = -1;
  for (std::size_t i = 0; i < j["candidates"].size(); ++i)
    if (j["candidates"][i]["cli"] == j["per_stage"]["cli"]) found = static_cast<int>(i);
  ASSERT_GE(found, 0) << "the per-stage plan is not among the candidates";
  j["best"] = j["candidates"][found];
  std::ofstream(g) << j.dump();
  const auto s = strata_test::run_cli("simulate --plan " + g + " --json");
  ASSERT_EQ(s.code, 0) << s.err;
  const auto sj = nlohmann::json::parse(s.out);
  EXPECT_GT(sj["iteration_time_s"].get<double>(), 0);
  const auto r = strata_test::run_cli("report --quiet --plan " + g + " --out " + html);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream h(html);
  const std::string page((std::istreambuf_iterator<char>(h)), std::istreambuf_iterator<char>());
  if (j["best"]["strategy"].contains("stages")) {
    EXPECT_NE(page.find("of their own widths"), std::string::npos);
    EXPECT_NE(page.find("per-stage flushed iteration"), std::string::npos);
  }
  for (const auto& x : {f, g, html}) std::remove(x.c_str());
}

// A placement of more than 64 devices is printed as each stage's GPU type and device ranges, never one id per
// device (issue 41: a 98,304-GPU mixed plan printed a 600 KB `place=` list); the exact list stays in the file.
TEST(SimPlanFileCli, LargePlacementPrintedAsRanges) {
  const auto r = strata_test::run_cli("plan --model megatron-18.4b --cluster dgx-h100:8+dgx-a100:8 --gbs 512");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto line = r.out.substr(r.out.find("best strategy: "));
  EXPECT_EQ(line.substr(0, line.find('\n')).find("place="), std::string::npos) << line;
  EXPECT_NE(line.find("placement: stage 0 a100-80gb devices 64-127; stage 1 h100-sxm devices 0-63"),
            std::string::npos) << line;
}

// A plan from a model file and a cluster file reads back with both files gone.
TEST(SimPlanFileCli, PlanFromFilesIsSelfContained) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "strata_onepath_selfcontained";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path model = dir / "model.json", cluster = dir / "cluster.json", plan = dir / "plan.json";
  std::ofstream(model) << R"({"layers": 4, "hidden": 512, "heads": 8, "vocab": 1000, "seq": 256})";
  std::ofstream(cluster) << R"({"nodes": [{"type": "p3.8xlarge", "count": 1}, {"type": "g4dn.12xlarge", "count": 1}]})";
  const auto p = strata_test::run_cli("plan --model " + model.string() + " --cluster " + cluster.string() +
                                      " --gbs 16 --dtype fp16 --json " + plan.string());  // V100/T4: no bf16
  ASSERT_EQ(p.code, 0) << p.out << p.err;
  fs::remove(model);
  fs::remove(cluster);
  std::ifstream in(plan);
  const auto j = nlohmann::json::parse(in);
  EXPECT_TRUE(j.contains("model_definition"));
  EXPECT_TRUE(j.contains("cluster_definition"));
  EXPECT_EQ(j["devices"].get<int>(), 8);
  const auto s = strata_test::run_cli("simulate --plan " + plan.string() + " --json");
  ASSERT_EQ(s.code, 0) << s.err;
  EXPECT_GT(nlohmann::json::parse(s.out)["iteration_time_s"].get<double>(), 0);
  const auto r = strata_test::run_cli("report --quiet --plan " + plan.string() + " --out " + (dir / "r.html").string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "r.html"));
  const auto x = strata_test::run_cli("export --plan " + plan.string() + " --to torchrun --closest");
  EXPECT_EQ(x.code, 0) << x.err;
  EXPECT_NE(x.out.find("torchrun"), std::string::npos) << x.out;
  fs::remove_all(dir);
}

}  // namespace
