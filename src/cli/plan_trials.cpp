// cli/plan_trials: runs the planner's top-K plans with the executor and re-ranks them (see plan_trials.hpp). Each
// trial is one `strata-exec run` child (this binary has no libtorch): the candidate strategy goes in as a strategy
// file, the run record comes back as JSON, and the child's exit code says whether the plan could not run here
// (2, an input error such as a rule of the runtime or the host's memory) or failed at run time (1).
#include "plan_trials.hpp"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "exec_binary.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::cli {
namespace {

// A private scratch directory for the trials' files, removed at the end.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/strata-trials-XXXXXX";
    if (!::mkdtemp(tmpl.data())) throw core::InputError("plan: --trials: cannot create a directory " + tmpl);
    path = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// The child's last non-empty stderr line without the "strata: ..." prefix `prefix`.
std::string last_error_line(const std::string& path, const std::string& prefix) {
  std::ifstream f(path);
  std::string line, last;
  while (std::getline(f, line))
    if (!line.empty()) last = line;
  if (last.rfind(prefix, 0) == 0) last = last.substr(prefix.size());
  return last;
}

struct TrialOutcome {
  double iteration_time_s = 0, final_loss = 0;
  std::string note;  // empty = it ran
};

TrialOutcome run_trial(const std::string& model_spec, const cost::Strategy& s, int world, int steps, double timeout_s,
                       const std::string& dir, int index) {
  const std::string base = fmt::format("{}/trial{}", dir, index);
  {
    std::ofstream f(base + "-strategy.json");
    f << cost::to_json(s).dump(2) << "\n";
    if (!f) throw core::InputError("plan: --trials: cannot write " + base + "-strategy.json");
  }
  const int code = run_executor({"run", "--plan", base + "-strategy.json", "--model", model_spec, "--world-size",
                                 std::to_string(world), "--steps", std::to_string(steps), "--timeout",
                                 fmt::format("{}", timeout_s), "--quiet", "--json", base + "-record.json"},
                                base + "-stdout.txt", base + "-stderr.txt");
  TrialOutcome t;
  if (code == core::kInputErrorExitCode) {
    t.note = "not runnable here: " + last_error_line(base + "-stderr.txt", "strata: error: ");
  } else if (code != 0) {
    const std::string why = last_error_line(base + "-stderr.txt", "strata: run failed: ");
    t.note = "run failed: " + (why.empty() ? fmt::format("exit status {}", code) : why);
  } else {
    const auto rec = core::load_json_file(base + "-record.json");
    t.iteration_time_s = rec.at("iteration_time_s").get<double>();
    const auto& losses = rec.at("losses");
    t.final_loss = losses.empty() ? 0.0 : losses.back().get<double>();
  }
  return t;
}

}  // namespace

nlohmann::ordered_json run_plan_trials(const std::string& model_spec, const hw::Cluster& c,
                                       const plan::PlanResult& r, int k, int steps, double timeout_s) {
  ScratchDir dir;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<std::vector<std::string>> table;
  int best = -1;
  double best_measured = std::numeric_limits<double>::infinity();
  const int n = std::min<int>(k, static_cast<int>(r.top.size()));
  for (int i = 0; i < n; ++i) {
    const auto& cand = r.top[i];
    nlohmann::ordered_json row;
    row["rank"] = i + 1;
    row["strategy"] = cost::to_cli_string(cand.strategy);
    row["predicted_iteration_time_s"] = cand.estimate.iteration_time_s;
    std::fprintf(stderr, "plan: trial %d/%d: %s\n", i + 1, n, cost::to_cli_string(cand.strategy).c_str());
    std::string measured_text = "-", ratio_text = "-", note;
    const TrialOutcome t = run_trial(model_spec, cand.strategy, c.num_devices(), steps, timeout_s, dir.path, i);
    note = t.note;
    if (note.empty()) {
      row["measured_iteration_time_s"] = t.iteration_time_s;
      row["final_loss"] = t.final_loss;
      measured_text = core::format_seconds(t.iteration_time_s);
      ratio_text = fmt::format("{:.2f}", t.iteration_time_s / cand.estimate.iteration_time_s);
      if (t.iteration_time_s < best_measured) {  // ties keep the better-predicted (earlier) plan
        best_measured = t.iteration_time_s;
        best = i;
      }
    }
    if (!note.empty()) row["note"] = note;
    rows.push_back(row);
    table.push_back({fmt::format("#{}", i + 1), core::format_seconds(cand.estimate.iteration_time_s), measured_text,
                     ratio_text, note.empty() ? cost::to_cli_string(cand.strategy) : note});
  }
  fmt::print("\nTrials ({} steps each, local processes, libtorch + Gloo; AMP Algorithm 1):\n{}", steps,
             core::render_table({"plan", "predicted", "measured", "measured/predicted", "strategy"}, table));
  if (best >= 0)
    fmt::print("re-ranked best (measured): #{} at {}\n", best + 1, core::format_seconds(best_measured));
  else
    fmt::print("no trial ran; the predicted ranking stands\n");
  return rows;
}

}  // namespace strata::cli
