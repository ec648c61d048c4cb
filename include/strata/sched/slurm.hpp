// sched/slurm: the Slurm back-end's translation of Gavel's round-based placements into Slurm's own commands
// (docs/scheduler.md "Slurm back-end"): a job placed on a GPU type it did not hold last round is submitted with the
// type as a typed gres (sbatch --gres=gpu:TYPE:N), a job that loses or changes its placement is cancelled (its
// checkpoint at the round boundary keeps its progress), a renewed lease needs no action.
#pragma once
#include <string>
#include <vector>

namespace strata::sched {

struct RoundPlacement {
  std::string job;       // job name
  std::string type;      // GPU type (Slurm gres type)
  int gpus = 1;          // scale factor
  bool renewed = false;  // same type and GPUs as last round
};

// argv of each command, in order: cancellations first (free the GPUs), then submissions. `job_command` is the
// shell command each Slurm job runs (e.g. the training script resuming from its checkpoint).
std::vector<std::vector<std::string>> slurm_round_commands(const std::vector<RoundPlacement>& previous,
                                                           const std::vector<RoundPlacement>& current,
                                                           const std::string& job_command);

// One command line for a shell (arguments single-quoted where needed).
std::string shell_line(const std::vector<std::string>& argv);

}  // namespace strata::sched
