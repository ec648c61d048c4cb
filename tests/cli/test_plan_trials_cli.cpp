// tests/cli/test_plan_trials_cli: `strata plan --trials K` runs the top plans for real (executor) and writes
// predicted vs measured into the plan file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include "cli_run.hpp"

TEST(PlanTrialsCli, RunsTopPlansAndRecordsMeasuredTimes) {
  const std::string out = "/tmp/strata_plan_trials_test.json";
  const auto r = strata_test::run_cli(
      "plan --model tiny-gpt --cluster cpu-local --gbs 8 --top 2 --trials 2 --trial-steps 2 --json " + out);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("re-ranked best (measured): #"), std::string::npos) << r.out;
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.contains("trials"));
  ASSERT_EQ(j["trials"].size(), 2u);
  for (const auto& t : j["trials"]) {
    EXPECT_GT(t["predicted_iteration_time_s"].get<double>(), 0.0);
    ASSERT_TRUE(t.contains("measured_iteration_time_s")) << t.dump();
    EXPECT_GT(t["measured_iteration_time_s"].get<double>(), 0.0);
    EXPECT_GT(t["final_loss"].get<double>(), 0.0);
  }
  std::remove(out.c_str());
}

TEST(PlanTrialsCli, NegativeTrialsIsAnInputError) {
  const auto r = strata_test::run_cli("plan --model tiny-gpt --cluster cpu-local --gbs 8 --trials -1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--trials"), std::string::npos) << r.err;
}
