// cli/exec_commands: the flags of `strata run`, `strata profile` and the hidden `strata exec-worker`, registered
// once and compiled into both binaries. `strata` (no libtorch) parses them for --help and flag errors and hands
// the command line to `strata-exec` (exec_binary.hpp); `strata-exec` (libtorch + Gloo, src/exec_cli/) parses the
// same flags and runs the executor. One definition, so the two parsers cannot disagree.
#pragma once
#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>

namespace strata::cli {

struct RunArgs {
  std::string plan, model, strategy, json, checkpoint, resume, optimizer = "adam", fault;
  int world_size = 0, steps = 10, threads = 1;
  std::uint64_t seed = 1;
  double timeout_s = 60, lr = 1e-3, bucket_mb = 1.0;
  bool quiet = false;
};

struct ProfileArgs {
  std::string model, out = "profile.json", cluster_out, tp = "1,2,4", mbs = "1,2,4,8";
  std::string gpu_type;  // label of the measured rows (a catalog GPU name); "" = rows for every GPU type
  int max_group = 8, repeats = 5, comm_repeats = 10, threads = 1, devices = 0, concurrency = 0, cpu_cores = -1;
  double timeout_s = 60;
};

// One spawned rank of `strata run` / `strata profile` (the launcher passes these).
struct WorkerArgs {
  std::string config, result;
  bool profile_comm = false, profile_layers = false;
};

// What each sub-command does once its flags are parsed.
struct ExecHandlers {
  std::function<void(const RunArgs&)> run;
  std::function<void(const ProfileArgs&)> profile;
  std::function<void(const WorkerArgs&)> worker;
};

// Registers run, profile and exec-worker on `app` with the given actions.
void register_exec_commands(CLI::App& app, const ExecHandlers& handlers);

}  // namespace strata::cli
