// tests/report/test_report_data: the report's data and page without a browser — summary numbers equal the plan
// file's, one forward task per micro-batch and chunk on every worker, the memory peak equals an independent
// simulation's, sensitivity at factor 1 reproduces the plan's times and ranking (by the plan's objective),
// deterministic bytes (also after a dump/parse round trip of the plan file), valid HTML without external URLs, and
// bad plan files rejected.
#include <gtest/gtest.h>

#include <algorithm>

#include "html_check.hpp"
#include "report_fixtures.hpp"
#include "strata/core/error.hpp"
#include "strata/export/export.hpp"
#include "strata/report/report.hpp"
#include "strata/sim/from_cost.hpp"

namespace {

using namespace strata;
using strata_test::small_case;

const nlohmann::ordered_json& small_data() {
  static const auto d = report::report_data(small_case().plan, "plan.json", small_case().model, small_case().cluster);
  return d;
}

TEST(ReportData, SummaryNumbersAreThePlanFiles) {
  const auto& est = small_case().plan["best"]["estimate"];
  const auto& nums = small_data()["summary"]["numbers"];
  ASSERT_EQ(nums.size(), 5u);
  for (const auto& n : nums)
    EXPECT_EQ(n["value"].get<double>(), est[n["key"].get<std::string>()].get<double>()) << n["key"];
  for (const auto& g : small_data()["summary"]["gains"]) {
    const std::string name = g["key"].get<std::string>().substr(std::string("speedup_").size());
    EXPECT_EQ(g["value"].get<double>(), small_case().plan["speedups"][name].get<double>());
  }
  EXPECT_EQ(small_data()["summary"]["strategy_cli"].get<std::string>(),
            small_case().plan["best"]["cli"].get<std::string>());
}

TEST(ReportData, OneForwardPerMicroBatchAndChunkOnEveryWorker) {
  const auto& t = small_data()["timeline"];
  const auto& s = small_case().plan["best"]["strategy"];
  const std::int64_t m = s["gbs"].get<std::int64_t>() / (s["dp"].get<std::int64_t>() * s["mbs"].get<std::int64_t>());
  const std::int64_t expected = m * s["v"].get<int>() * t["iterations"].get<int>();
  ASSERT_EQ(t["rows"], "device");  // 16 GPUs: one row per device
  ASSERT_EQ(static_cast<int>(t["workers"].size()), s["pp"].get<int>() * s["dp"].get<int>());
  for (const auto& w : t["workers"]) {
    std::int64_t fwd = 0, bwd = 0;
    const auto& c = w["compute"];
    for (std::size_t k = 0; k < c.size(); k += 5) {
      fwd += c[k + 2] == static_cast<int>(sim::TaskTag::forward);
      bwd += c[k + 2] == static_cast<int>(sim::TaskTag::backward);
      EXPECT_GE(c[k + 1].get<std::int64_t>(), 0);
    }
    EXPECT_EQ(fwd, expected);
    EXPECT_EQ(bwd, expected);
  }
}

TEST(ReportData, MemoryPeakIsTheSimulatorsAndTheCurveKeepsIt) {
  const auto& pc = small_case();
  const auto s = cost::complete_strategy(cost::strategy_from_json(pc.plan["best"]["strategy"], "t"), pc.model,
                                         pc.cluster);
  const auto sim = sim::simulate(pc.model, pc.cluster, s);
  double peak = 0;
  for (const auto& w : sim.result.workers) peak = std::max(peak, w.peak_memory_bytes);
  const auto& t = small_data()["timeline"];
  EXPECT_EQ(t["peak_memory_bytes"].get<double>(), peak);
  EXPECT_EQ(t["iteration_time_s"].get<double>(), sim.result.iteration_time_s);
  for (const auto& st : t["memory"]) {
    double curve_max = 0;
    for (std::size_t k = 1; k < st["points"].size(); k += 2) curve_max = std::max(curve_max, st["points"][k].get<double>());
    EXPECT_EQ(curve_max, st["peak_bytes"].get<double>()) << "stage " << st["stage"];
    double parts = 0;
    for (const auto& [k, v] : st["breakdown"].items()) parts += v.get<double>();
    EXPECT_NEAR(parts, st["peak_bytes"].get<double>(), 1e-6 * st["peak_bytes"].get<double>());
  }
}

TEST(ReportData, MemoryCurveIsDownsampledKeepingThePeak) {
  report::ReportOptions opt;
  opt.max_memory_points = 16;
  const auto d = report::report_data(small_case().plan, "p", small_case().model, small_case().cluster, opt);
  for (const auto& st : d["timeline"]["memory"]) {
    EXPECT_LE(st["points"].size(), 2u * 20u);
    double curve_max = 0;
    for (std::size_t k = 1; k < st["points"].size(); k += 2) curve_max = std::max(curve_max, st["points"][k].get<double>());
    EXPECT_EQ(curve_max, st["peak_bytes"].get<double>());
  }
}

TEST(ReportData, SensitivityAtFactorOneReproducesThePlan) {
  report::ReportOptions opt;
  opt.sensitivity_factor = 1.0;
  const auto d = report::report_data(small_case().plan, "p", small_case().model, small_case().cluster, opt);
  const auto& rows = d["why"]["sensitivity"]["rows"];
  ASSERT_GE(rows.size(), small_case().plan["candidates"].size());
  for (const auto& r : rows) {
    EXPECT_EQ(r["times"][1], r["times"][0]) << r["name"];
    EXPECT_EQ(r["ranks"][1], r["ranks"][0]) << r["name"];
    EXPECT_EQ(r["ranks"][2], r["ranks"][0]) << r["name"];
  }
  EXPECT_EQ(rows[0]["name"], "#1");
  EXPECT_EQ(rows[0]["ranks"][0], 1);
}

// The sensitivity table ranks by the objective the plan used (the plan file's "objective"): a margin-first plan list
// keeps its order as planned (#k is rank k), where ranking by time would put a faster, fuller plan first; a plan
// ranked by time is ranked by time.
TEST(ReportData, SensitivityRanksByThePlansObjective) {
  using namespace strata;
  const auto& pc = small_case();
  plan::PlanOptions opt;
  opt.global_batch = 32;
  opt.threads = 2;
  opt.objective = plan::Objective::margin;
  const auto r = plan::plan(pc.model, pc.cluster, opt);
  const auto margin_plan = nlohmann::json::parse(plan::plan_to_json(r, pc.model, pc.cluster, opt).dump());
  ASSERT_EQ(margin_plan["objective"], "margin");
  const auto& cands = margin_plan["candidates"];
  bool reordered = false;  // the margin objective put a slower plan before a faster one
  for (std::size_t i = 0; i + 1 < cands.size(); ++i)
    reordered = reordered || cands[i]["estimate"]["iteration_time_s"].get<double>() >
                                 cands[i + 1]["estimate"]["iteration_time_s"].get<double>();
  EXPECT_TRUE(reordered) << "the case no longer exercises the margin order";
  const auto d = report::report_data(margin_plan, "p", pc.model, pc.cluster);
  EXPECT_EQ(d["why"]["sensitivity"]["objective"], "margin");
  const auto& rows = d["why"]["sensitivity"]["rows"];
  for (std::size_t i = 0; i < cands.size(); ++i) EXPECT_EQ(rows[i]["ranks"][0], static_cast<int>(i) + 1) << i;
  // Ranked by time (the fixture's --objective fastest): the ranks follow the times.
  const auto f = report::report_data(pc.plan, "p", pc.model, pc.cluster);
  EXPECT_EQ(f["why"]["sensitivity"]["objective"], "fastest");
  const auto& fc = pc.plan["candidates"];
  const auto& fr = f["why"]["sensitivity"]["rows"];
  for (std::size_t i = 0; i + 1 < fc.size(); ++i)
    if (fc[i]["estimate"]["iteration_time_s"] < fc[i + 1]["estimate"]["iteration_time_s"])
      EXPECT_LT(fr[i]["ranks"][0], fr[i + 1]["ranks"][0]) << i;
}

TEST(ReportData, LaunchScriptFromTheExportModuleOrTheReason) {
  const auto& pc = small_case();
  const auto& l = small_data()["summary"]["launch"];
  if (l.contains("text")) {
    const auto s = cost::complete_strategy(cost::strategy_from_json(pc.plan["best"]["strategy"], "t"), pc.model,
                                           pc.cluster);
    const auto e = exporter::parse_engine(l["engine"].get<std::string>(), "t");
    EXPECT_EQ(l["text"], exporter::export_strategy(e, pc.model, pc.cluster, s).text);
  } else {
    EXPECT_EQ(l["note"].get<std::string>().rfind("no launch script: ", 0), 0u) << l;
  }
}

TEST(ReportData, BaselinesHaveOneReasonEach) {
  const auto& b = small_data()["why"]["baselines"];
  ASSERT_EQ(b.size(), small_case().plan["baseline_notes"].size());
  for (const auto& r : b) EXPECT_FALSE(r["reason"].get<std::string>().empty()) << r["name"];
}

TEST(ReportHtml, DeterministicAndRebuildableFromASavedPlan) {
  const auto& pc = small_case();
  const std::string a = report::render_html(small_data());
  const auto reread = nlohmann::json::parse(pc.plan.dump(2));
  const std::string b = report::render_html(report::report_data(reread, "plan.json", pc.model, pc.cluster));
  EXPECT_EQ(a, b);
}

TEST(ReportHtml, ValidAndSelfContained) {
  const std::string html = report::render_html(small_data());
  const auto problems = strata_test::html_problems(html);
  EXPECT_TRUE(problems.empty()) << problems.front();
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  // The embedded data cannot end its <script> element early.
  const auto data_at = html.find("id=\"report-data\">");
  ASSERT_NE(data_at, std::string::npos);
  EXPECT_EQ(html.find("</", data_at), html.find("</script>", data_at));
}

TEST(ReportHtml, CheckerCatchesProblems) {
  EXPECT_FALSE(strata_test::html_problems("<!DOCTYPE html><div><span></div>").empty());
  EXPECT_FALSE(strata_test::html_problems("<!DOCTYPE html><img src=\"https://x.org/a.png\">").empty());
  EXPECT_FALSE(strata_test::html_problems("<!DOCTYPE html><p>").empty());
  EXPECT_TRUE(strata_test::html_problems("<!DOCTYPE html><p><br><script>a</b></script></p>").empty());
}

TEST(ReportData, BadPlanFilesAreInputErrors) {
  const auto& pc = small_case();
  nlohmann::json no_best = pc.plan;
  no_best.erase("best");
  EXPECT_THROW(report::report_data(no_best, "p.json", pc.model, pc.cluster), core::InputError);
  nlohmann::json bad = pc.plan;
  bad["best"]["estimate"]["iteration_time_s"] = "fast";
  EXPECT_THROW(report::report_data(bad, "p.json", pc.model, pc.cluster), core::InputError);
  const auto other = hw::resolve_cluster("dgx-a100:4", hw::builtin_catalog());
  EXPECT_THROW(report::report_data(pc.plan, "p.json", pc.model, other), core::InputError);
  EXPECT_THROW(report::report_data(nlohmann::json::array(), "p.json", pc.model, pc.cluster), core::InputError);
  nlohmann::json no_estimate = pc.plan;
  no_estimate["candidates"][0].erase("estimate");
  EXPECT_THROW(report::report_data(no_estimate, "p.json", pc.model, pc.cluster), core::InputError);
}

}  // namespace
