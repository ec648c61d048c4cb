// cli/cmd_exec: `strata run` (train a plan for real on local processes or under torchrun), `strata profile`
// (measure layers and Gloo collectives on this machine) and the hidden `strata exec-worker` (one spawned rank).
// Without the executor (STRATA_WITH_EXEC undefined) run/profile say so and exit 2.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "commands.hpp"
#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/model/model.hpp"
#ifdef STRATA_WITH_EXEC
#include "strata/exec/profile.hpp"
#include "strata/exec/run.hpp"
#endif

namespace strata::cli {
namespace {

struct RunArgs {
  std::string plan, model, strategy, json, checkpoint, resume, optimizer = "adam", fault;
  int world_size = 0, steps = 10, threads = 1;
  std::uint64_t seed = 1;
  double timeout_s = 60, lr = 1e-3, bucket_mb = 1.0;
  bool quiet = false;
};

struct ProfileArgs {
  std::string model, out = "profile.json", cluster_out, tp = "1,2,4", mbs = "1,2,4,8";
  int max_group = 8, repeats = 5, comm_repeats = 10, threads = 1, devices = 0, concurrency = 0, cpu_cores = -1;
  double timeout_s = 60;
};

#ifndef STRATA_WITH_EXEC
[[noreturn]] void no_executor(const char* cmd) {
  fmt::print(stderr, "strata {}: this build has no executor (configured with -DSTRATA_WITH_EXEC=OFF; libtorch and "
                     "gloo are needed: scripts/setup installs them)\n", cmd);
  std::exit(core::kInputErrorExitCode);
}
#else
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
    rows.push_back({std::to_string(r.first_step + static_cast<int>(i)), fmt::format("{:.6f}", r.losses[i]),
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

void run_run(const RunArgs& a) {
  if (a.plan.empty() == a.strategy.empty())
    throw core::InputError("run: give exactly one of --plan FILE and --strategy S");
  if (!a.json.empty()) check_output_path(a.json, "run: --json");
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
}

void run_profile_cmd(const ProfileArgs& a) {
  check_output_path(a.out, "profile: --out");
  if (!a.cluster_out.empty()) check_output_path(a.cluster_out, "profile: --cluster-out");
  const auto m = model::resolve_model(a.model);
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
  write_text(a.out, profile.dump(2) + "\n", "--out");
  fmt::print("wrote {} ({} layer rows, {} collective rows)\n", a.out, profile["layers"].size(),
             profile["collectives"].size());
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
#endif

}  // namespace

void register_exec_commands(CLI::App& app) {
  auto ra = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand(
      "run",
      "Train a strategy for real: spawns dp·tp·pp local processes (libtorch + c10d Gloo, fp32 on CPU) that train the "
      "GPT model on a seeded synthetic token stream, and reports the loss per step, iteration times, per-stage "
      "compute/wait and peak memory. Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) each process "
      "is one rank instead.\n\nExample: strata run --model tiny-gpt --strategy dp=2,tp=2,gbs=8 --steps 5\n"
      "         strata run --model small-gpt --strategy pp=4,mbs=2,gbs=16,schedule=1f1b --steps 10 --json run.json");
  run->add_option("--plan", ra->plan, "Strategy file or plan file (its \"best\" strategy); see docs/strategy.md");
  run->add_option("--model", ra->model, "Model: zoo name (tiny-gpt, small-gpt, ...) or model JSON file");
  run->add_option("--strategy", ra->strategy,
                  "Strategy, e.g. dp=2,tp=2,pp=1,mbs=1,gbs=8,schedule=1f1b,zero=1,recompute=full,sp=on");
  run->add_option("--world-size", ra->world_size, "Number of ranks (default: dp·tp·pp of the strategy)");
  run->add_option("--steps", ra->steps, "Optimizer steps to run (default 10)")->check(CLI::Range(1, 1000000));
  run->add_option("--seed", ra->seed, "Seed of the data stream and the initial weights (default 1)");
  run->add_option("--json", ra->json, "Write the run record as JSON to FILE ('-' = stdout)");
  run->add_option("--timeout", ra->timeout_s,
                  "Seconds a collective, p2p transfer or rendezvous may take before the ranks give up (default 60)")
      ->check(CLI::Range(0.1, 86400.0));
  run->add_option("--checkpoint", ra->checkpoint, "Save a sharded checkpoint (one file per rank) to DIR at the end");
  run->add_option("--resume", ra->resume, "Resume from the checkpoint in DIR (same model, strategy, seed)");
  run->add_option("--optimizer", ra->optimizer, "adam (default) or sgd");
  run->add_option("--lr", ra->lr, "Learning rate (default 1e-3)")->check(CLI::PositiveNumber);
  run->add_option("--threads", ra->threads, "Intra-op threads per rank (default 1)")->check(CLI::Range(1, 256));
  run->add_option("--bucket-mb", ra->bucket_mb, "Data-parallel gradient bucket size in MiB (default 1)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--quiet", ra->quiet, "No progress lines on stderr");
  run->add_option("--fault", ra->fault, "Testing: make RANK fail at STEP (RANK:STEP[:kill|hang|exit])")->group("");
  run->callback([ra] {
#ifdef STRATA_WITH_EXEC
    run_run(*ra);
#else
    no_executor("run");
#endif
  });

  auto pa = std::make_shared<ProfileArgs>();
  auto* prof = app.add_subcommand(
      "profile",
      "Measure this machine for the cost model: forward/backward time of each layer kind of a GPT model per "
      "tensor-parallel degree and micro-batch size (one thread, fp32), and Gloo all-reduce / all-gather / "
      "reduce-scatter / p2p times on loopback for group sizes 2..--max-group, each timed between compute blocks "
      "with every rank busy, as in training. Writes the profile file that "
      "`strata estimate/plan --profile` read, and optionally a cluster file for this machine.\n\n"
      "Example: strata profile --model small-gpt --tp 1,2,4 --mbs 1,2,4 --out profile.json --cluster-out "
      "cpu-local.json");
  prof->add_option("--model", pa->model, "Model: zoo name (tiny-gpt, small-gpt, ...) or model JSON file")->required();
  prof->add_option("--tp", pa->tp, "Tensor-parallel degrees to time the layers at (default 1,2,4)");
  prof->add_option("--mbs", pa->mbs, "Micro-batch sizes (default 1,2,4,8)");
  prof->add_option("--out", pa->out, "Profile file to write (default profile.json; '-' = stdout)");
  prof->add_option("--cluster-out", pa->cluster_out, "Also write a cluster file describing this machine");
  prof->add_option("--devices", pa->devices, "Devices in the --cluster-out node (default --max-group)");
  prof->add_option("--max-group", pa->max_group, "Largest collective group to measure (default 8; 0 = none)");
  prof->add_option("--repeats", pa->repeats, "Timed repetitions per measurement, median kept (default 5)");
  prof->add_option("--comm-repeats", pa->comm_repeats,
                   "Timed iterations of each collective's compute-then-collective loop, mean kept, median of 3 rounds (default 10)")
      ->check(CLI::Range(1, 100000));
  prof->add_option("--threads", pa->threads, "Intra-op threads (default 1, as strata run)")->check(CLI::Range(1, 256));
  prof->add_option("--timeout", pa->timeout_s, "Collective timeout in seconds (default 60)");
  prof->add_option("--cpu-cores", pa->cpu_cores,
                   "CPU cores the --cluster-out node's devices share (default: the cores this process may use). "
                   "With more devices than cores the cost model bounds the node's compute by the cores "
                   "(docs/cost-model.md, Shared CPU hosts); 0 leaves the field out")
      ->check(CLI::Range(0, 65536));
  prof->add_option("--concurrency", pa->concurrency,
                   "Time the layers in N processes at once (default: min(devices, cores), every core busy, none "
                   "shared). With N above this machine's cores the times include time-sharing a core, and the cluster "
                   "file then has no cpu_cores, so the sharing is not counted twice")
      ->check(CLI::Range(1, 64));
  prof->callback([pa] {
#ifdef STRATA_WITH_EXEC
    run_profile_cmd(*pa);
#else
    no_executor("profile");
#endif
  });

  // One spawned rank of `strata run` / `strata profile` (not for people: the launcher passes these).
  auto wa = std::make_shared<std::pair<std::string, std::string>>();
  auto mode = std::make_shared<bool>(false);
  auto layers_mode = std::make_shared<bool>(false);
  auto* worker = app.add_subcommand("exec-worker", "internal: one rank spawned by strata run/profile");
  worker->group("");
  worker->add_option("--config", wa->first)->required();
  worker->add_option("--result", wa->second);
  worker->add_flag("--profile-comm", *mode);
  worker->add_flag("--profile-layers", *layers_mode);
  worker->callback([wa, mode, layers_mode] {
#ifdef STRATA_WITH_EXEC
    if (*mode) exec::profile_worker_main(wa->first, wa->second);
    if (*layers_mode) exec::profile_layers_worker_main(wa->first, wa->second);
    exec::worker_process_main(wa->first, wa->second);
#else
    (void)layers_mode;
    no_executor("exec-worker");
#endif
  });
}

}  // namespace strata::cli
