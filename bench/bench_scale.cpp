// bench/bench_scale: planning (and simulating) at 1k–98k GPUs (issue 22; not a test). Runs `strata plan --model
// llama3-405b --seq 8192` on dgx-h100 clusters of 1,024 / 8,192 / 32,768 / 98,304 GPUs and on a mixed 48k A100 +
// 48k H100 cluster, each N times as a child process pinned to one core under `/usr/bin/time -v`, and prints the
// medians of the search time (the plan file's search_time_s, wall clock), the process CPU time (user + system:
// start-up, search and the plan file), the process wall time and its peak RSS; then
// `strata simulate` of the best 98,304-GPU plan (wall and CPU time, peak RSS, simulated vs analytical iteration
// time), aggregated (one representative per class of identical replicas, the default) and with --full.
// Targets: search flat beyond 8k GPUs and <= 1 s at 98,304; peak RSS <= 100 MiB; simulate <= 5 s, within 5 %.
// Usage: bench_scale [--reps N] [--bin PATH-TO-strata] [--no-sim] [--no-full] [--sim-only]   (default 3 reps;
// --sim-only plans the 98k cluster once and benchmarks simulate; --no-full skips the slow --full runs)
#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/core/text.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

extern char** environ;

namespace {

constexpr const char* kTimeBinary = "/usr/bin/time";

struct Scenario {
  std::string name, cluster;
  int gpus = 0;
  long gbs = 0;
};

struct Sample {
  double wall_s = 0, rss_bytes = -1, cpu_s = -1;
  int exit_code = -1;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double peak_rss_from_time_report(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  const std::string key = "Maximum resident set size (kbytes):";
  while (std::getline(f, line))
    if (const auto at = line.find(key); at != std::string::npos) return std::stod(line.substr(at + key.size())) * 1024;
  return -1;
}

// User + system CPU seconds from a `time -v` report (-1 when missing).
double cpu_from_time_report(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  double cpu = 0;
  int found = 0;
  for (const char* key : {"User time (seconds):", "System time (seconds):"}) {
    f.clear();
    f.seekg(0);
    while (std::getline(f, line))
      if (const auto at = line.find(key); at != std::string::npos) {
        cpu += std::stod(line.substr(at + std::string(key).size()));
        ++found;
        break;
      }
  }
  return found == 2 ? cpu : -1;
}

// One run of `strata args...` under `time -v` (stdout to `out`, stderr to /dev/null).
Sample run_once(const std::string& bin, const std::vector<std::string>& args, const std::string& report,
                const std::string& out_path = "/dev/null") {
  std::vector<std::string> owned{kTimeBinary, "-v", "-o", report, bin};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  Sample out;
  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = -1;
  if (posix_spawn(&pid, kTimeBinary, &files, nullptr, argv.data(), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  posix_spawn_file_actions_destroy(&files);
  out.rss_bytes = peak_rss_from_time_report(report);
  out.cpu_s = cpu_from_time_report(report);
  return out;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  try {
    return nlohmann::json::parse(f);
  } catch (const std::exception&) {
    return {};
  }
}

// CPU time of this thread: the in-process search runs on one core; wall time on the shared machine includes others.
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

std::string mib(double bytes) { return bytes < 0 ? "?" : fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }

}  // namespace

int main(int argc, char** argv) {
  int reps = 3;
  bool sim = true, full = true, sim_only = false;
  std::string bin = STRATA_BIN;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--no-sim") sim = false;
    if (flag == "--no-full") full = false;
    if (flag == "--sim-only") sim_only = true;
    if (flag == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
    if (flag == "--bin" && i + 1 < argc) bin = argv[++i];
  }
  if (access(kTimeBinary, X_OK) != 0) {
    fmt::print("bench_scale: skipped: {} is missing (Debian package `time`)\n", kTimeBinary);
    return 0;
  }
  cpu_set_t one_core;
  CPU_ZERO(&one_core);
  CPU_SET(sched_getcpu() >= 0 ? sched_getcpu() : 0, &one_core);
  sched_setaffinity(0, sizeof(one_core), &one_core);  // one core, inherited by the children
  const std::vector<Scenario> scenarios = {
      {"1k H100", "dgx-h100:128", 1024, 1024},
      {"8k H100", "dgx-h100:1024", 8192, 4096},
      {"32k H100", "dgx-h100:4096", 32768, 4096},
      {"98k H100", "dgx-h100:12288", 98304, 16384},
      {"48k A100 + 48k H100", "dgx-a100:6144+dgx-h100:6144", 98304, 16384},
  };
  char dir_template[] = "/tmp/bench_scale_XXXXXX";
  const std::string dir = mkdtemp(dir_template) ? dir_template : "/tmp";
  const std::string report = dir + "/time.txt";
  std::vector<std::vector<std::string>> rows;
  std::string plan_98k;
  for (const auto& s : scenarios) {
    if (sim_only && (s.gpus != 98304 || s.cluster.find('+') != std::string::npos)) continue;
    const std::string plan_file = dir + "/" + s.cluster + ".json";
    const std::vector<std::string> args{"plan",    "--model", "llama3-405b", "--seq",  "8192",   "--cluster",
                                        s.cluster, "--gbs",   std::to_string(s.gbs), "--json", plan_file};
    std::vector<double> search, wall, rss, cpu;
    int failures = 0;
    nlohmann::json last;
    for (int r = 0; r < (sim_only ? 1 : reps); ++r) {
      const Sample x = run_once(bin, args, report);
      failures += x.exit_code != 0;
      last = read_json(plan_file);
      search.push_back(last.value("search_time_s", 0.0));
      wall.push_back(x.wall_s);
      rss.push_back(x.rss_bytes);
      cpu.push_back(x.cpu_s);
    }
    if (s.gpus == 98304 && s.cluster.find('+') == std::string::npos) plan_98k = plan_file;
    rows.push_back({s.name, fmt::format("{}", s.gpus), fmt::format("{}", s.gbs),
                    fmt::format("{} / {}", last.value("space_size", 0), last.value("evaluated", 0)),
                    fmt::format("{:.3f} s", median(search)), fmt::format("{:.3f} s", median(cpu)),
                    fmt::format("{:.3f} s", median(wall)), mib(median(rss)),
                    failures ? fmt::format("{} failed", failures) : last.contains("best") ? last["best"].value("cli", "").substr(0, 40) : "?"});
  }
  fmt::print("strata plan --model llama3-405b --seq 8192 ({} runs each, one core, medians)\n{}", sim_only ? 1 : reps,
             strata::core::render_table({"cluster", "GPUs", "gbs", "configs / costed", "search (wall)", "process CPU",
                                         "process wall", "peak RSS", "best (prefix)"},
                                        rows));
  // The search alone, in this process (plan::plan as `strata plan` runs it, one thread): thread CPU time and wall.
  if (!sim_only) {
    std::vector<std::vector<std::string>> cpu_rows;
    const auto m = strata::model::with_seq(strata::model::resolve_model("llama3-405b"), 8192);
    for (const auto& s : scenarios) {
      const auto c = strata::hw::resolve_cluster(s.cluster, strata::hw::builtin_catalog());
      strata::plan::PlanOptions po;
      po.global_batch = s.gbs;
      std::vector<double> cpu, wall;
      strata::plan::PlanResult r;
      for (int i = 0; i < reps; ++i) {
        const auto w0 = std::chrono::steady_clock::now();
        const double t0 = thread_cpu_s();
        r = strata::plan::plan(m, c, po);
        cpu.push_back(thread_cpu_s() - t0);
        wall.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count());
      }
      cpu_rows.push_back({s.name, fmt::format("{}", s.gpus), fmt::format("{} / {}", r.space_size, r.evaluated),
                          fmt::format("{:.3f} s", median(cpu)), fmt::format("{:.3f} s", median(wall))});
    }
    fmt::print("\nsearch alone (plan::plan in this process, one thread, {} runs each, medians)\n{}", reps,
               strata::core::render_table({"cluster", "GPUs", "configs / costed", "search CPU", "search wall"},
                                          cpu_rows));
  }
  if (sim && !plan_98k.empty()) {
    const std::string out = dir + "/sim.json";
    std::vector<std::vector<std::string>> sim_rows;
    // The JSON document has a row per device (98,304), which dominates the aggregated run's time and memory; the
    // table prints 32 rows.
    nlohmann::json j;  // the last JSON (the table run shows the aggregated JSON run's figures)
    for (const int mode : {0, 1, 2}) {  // aggregated --json, aggregated table, --full --json
      const bool whole = mode == 2;
      if (whole && !full) continue;
      std::vector<std::string> args{"simulate", "--plan", plan_98k};
      if (mode != 1) args.push_back("--json");
      if (whole) args.push_back("--full");
      std::vector<double> wall, rss, cpu;
      const int n = whole ? 1 : reps;  // --full takes tens of seconds
      for (int r = 0; r < n; ++r) {
        const Sample x = run_once(bin, args, report, out);
        wall.push_back(x.wall_s);
        rss.push_back(x.rss_bytes);
        cpu.push_back(x.cpu_s);
        if (mode != 1) j = read_json(out);
      }
      const char* label = mode == 0 ? "aggregated (default), --json" : mode == 1 ? "aggregated, table" : "--full --json";
      sim_rows.push_back({label, fmt::format("{}", n),
                          fmt::format("{:.2f} s", median(wall)), fmt::format("{:.2f} s", median(cpu)), mib(median(rss)),
                          fmt::format("{}", j.value("simulated_replicas", 0)), fmt::format("{}", j.value("tasks", 0)),
                          fmt::format("{:.4f} s", j.value("iteration_time_s", 0.0)),
                          fmt::format("{:.4f} s", j.value("analytical_iteration_time_s", 0.0)),
                          fmt::format("{:+.2f} %", 100.0 * j.value("relative_difference", 0.0))});
    }
    fmt::print("\nstrata simulate --plan <best 98,304-GPU plan> (one core, medians)\n{}",
               strata::core::render_table({"mode", "runs", "wall", "CPU", "peak RSS", "replicas played", "tasks",
                                           "simulated", "analytical", "difference"},
                                          sim_rows));
  }
  for (const char* f : {"time.txt", "sim.json"}) unlink((dir + "/" + f).c_str());
  for (const auto& s : scenarios) unlink((dir + "/" + s.cluster + ".json").c_str());
  rmdir(dir.c_str());
  return 0;
}
