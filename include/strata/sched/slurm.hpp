// sched/slurm: the Slurm back-end (docs/scheduler.md "Slurm back-end"). Gavel's round-based placements become
// actions in Slurm's own commands: a job's first placement is submitted with the GPU type as a typed gres
// (sbatch --gres=gpu:TYPE:N), a job that loses its GPUs is requeued and held (scontrol requeuehold; it restarts
// from its checkpoint), a held job placed again on the same type is released (scontrol release), a job placed on
// another type than it holds is cancelled and resubmitted with the new type, a finished job is cancelled, a
// renewed lease needs nothing. `slurm_round_actions` is the pure translation; `SlurmLive` runs the actions against
// a live cluster with wall-clock rounds.
#pragma once
#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace strata::sched {

struct RoundPlacement {
  std::string job;       // job name
  std::string type;      // GPU type (Slurm gres type)
  int gpus = 1;          // scale factor
  bool renewed = false;  // same type and GPUs as last round
  double end_s = -1;     // the model finishes the job this many seconds into the round; -1 = runs the whole round
};

struct SlurmOptions {
  std::string job_command = "sleep 3600";  // what each Slurm job runs (e.g. training resuming from its checkpoint)
  std::vector<std::string> sbatch_args;    // extra sbatch arguments (partition, output file, ...)
};

// Argument standing for the job's Slurm id in an action's argv (the live runner substitutes the id, a dry-run
// script a shell variable).
inline constexpr const char* kSlurmIdArg = "{id}";

struct SlurmAction {
  enum class Kind { kSubmit, kRequeueHold, kRelease, kCancel };
  Kind kind = Kind::kSubmit;
  std::string job;                // strata job name
  std::vector<std::string> argv;  // the command; kSubmit prints the new id (sbatch --parsable)
  std::string id;                 // the Slurm id it acts on (known when translated; empty for kSubmit)
};

// What Slurm holds for each strata job (the back-end's view, updated by slurm_round_actions / slurm_cancel).
struct SlurmJob {
  enum class Phase { kRunning, kHeld, kDone };
  Phase phase = Phase::kRunning;
  std::string type;
  int gpus = 0;
  std::string id;  // Slurm job id (live runner) ...
  int ordinal = 0; // ... or the job's number for a dry-run script's shell variable J<ordinal>
};
struct SlurmState {
  std::map<std::string, SlurmJob> jobs;
};

// The actions that turn what Slurm holds into this round's placements, in order: requeue-holds and cancellations
// first (they free GPUs), then updates, releases and submissions. Updates `state`.
std::vector<SlurmAction> slurm_round_actions(SlurmState& state, const std::vector<RoundPlacement>& current,
                                             const SlurmOptions& opt);
// scancel of a job the model finished (phase kDone); every running or held job when `job` is empty.
std::vector<SlurmAction> slurm_cancel(SlurmState& state, const std::string& job = "");

// One command line for a shell (arguments single-quoted where needed).
std::string shell_line(const std::vector<std::string>& argv);
// A dry-run script line: submissions assign the job's shell variable (J3=$(sbatch ...)), the others use it.
std::string dry_run_line(const SlurmAction& a, const SlurmState& state);

// --- live cluster ---------------------------------------------------------------------------------------------

struct CommandResult {
  int exit_code = -1;  // -1: could not start or killed at the timeout
  bool timed_out = false;
  std::string out, err;
};
// Runs argv (PATH lookup) with stdin from /dev/null, capturing stdout/stderr; killed after `timeout_s`.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s);

// Drives a live Slurm cluster from the simulator's rounds (SimOptions::on_round): simulated time is paced to wall
// time (a round of round_s simulated seconds lasts round_s seconds), each round's actions run through Slurm's
// commands, a job the model finishes mid-round is cancelled at that moment, and after the actions the runner
// reads squeue back until the placed jobs run (warning on stderr about those that do not). Slurm errors throw
// core::InputError naming the command and Slurm's message.
struct SlurmLive {
  SlurmOptions options;
  double round_s = 360;
  double command_timeout_s = 30;
  std::ostream* log = nullptr;  // every command run, with wall-clock offsets (--slurm-script)
  SlurmState state;
  bool started = false;
  double sim_origin_s = 0, last_round_s = 0;
  std::chrono::steady_clock::time_point wall_origin;
};
void slurm_live_round(SlurmLive& live, double now_s, const std::vector<RoundPlacement>& placed);
// After the last round: waits for its end when jobs still run, then cancels every remaining Slurm job.
void slurm_live_finish(SlurmLive& live);

}  // namespace strata::sched
