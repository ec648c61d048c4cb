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

#include "engine_flag.hpp"
#include "commands.hpp"
#include "plan_source.hpp"
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
  std::string plan, model, cluster, profile, engine;  // engine: --engine (engine_flag.cpp)
  std::int64_t seq = 0;
  ReportFiles files;
};

void run_report(const ReportArgs& a) {
  const auto j = core::load_json_file(a.plan);
  const core::JsonWhere w{a.plan, ""};
  core::expect_object(j, w);
  // Model, cluster and seq: the flags, else the plan file's (embedded definitions first: plan_source.hpp).
  const PlanContext ctx =
      resolve_plan_context(a.plan, {"report", a.model, a.cluster, a.seq > 0 ? std::optional(a.seq) : std::nullopt});
  cost::CostOptions cost;
  std::optional<cost::Profile> profile;
  if (!a.profile.empty()) {
    profile = cost::load_profile_file(a.profile);
    cost.profile = &*profile;
  }
  // --engine: the plan must be one the engine runs as planned (its best strategy carries the engine's traits).
  if (const auto p = engine_from_flag(a.engine, "report: --engine")) {
    cost::Strategy s = cost::complete_strategy(cost::load_strategy_file(a.plan), ctx.model, ctx.cluster);
    const cost::Strategy planned = s;
    apply_engine_flag(*p, ctx.model, ctx.cluster, s, &cost, "report");
    if (!(s == planned))
      throw core::InputError(fmt::format("report: --engine {}: the plan was not costed with its stack ({} vs {}): "
                                         "re-plan with `strata plan --engine {}`", p->name, cost::to_cli_string(planned),
                                         cost::to_cli_string(s), p->name));
  }
  write_plan_report(j, a.plan, ctx.model, ctx.cluster, a.files, cost);
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
  cmd->add_option("--seq", a->seq, "Sequence length (default: the plan's)")->transform(integer_in(core::limits::kSeq));
  cmd->add_option("--profile", a->profile, "Measured profile JSON used for the simulation and the sensitivity");
  add_engine_option(cmd, &a->engine, "check the plan is one it runs, costed with its stack (exit 2 otherwise)");
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
