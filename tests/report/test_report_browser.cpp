// tests/report/test_report_browser: renders the reports of the demo plan and of a small heterogeneous plan in
// headless Chromium and checks the DOM after the page's script ran: the summary numbers equal the plan file's,
// one Gantt row per device (small cluster) or per stage (demo), m·v forward boxes in every row, the memory peak
// shown equals the simulator's; and a screenshot that is not blank. Skipped, with the reason, when no browser
// starts (install it with `scripts/setup --browser`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "png_check.hpp"
#include "report_fixtures.hpp"
#include "strata/report/browser.hpp"
#include "strata/report/report.hpp"
#include "strata/sim/from_cost.hpp"

namespace {

using namespace strata;
namespace fs = std::filesystem;

std::optional<std::string> usable_browser(std::string& why) {
  const auto b = report::find_browser();
  if (!b) {
    why = "no headless browser found (chromium, chromium-browser, google-chrome or $STRATA_BROWSER); install it "
          "with `scripts/setup --browser`";
    return std::nullopt;
  }
  const fs::path probe = fs::temp_directory_path() / "strata_browser_probe.html";
  std::ofstream(probe) << "<!DOCTYPE html><p id=x>ok</p>";
  try {
    if (report::dump_dom(*b, probe.string()).find("ok") != std::string::npos) return b;
    why = *b + " started but returned no DOM";
  } catch (const std::exception& e) {
    why = std::string("the browser cannot start: ") + e.what();
  }
  return std::nullopt;
}

class ReportBrowser : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { browser_ = usable_browser(why_); }
  void SetUp() override {
    // CI installs Chromium (`make test` runs scripts/setup --browser): there a missing browser is a failure.
    const char* ci = std::getenv("CI");
    if (!browser_ && ci && std::string(ci) == "true") FAIL() << "CI=true but no usable browser: " << why_;
    if (!browser_) GTEST_SKIP() << "browser tests skipped: " << why_;
  }
  static std::string write_html(const strata_test::PlannedCase& pc, const std::string& name) {
    const auto path = fs::temp_directory_path() / name;
    std::ofstream(path, std::ios::binary)
        << report::render_html(report::report_data(pc.plan, name, pc.model, pc.cluster));
    return path.string();
  }
  static std::optional<std::string> browser_;
  static std::string why_;
};
std::optional<std::string> ReportBrowser::browser_;
std::string ReportBrowser::why_;

// data-key → data-value of every number the page shows.
std::map<std::string, double> shown_numbers(const std::string& dom) {
  std::map<std::string, double> out;
  const std::regex re(R"re(data-key="([^"]+)" data-value="([^"]+)")re");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), re); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = std::strtod((*it)[2].str().c_str(), nullptr);
  return out;
}

// Forward boxes per Gantt row, in row order.
std::vector<int> forward_boxes_per_row(const std::string& dom) {
  std::vector<int> rows;
  const std::string open = "<g class=\"gantt-row\"";
  for (std::size_t at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
    const std::size_t end = dom.find("</g>", at);
    int n = 0;
    for (std::size_t k = dom.find("class=\"t fwd\"", at); k < end; k = dom.find("class=\"t fwd\"", k + 1)) ++n;
    rows.push_back(n);
  }
  return rows;
}

double simulated_peak(const strata_test::PlannedCase& pc) {
  const auto s = cost::complete_strategy(cost::strategy_from_json(pc.plan["best"]["strategy"], "t"), pc.model,
                                         pc.cluster);
  double peak = 0;
  for (const auto& w : sim::simulate(pc.model, pc.cluster, s).result.workers) peak = std::max(peak, w.peak_memory_bytes);
  return peak;
}

double shown_memory_peak(const std::string& dom) {
  std::smatch m;
  const std::regex re(R"re(id="memory-peak" data-value="([^"]+)")re");
  return std::regex_search(dom, m, re) ? std::strtod(m[1].str().c_str(), nullptr) : -1;
}

void check_dom(const strata_test::PlannedCase& pc, const std::string& page, bool per_device) {
  ASSERT_NE(page.find("data-rendered=\"1\""), std::string::npos) << "the page's script did not finish";
  // The drawn elements only: the embedded data and the script's source follow them.
  const std::string dom = page.substr(0, page.find("<script type=\"application/json\""));
  const auto nums = shown_numbers(dom);
  const auto& est = pc.plan["best"]["estimate"];
  for (const char* key : {"iteration_time_s", "tokens_per_s", "mfu", "tflops_per_gpu", "peak_memory_bytes"}) {
    ASSERT_TRUE(nums.count(key)) << key;
    EXPECT_EQ(nums.at(key), est[key].get<double>()) << key;
  }
  for (const auto& [name, v] : pc.plan["speedups"].items()) EXPECT_EQ(nums.at("speedup_" + name), v.get<double>());
  const auto& s = pc.plan["best"]["strategy"];
  const int pp = s["pp"], dp = s["dp"], v = s["v"];
  const std::int64_t m = s["gbs"].get<std::int64_t>() / (dp * s["mbs"].get<std::int64_t>());
  const auto rows = forward_boxes_per_row(dom);
  EXPECT_EQ(static_cast<int>(rows.size()), per_device ? pc.cluster.num_devices() : pp);
  for (int n : rows) EXPECT_EQ(n, m * v);  // flush schedules: one batch simulated
  EXPECT_EQ(shown_memory_peak(dom), simulated_peak(pc));
}

TEST_F(ReportBrowser, SmallHeterogeneousPlanRendersOneRowPerDevice) {
  const auto& pc = strata_test::small_case();
  const std::string dom = report::dump_dom(*browser_, write_html(pc, "strata_report_small.html"));
  check_dom(pc, dom, true);
}

TEST_F(ReportBrowser, DemoPlanRendersOneRowPerStage) {
  const auto& pc = strata_test::demo_case();
  const std::string dom = report::dump_dom(*browser_, write_html(pc, "strata_report_demo.html"));
  check_dom(pc, dom, false);
}

TEST_F(ReportBrowser, ScreenshotIsNotBlank) {
  const auto& pc = strata_test::small_case();
  const auto png = (fs::temp_directory_path() / "strata_report_small.png").string();
  report::screenshot(*browser_, write_html(pc, "strata_report_shot.html"), png, 1000, 1400);
  const auto st = strata_test::png_stats(png);
  EXPECT_GE(st.width, 1000);
  EXPECT_GE(st.height, 1400);
  EXPECT_GT(st.non_background_fraction, 0.05);
  EXPECT_GT(st.distinct_colours, 20u);
}

}  // namespace
