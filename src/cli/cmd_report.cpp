// cli/cmd_report: `strata report` — the self-contained HTML report of a plan file (docs/report.md), optionally
// with a PNG screenshot taken by headless Chromium; write_plan_report is also the hook behind
// `strata plan --report`.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

#include "commands.hpp"
#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/profile.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/report/browser.hpp"
#include "strata/report/report.hpp"

namespace strata::cli {

void write_plan_report(const nlohmann::json& plan, const std::string& origin, const model::Model& m,
                       const hw::Cluster& c, const ReportFiles& files, const cost::CostOptions& cost) {
  report::ReportOptions opt;
  opt.cost = cost;
  if (!files.quiet) opt.progress = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const std::string html = report::render_html(report::report_data(plan, origin, m, c, opt));
  {
    std::ofstream f(files.html, std::ios::binary);
    if (!f) throw core::InputError(fmt::format("{}: cannot write '{}'", files.flag, files.html));
    f << html;
    if (!f) throw core::InputError(fmt::format("{}: error writing '{}'", files.flag, files.html));
  }
  fmt::print("report written to {} ({:.1f} KiB; open it in any browser, no network needed)\n", files.html,
             html.size() / 1024.0);
  if (files.screenshot.empty()) return;
  const auto browser = report::find_browser();
  if (!browser)
    throw core::InputError("report: --screenshot: no headless browser found (install Debian's `chromium`, e.g. "
                           "`scripts/setup --browser`, or set STRATA_BROWSER)");
  try {
    report::screenshot(*browser, files.html, files.screenshot, files.width, files.height);
  } catch (const std::runtime_error& e) {
    throw core::InputError(fmt::format("report: --screenshot: {}", e.what()));
  }
  fmt::print("screenshot written to {}\n", files.screenshot);
}

namespace {

struct ReportArgs {
  std::string plan, model, cluster, profile;
  std::int64_t seq = 0;
  ReportFiles files;
};

void run_report(const ReportArgs& a) {
  const auto j = core::load_json_file(a.plan);
  const core::JsonWhere w{a.plan, ""};
  core::expect_object(j, w);
  // A plan file names its model and cluster; flags override them (a model or cluster given as a file).
  const std::string model_name = a.model.empty() ? core::opt_string(j, "model", w).value_or("") : a.model;
  const std::string cluster_spec = a.cluster.empty() ? core::opt_string(j, "cluster", w).value_or("") : a.cluster;
  const std::int64_t seq = a.seq > 0 ? a.seq : core::opt_positive_int(j, "seq", w).value_or(0);
  if (model_name.empty()) throw core::InputError("report: --model is required (the plan file names none)");
  if (cluster_spec.empty()) throw core::InputError("report: --cluster is required (the plan file names none)");
  auto m = model::resolve_model(model_name);
  check_plan_agrees(plan_file_inputs(a.plan), {"report", a.plan, a.model.empty() ? nullptr : &m, a.cluster});
  if (seq > 0 && seq != m.seq) m = model::with_seq(m, seq);
  const auto c = hw::resolve_cluster(cluster_spec, hw::builtin_catalog());
  cost::CostOptions cost;
  std::optional<cost::Profile> profile;
  if (!a.profile.empty()) {
    profile = cost::load_profile_file(a.profile);
    cost.profile = &*profile;
  }
  write_plan_report(j, a.plan, m, c, a.files, cost);
}

}  // namespace

void add_screenshot_options(CLI::App* cmd, ReportFiles& files) {
  cmd->add_option("--screenshot", files.screenshot,
                  "Also write a PNG screenshot of the report (headless Chromium; Debian package `chromium`)");
  cmd->add_option("--screenshot-size", files.size_text, "Screenshot size WIDTHxHEIGHT in CSS pixels (default 1300x2400)");
}

void register_report_command(CLI::App& app) {
  auto a = std::make_shared<ReportArgs>();
  a->files.flag = "report: --out";
  auto* cmd = app.add_subcommand(
      "report",
      "Write a self-contained HTML report of a plan file (from `strata plan --json`): the plan in words with its\n"
      "iteration time, tokens/s, MFU, peak memory and gain over each baseline; the cluster and placement; the\n"
      "simulated timeline (Gantt; zoom, hover); memory over time per stage; per-stage time breakdown with the\n"
      "bottleneck; why this plan (top plans, baselines, sensitivity to 20 % less bandwidth or GPU efficiency).\n"
      "One file, inline CSS/JS/SVG, no network. Format: docs/report.md.\n"
      "Example: strata plan --model gpt3-175b --cluster dgx-a100:16+dgx-h100:16 --gbs 1536 --json plan.json\n"
      "         strata report --plan plan.json --out report.html --screenshot report.png");
  cmd->add_option("--plan", a->plan, "Plan file written by `strata plan --json`")->required();
  cmd->add_option("--out", a->files.html, "HTML file to write (default report.html)");
  cmd->add_option("--model", a->model, "Model (default: the plan's; give the file when the plan used a model file)");
  cmd->add_option("--cluster", a->cluster, "Cluster (default: the plan's)");
  cmd->add_option("--seq", a->seq, "Sequence length (default: the plan's)")->check(integer_in(core::limits::kSeq));
  cmd->add_option("--profile", a->profile, "Measured profile JSON used for the simulation and the sensitivity");
  cmd->add_flag("--quiet", a->files.quiet, "No progress lines on stderr");
  add_screenshot_options(cmd, a->files);
  cmd->callback([a] {
    a->files.parse_size();
    run_report(*a);
  });
}

void ReportFiles::parse_size() {
  if (size_text.empty()) return;
  int wdt = 0, hgt = 0;
  char x = 0;
  if (std::sscanf(size_text.c_str(), "%d%c%d", &wdt, &x, &hgt) != 3 || x != 'x' || wdt < 200 || hgt < 200 ||
      wdt > 8000 || hgt > 30000)
    throw core::InputError("report: --screenshot-size: expected WIDTHxHEIGHT, e.g. 1300x2400 (200..8000 x 200..30000)");
  width = wdt;
  height = hgt;
}

}  // namespace strata::cli
