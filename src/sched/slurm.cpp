// sched/slurm: round placements → Slurm actions (sbatch, scontrol requeuehold/update/release, scancel) and their
// shell form for dry-run scripts.
#include "strata/sched/slurm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

namespace strata::sched {
namespace {

using Kind = SlurmAction::Kind;
using Phase = SlurmJob::Phase;

const RoundPlacement* find_job(const std::vector<RoundPlacement>& v, const std::string& job) {
  auto it = std::find_if(v.begin(), v.end(), [&](const RoundPlacement& p) { return p.job == job; });
  return it == v.end() ? nullptr : &*it;
}

std::string slurm_name(const std::string& job) { return "strata-" + job; }
std::string gres(const std::string& type, int gpus) { return fmt::format("gpu:{}:{}", type, gpus); }

SlurmAction submit(SlurmState& state, const RoundPlacement& p, const SlurmOptions& opt) {
  SlurmJob& j = state.jobs[p.job];
  if (j.ordinal == 0) j.ordinal = static_cast<int>(state.jobs.size());
  j.phase = Phase::kRunning;
  j.type = p.type;
  j.gpus = p.gpus;
  j.id.clear();
  // The GPU type is a typed gres (GresTypes=gpu, Gres=gpu:TYPE:N on the nodes); --requeue lets scontrol requeue it.
  std::vector<std::string> argv{"sbatch", "--parsable", "--job-name=" + slurm_name(p.job), "--nodes=1", "--requeue",
                                "--gres=" + gres(p.type, p.gpus)};
  argv.insert(argv.end(), opt.sbatch_args.begin(), opt.sbatch_args.end());
  argv.push_back("--wrap=" + opt.job_command);
  return {Kind::kSubmit, p.job, std::move(argv), ""};
}

}  // namespace

std::vector<SlurmAction> slurm_round_actions(SlurmState& state, const std::vector<RoundPlacement>& current,
                                             const SlurmOptions& opt) {
  std::vector<SlurmAction> frees, starts;
  for (auto& [name, j] : state.jobs) {
    if (j.phase != Phase::kRunning) continue;
    const RoundPlacement* now = find_job(current, name);
    if (now == nullptr) {  // lost its GPUs: back to the queue, held until strata places it again
      frees.push_back({Kind::kRequeueHold, name, {"scontrol", "requeuehold", kSlurmIdArg}, j.id});
      j.phase = Phase::kHeld;
    } else if (now->type != j.type || now->gpus != j.gpus) {  // moved: a fresh job on the new type, at once
      frees.push_back({Kind::kCancel, name, {"scancel", kSlurmIdArg}, j.id});
      j.phase = Phase::kDone;
    }
  }
  for (const auto& p : current) {
    auto it = state.jobs.find(p.job);
    if (it == state.jobs.end() || it->second.phase == Phase::kDone) {
      starts.push_back(submit(state, p, opt));
      continue;
    }
    SlurmJob& j = it->second;
    if (j.phase == Phase::kRunning) continue;  // renewed lease (or the same type on other GPUs: Slurm's choice)
    if (p.type == j.type && p.gpus == j.gpus) {  // back on the type it held: released from the queue
      starts.push_back({Kind::kRelease, p.job, {"scontrol", "release", kSlurmIdArg}, j.id});
      j.phase = Phase::kRunning;
      continue;
    }
    // Held, back on another type: a fresh job. (`scontrol update JobId=.. TresPerNode=gres:gpu:TYPE:N` on the held
    // job is what Slurm offers, but 22.05 keeps the old type in a requeued job's gres — added to the new one, or
    // with count 0 after clearing it first — and the job then waits while the old type is busy: seen in
    // tests/sched/slurm_live.sh.)
    starts.push_back({Kind::kCancel, p.job, {"scancel", kSlurmIdArg}, j.id});
    starts.push_back(submit(state, p, opt));
  }
  frees.insert(frees.end(), std::make_move_iterator(starts.begin()), std::make_move_iterator(starts.end()));
  return frees;
}

std::vector<SlurmAction> slurm_cancel(SlurmState& state, const std::string& job) {
  std::vector<SlurmAction> out;
  for (auto& [name, j] : state.jobs) {
    if (j.phase == Phase::kDone || (!job.empty() && name != job)) continue;
    out.push_back({Kind::kCancel, name, {"scancel", kSlurmIdArg}, j.id});
    j.phase = Phase::kDone;
  }
  return out;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("-_=:./,+").find(ch) != std::string_view::npos;
    });
    if (plain) {
      line += a;
      continue;
    }
    line += '\'';
    for (char ch : a) line += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    line += '\'';
  }
  return line;
}

std::string dry_run_line(const SlurmAction& a, const SlurmState& state) {
  auto it = state.jobs.find(a.job);
  const std::string var = fmt::format("J{}", it == state.jobs.end() ? 0 : it->second.ordinal);
  if (a.kind == Kind::kSubmit) return fmt::format("{}=$({})", var, shell_line(a.argv));
  std::string line;
  for (const auto& arg : a.argv) {
    if (!line.empty()) line += ' ';
    const auto pos = arg.find(kSlurmIdArg);
    if (pos == std::string::npos) {
      line += shell_line({arg});
      continue;
    }
    // JobId={id} → JobId="$J3"; the variable holds sbatch --parsable's "id[;cluster]".
    if (pos > 0) line += shell_line({arg.substr(0, pos)});
    line += "\"${" + var + "%%;*}\"";
  }
  return line;
}

}  // namespace strata::sched
