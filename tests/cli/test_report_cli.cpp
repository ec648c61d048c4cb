// tests/cli/test_report_cli: end-to-end `strata report` and `strata plan --report` — the same bytes from the plan
// command's hook and from the saved plan file (rebuildable without re-planning), the file path printed, and bad
// input giving exit code 2 with one error line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "cli_run.hpp"

namespace {

std::string temp_path(const char* suffix) {
  char path[] = "/tmp/strata_report_cli_XXXXXX";
  const int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  unlink(path);
  return std::string(path) + suffix;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ReportCli, PlanHookAndSavedPlanGiveTheSameBytes) {
  const std::string plan = temp_path(".json"), a = temp_path(".html"), b = temp_path(".html");
  const auto r = strata_test::run_cli("plan --model amp-gpt2 --cluster p3.8xlarge:3+g4dn.12xlarge:1 --gbs 32 --json " +
                                      plan + " --report " + a);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("report written to " + a), std::string::npos) << r.out;
  const auto r2 = strata_test::run_cli("report --plan " + plan + " --out " + b + " --quiet");
  ASSERT_EQ(r2.code, 0) << r2.err;
  EXPECT_NE(r2.out.find("report written to " + b), std::string::npos) << r2.out;
  const std::string ha = slurp(a), hb = slurp(b);
  EXPECT_GT(ha.size(), 10000u);
  EXPECT_EQ(ha, hb);
  for (const auto& p : {plan, a, b}) unlink(p.c_str());
}

TEST(ReportCli, BadInputIsExitCodeTwo) {
  auto r = strata_test::run_cli("report --plan /nonexistent/plan.json --out /tmp/x.html");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/nonexistent/plan.json"), std::string::npos) << r.err;
  const std::string bad = temp_path(".json");
  std::ofstream(bad) << R"({"model": "amp-gpt2", "cluster": "dgx-a100:1", "candidates": []})";
  r = strata_test::run_cli("report --plan " + bad + " --out /tmp/x.html");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("best"), std::string::npos) << r.err;
  r = strata_test::run_cli("report --plan " + bad + " --screenshot-size 12 --screenshot /tmp/x.png");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--screenshot-size"), std::string::npos) << r.err;
  unlink(bad.c_str());
}

}  // namespace
