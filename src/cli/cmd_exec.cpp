// cli/cmd_exec: the flags and help of `strata run` (train a plan for real on local processes or under torchrun),
// `strata profile` (measure layers and Gloo collectives on this machine) and the hidden `strata exec-worker` (one
// spawned rank). No executor code here: the actions are passed in (exec_commands.hpp).
#include <memory>

#include "exec_commands.hpp"
#include "io.hpp"

namespace strata::cli {

void register_exec_commands(CLI::App& app, const ExecHandlers& handlers) {
  auto ra = std::make_shared<RunArgs>();
  auto* run = app.add_subcommand(
      "run",
      "Train a strategy for real: spawns dp·tp·pp local processes (libtorch + c10d Gloo, fp32 on CPU) that train the "
      "GPT model on a seeded synthetic token stream, and reports the loss per step, iteration times, per-stage "
      "compute/wait and peak memory. Under torchrun (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set) each process "
      "is one rank instead. Per-stage strategies (stages=..., each stage its own dp, tp and layers; gpipe or 1f1b; "
      "any ZeRO) run on the stages' dp·tp processes, re-sharding activations and gradients between stages.\n\n"
      "Example: strata run --model tiny-gpt --strategy dp=2,tp=2,gbs=8 --steps 5\n"
      "         strata run --model small-gpt --strategy pp=4,mbs=2,gbs=16,schedule=1f1b --steps 10 --json run.json\n"
      "         strata run --model tiny-gpt --strategy \"gbs=8,zero=1,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3\" --steps 5");
  run->add_option("--plan", ra->plan, "Strategy file or plan file (its \"best\" strategy); see docs/strategy.md");
  run->add_option("--model", ra->model, "Model: zoo name (tiny-gpt, small-gpt, ...) or model JSON file");
  run->add_option("--strategy", ra->strategy,
                  "Strategy, e.g. dp=2,tp=2,pp=1,mbs=1,gbs=8,schedule=1f1b,zero=1,recompute=full,sp=on, or per stage "
                  "gbs=8,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3 (docs/strategy.md)");
  run->add_option("--world-size", ra->world_size,
                  "Number of ranks (default: dp·tp·pp of the strategy; per stage: the sum of dp·tp over the stages)")
      ->transform(integer_in(core::limits::kWorldSize));
  run->add_option("--steps", ra->steps, "Optimizer steps to run (default 10)")->transform(integer_in(core::limits::kSteps));
  run->add_option("--seed", ra->seed, "Seed of the data stream and the initial weights (default 1)")
      ->transform(integer_in(core::limits::kSeed));
  run->add_option("--json", ra->json, "Write the run record as JSON to FILE ('-' = stdout)");
  run->add_option("--timeout", ra->timeout_s,
                  "Seconds a collective, p2p transfer or rendezvous may take before the ranks give up (default 60)")
      ->check(number_in(core::limits::kTimeoutS));
  run->add_option("--checkpoint", ra->checkpoint, "Save a sharded checkpoint (one file per rank) to DIR at the end");
  run->add_option("--resume", ra->resume, "Resume from the checkpoint in DIR (same model, strategy, seed)");
  run->add_option("--optimizer", ra->optimizer, "adam (default) or sgd");
  run->add_option("--lr", ra->lr, "Learning rate (default 1e-3)")
      ->check(number_in(core::limits::kLr));
  run->add_option("--threads", ra->threads, "Intra-op threads per rank (default 1)")->transform(integer_in({1, 256}));
  run->add_option("--bucket-mb", ra->bucket_mb, "Data-parallel gradient bucket size in MiB (default 1)")
      ->check(number_in(core::limits::kBucketMib));
  run->add_flag("--quiet", ra->quiet, "No progress lines on stderr");
  run->add_option("--fault", ra->fault, "Testing: make RANK fail at STEP (RANK:STEP[:kill|hang|exit])")->group("");
  run->callback([ra, h = handlers.run] { h(*ra); });

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
  prof->add_option("--gpu-type", pa->gpu_type,
                   "Label the profile with the GPU type it measured (a catalog name, see `strata gpus`; e.g. "
                   "h100-sxm): its rows then apply to devices of that type only, so one cluster can mix measured "
                   "and analytical types and profiles of several types can be merged (docs/cost-model.md, Measured "
                   "profile). Default: no label, the rows apply to every GPU type");
  prof->add_option("--devices", pa->devices, "Devices in the --cluster-out node (default --max-group)")
      ->transform(integer_in({1, 64}));
  prof->add_option("--max-group", pa->max_group, "Largest collective group to measure (default 8; 0 = none)")
      ->transform(integer_in({0, 16}));
  prof->add_option("--repeats", pa->repeats, "Timed repetitions per measurement, median kept (default 5)")
      ->transform(integer_in({1, 100000}));
  prof->add_option("--comm-repeats", pa->comm_repeats,
                   "Timed iterations of each collective's compute-then-collective loop, mean kept, median of 3 rounds (default 10)")
      ->transform(integer_in({1, 100000}));
  prof->add_option("--threads", pa->threads, "Intra-op threads (default 1, as strata run)")
      ->transform(integer_in({1, 256}));
  prof->add_option("--timeout", pa->timeout_s, "Collective timeout in seconds (default 60)")
      ->check(number_in(core::limits::kTimeoutS));
  prof->add_option("--cpu-cores", pa->cpu_cores,
                   "CPU cores the --cluster-out node's devices share (default: the cores this process may use). "
                   "With more devices than cores the cost model bounds the node's compute by the cores "
                   "(docs/cost-model.md, Shared CPU hosts); 0 leaves the field out")
      ->transform(integer_in({0, 65536}));
  prof->add_option("--concurrency", pa->concurrency,
                   "Time the layers in N processes at once (default: min(devices, cores), every core busy, none "
                   "shared). With N above this machine's cores the times include time-sharing a core, and the cluster "
                   "file then has no cpu_cores, so the sharing is not counted twice")
      ->transform(integer_in({1, 64}));
  prof->callback([pa, h = handlers.profile] { h(*pa); });

  // One spawned rank of `strata run` / `strata profile` (not for people: the launcher passes these).
  auto wa = std::make_shared<WorkerArgs>();
  auto* worker = app.add_subcommand("exec-worker", "internal: one rank spawned by strata run/profile");
  worker->group("");
  worker->add_option("--config", wa->config)->required();
  worker->add_option("--result", wa->result);
  worker->add_flag("--profile-comm", wa->profile_comm);
  worker->add_flag("--profile-layers", wa->profile_layers);
  worker->callback([wa, h = handlers.worker] { h(*wa); });
}

}  // namespace strata::cli
