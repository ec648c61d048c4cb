// exec_cli/run_commands: what `strata run`, `strata profile` and the hidden `strata exec-worker` do, in the
// `strata-exec` binary (the only one linking libtorch and Gloo; `strata` hands these command lines over to it).
// The flags are defined once in src/cli/cmd_exec.cpp.
#include "run_commands.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/exec/profile.hpp"
#include "strata/exec/run.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {
namespace {

void write_text(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    fmt::print("{}", text);
    return;
  }
  std::ofstream f(path);
  f << text;
  if (!f) throw core::InputError(fmt::format("{} {}: cannot write the file", flag, path));
}

std::vector<std::int64_t> int_list(const std::string& text, const std::string& flag) {
  std::vector<std::int64_t> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    try {
      std::size_t used = 0;
      const long long v = std::stoll(item, &used);
      if (used != item.size() || v < 1 || v > 4096) throw std::invalid_argument("range");
      out.push_back(v);
    } catch (const std::exception&) {
      throw core::InputError(fmt::format("{}: '{}' is not a positive integer (expected a list like 1,2,4)", flag, item));
    }
    start = end + 1;
  }
  return out;
}

void print_record(const exec::RunRecord& r) {
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < r.losses.size(); ++i)
    rows.push_back({std::to_string(r.first_step + static_cast<int>(i)),
                    std::isfinite(r.losses[i]) ? fmt::format("{:.6f}", r.losses[i]) : "not finite",
                    i < r.iteration_times_s.size() ? core::format_seconds(r.iteration_times_s[i]) : ""});
  fmt::print("{}\n", core::render_table({"step", "loss", "iteration time"}, rows));
  fmt::print("iteration time (median of steady steps): {}\n\n", core::format_seconds(r.iteration_time_s));
  rows.clear();
  for (const auto& s : r.stages)
    rows.push_back({std::to_string(s.stage), core::format_seconds(s.compute_s_per_iter),
                    core::format_seconds(s.wait_s_per_iter)});
  fmt::print("{}\n", core::render_table({"stage", "compute/iter", "wait/iter"}, rows));
  rows.clear();
  for (const auto& k : r.ranks)
    rows.push_back({std::to_string(k.rank), std::to_string(k.stage), std::to_string(k.dp_rank),
                    std::to_string(k.tp_rank), core::format_bytes(k.peak_rss_bytes)});
  fmt::print("{}", core::render_table({"rank", "stage", "dp", "tp", "peak RSS"}, rows));
}

// --checkpoint DIR is written after the last step: refuse a DIR that cannot be created or written before the
// run, not after it (the parent must exist, as for every output path; DIR itself is created).
void check_checkpoint_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw core::InputError(
        fmt::format("run: --checkpoint: cannot write into '{}' (not a directory)", core::printable(dir)));
  if (fs::is_directory(dir, ec)) {
    cli::check_output_dir(dir, "run: --checkpoint");
    return;
  }
  fs::path p(dir);
  if (!p.has_filename()) p = p.parent_path();  // "ck/" names the directory ck
  cli::check_output_path(p.string(), "run: --checkpoint");
}

// A diverged run (a loss that became nan or inf) still prints and writes its record; this names the first step
// whose loss was not finite, on stderr, and ends the command with exit code 1 (the run failed, the input was valid).
void report_divergence(const exec::RunRecord& r, const std::string& json) {
  for (std::size_t i = 0; i < r.losses.size(); ++i) {
    if (std::isfinite(r.losses[i])) continue;
    std::fflush(stdout);
    fmt::print(stderr, "strata: run diverged: the loss is not finite from step {} on (try a smaller --lr){}\n",
               r.first_step + static_cast<int>(i),
               json.empty() || json == "-" ? "" : fmt::format("; the run record is in {}", json));
    std::exit(1);
  }
}

void run_run(const RunArgs& a) {
  if (a.plan.empty() == a.strategy.empty())
    throw core::InputError("run: give exactly one of --plan FILE and --strategy S");
  if (!a.json.empty()) cli::check_output_path(a.json, "run: --json");
  if (!a.checkpoint.empty()) check_checkpoint_dir(a.checkpoint);
  std::string model_name = a.model;
  cost::Strategy s;
  if (!a.plan.empty()) {
    s = cost::load_strategy_file(a.plan);
    const auto j = core::load_json_file(a.plan);
    if (model_name.empty() && j.is_object() && j.contains("model") && j["model"].is_string())
      model_name = j["model"].get<std::string>();
  } else {
    s = cost::parse_strategy(a.strategy);
  }
  if (model_name.empty()) throw core::InputError("run: --model is required (the plan file names no model)");
  const auto m = model::resolve_model(model_name);
  if (!a.plan.empty())
    cli::check_plan_agrees(cli::plan_file_inputs(a.plan), {"run", a.plan, a.model.empty() ? nullptr : &m, ""});
  if (!a.resume.empty() && !std::filesystem::exists(a.resume + "/meta.json"))
    throw core::InputError(fmt::format("--resume {}: not a strata checkpoint directory (no meta.json)", a.resume));
  exec::RunOptions o = exec::make_run_options(m, s, a.world_size);
  o.steps = a.steps;
  o.seed = a.seed;
  o.optimizer = exec::parse_optimizer(a.optimizer, "--optimizer");
  o.lr = a.lr;
  o.timeout_s = a.timeout_s;
  o.checkpoint_dir = a.checkpoint;
  o.resume_dir = a.resume;
  o.threads = a.threads;
  o.bucket_bytes = a.bucket_mb * 1024 * 1024;
  o.progress = !a.quiet;
  if (!a.fault.empty()) o.fault = exec::parse_fault(a.fault, "--fault");
  exec::RunRecord rec;
  try {
    const auto env = exec::dist_env_from_environment();
    if (env.world_size > 0 && !env.loopback) {
      // Under torchrun: this process is one rank; rank 0 reports.
      exec::check_host_memory(o, std::max(1, env.local_world_size));
      rec = exec::worker_run(o, env, "");
      if (env.rank != 0) return;
    } else {
      rec = exec::run_local(o);
    }
  } catch (const exec::ExecError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: run failed: {}\n", e.what());
    std::exit(1);
  }
  if (!a.json.empty()) write_text(a.json, to_json(rec).dump(2) + "\n", "--json");
  if (a.json != "-") print_record(rec);
  report_divergence(rec, a.json);
}

void run_profile_cmd(const ProfileArgs& a) {
  cli::check_output_path(a.out, "profile: --out");
  if (!a.cluster_out.empty()) cli::check_output_path(a.cluster_out, "profile: --cluster-out");
  const auto m = model::resolve_model(a.model);
  std::string gpu_type;
  if (!a.gpu_type.empty()) {
    gpu_type = core::to_lower(a.gpu_type);
    // A catalog GPU, or cpu-local (the devices of the --cluster-out file); InputError otherwise.
    if (gpu_type != "cpu-local") hw::builtin_catalog().gpu(gpu_type, "profile: --gpu-type");
  }
  exec::ProfileOptions o;
  o.model = exec::gpt_dims_of(m);
  o.tp.clear();
  for (auto t : int_list(a.tp, "--tp")) o.tp.push_back(static_cast<int>(t));
  o.mbs = int_list(a.mbs, "--mbs");
  if (a.max_group < 0 || a.max_group == 1 || a.max_group > 16)
    throw core::InputError(fmt::format("--max-group: must be 0 (skip) or 2..16, got {}", a.max_group));
  o.max_group = a.max_group;
  if (a.repeats < 1) throw core::InputError("--repeats: must be >= 1");
  o.repeats = a.repeats;
  o.comm_repeats = a.comm_repeats;
  o.threads = a.threads;
  const int usable = exec::usable_cpu_cores();
  const int devices = a.devices > 0 ? a.devices : std::max(2, a.max_group);
  // Default: as many layer-timing processes as the ranks can keep cores busy, min(devices, cores): the layer times
  // then carry the shared caches and memory bandwidth of a busy host but no time-sharing of a core.
  o.concurrency = a.concurrency > 0 ? a.concurrency : std::min(devices, usable);
  o.timeout_s = a.timeout_s;
  o.progress = true;
  nlohmann::ordered_json profile;
  try {
    profile = exec::run_profile(o);
  } catch (const exec::ExecError& e) {
    fmt::print(stderr, "strata: profile failed: {}\n", e.what());
    std::exit(1);
  }
  // The label (cost/profile: a file-level gpu_type applies to every row without its own).
  if (!gpu_type.empty()) profile["gpu_type"] = gpu_type;
  write_text(a.out, profile.dump(2) + "\n", "--out");
  fmt::print("wrote {} ({} layer rows, {} collective rows{})\n", a.out, profile["layers"].size(),
             profile["collectives"].size(), gpu_type.empty() ? "" : ", gpu_type " + gpu_type);
  if (!a.cluster_out.empty()) {
    // Layer times measured with more processes than cores already include the time-sharing: not counted twice.
    const int cores = o.concurrency > usable ? 0 : a.cpu_cores >= 0 ? a.cpu_cores : usable;
    write_text(a.cluster_out, exec::local_cluster_json(profile, devices, cores).dump(2) + "\n", "--cluster-out");
    if (cores > 0)
      fmt::print("wrote {} (one node of {} cpu devices sharing {} cores{})\n", a.cluster_out, devices, cores,
                 devices > cores ? ": the cost model bounds its compute by the cores" : "");
    else
      fmt::print("wrote {} (one node of {} cpu devices, no cpu_cores: layer times include the sharing)\n",
                 a.cluster_out, devices);
  }
}
}  // namespace

ExecHandlers executor_handlers() {
  ExecHandlers h;
  h.run = run_run;
  h.profile = run_profile_cmd;
  h.worker = [](const WorkerArgs& w) {
    // A rank writing to a dead peer's socket must get EPIPE (Gloo then throws, and the rank exits with status 3
    // naming the collective) rather than be killed by SIGPIPE: Gloo's TCP pair writes without MSG_NOSIGNAL
    // (seen in CI: "rank 0 was killed by signal 13" after its pipeline peer was killed).
    std::signal(SIGPIPE, SIG_IGN);
    if (w.profile_comm) exec::profile_worker_main(w.config, w.result);
    if (w.profile_layers) exec::profile_layers_worker_main(w.config, w.result);
    exec::worker_process_main(w.config, w.result);
  };
  return h;
}

}  // namespace strata::cli
