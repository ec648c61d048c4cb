// sched/slurm_live: the Slurm back-end against a live cluster — runs each round's actions through Slurm's own
// commands at wall-clock round boundaries, cancels jobs the model finishes mid-round, reads squeue back.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "strata/core/error.hpp"
#include "strata/sched/slurm.hpp"

extern char** environ;

namespace strata::sched {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Reads both pipes until they close or the deadline passes. False on timeout.
bool drain(int out_fd, int err_fd, CommandResult& r, Clock::time_point deadline) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR) return false;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  return true;
}

void sleep_until_offset(const SlurmLive& live, double sim_s) {
  const auto target = live.wall_origin + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(sim_s - live.sim_origin_s));
  std::this_thread::sleep_until(target);
}

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

// The last non-empty line of a command's stderr (Slurm's fatal error comes last), for a one-line message.
std::string last_line(const std::string& text) {
  const std::string t = trim(text);
  if (t.empty()) return "no message";
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// Runs one action, substituting the job's Slurm id; a submission records the new id.
void run_action(SlurmLive& live, const SlurmAction& a) {
  SlurmJob& job = live.state.jobs[a.job];
  std::vector<std::string> argv;
  for (const auto& arg : a.argv) {
    const auto pos = arg.find(kSlurmIdArg);
    argv.push_back(pos == std::string::npos ? arg : arg.substr(0, pos) + a.id);
  }
  if (live.log) *live.log << fmt::format("# +{:.2f} s\n{}\n", seconds_since(live.wall_origin), shell_line(argv));
  const CommandResult r = run_command(argv, live.command_timeout_s);
  if (r.exit_code != 0)
    throw core::InputError(fmt::format("--backend slurm: `{}` {}: {}", shell_line(argv),
                                       r.timed_out ? fmt::format("timed out after {} s", live.command_timeout_s)
                                                   : fmt::format("failed (exit {})", r.exit_code),
                                       last_line(r.err)));
  if (a.kind == SlurmAction::Kind::kSubmit) {
    job.id = trim(r.out.substr(0, r.out.find(';')));  // --parsable: "id[;cluster]"
    if (job.id.empty() || job.id.find_first_not_of("0123456789") != std::string::npos)
      throw core::InputError(fmt::format("--backend slurm: sbatch printed no job id for '{}': '{}'", a.job, trim(r.out)));
    if (live.log) *live.log << fmt::format("# job {} = Slurm job {}\n", a.job, job.id);
  }
}

// Reads squeue back until every placed job runs (at most half a round, 30 s); warns about the others.
void await_running(SlurmLive& live, const std::vector<RoundPlacement>& placed) {
  std::map<std::string, std::string> id_to_job;
  std::string ids;
  for (const auto& p : placed) {
    const std::string& id = live.state.jobs[p.job].id;
    id_to_job[id] = p.job;
    ids += (ids.empty() ? "" : ",") + id;
  }
  if (ids.empty()) return;
  const double limit_s = std::min(30.0, live.round_s / 2);
  const auto t0 = Clock::now();
  std::map<std::string, std::string> state;
  while (true) {
    const CommandResult r =
        run_command({"squeue", "--noheader", "--format=%i %T %r", "--jobs=" + ids}, live.command_timeout_s);
    state.clear();
    std::size_t pos = 0;
    while (pos < r.out.size()) {
      const auto eol = r.out.find('\n', pos);
      const std::string line = r.out.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
      pos = eol == std::string::npos ? r.out.size() : eol + 1;
      const auto sp = line.find(' ');
      if (sp != std::string::npos) state[line.substr(0, sp)] = trim(line.substr(sp + 1));
    }
    const bool all = std::all_of(id_to_job.begin(), id_to_job.end(),
                                 [&](const auto& kv) { return state[kv.first].rfind("RUNNING", 0) == 0; });
    if (all) return;
    if (seconds_since(t0) >= limit_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  for (const auto& [id, job] : id_to_job)
    if (state[id].rfind("RUNNING", 0) != 0)
      fmt::print(stderr, "strata: warning: slurm: job '{}' (Slurm job {}) is not running {:.1f} s into its round: {}\n",
                 job, id, limit_s, state[id].empty() ? "not in squeue" : state[id]);
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return r;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]), ::close(out[1]);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(out[1]), ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]), ::close(err[0]);
    r.err = fmt::format("cannot run {}: {}", argv[0], std::strerror(rc));
    return r;
  }
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  if (!drain(out[0], err[0], r, deadline)) {
    ::kill(pid, SIGKILL);
    r.timed_out = true;
  }
  ::close(out[0]), ::close(err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!r.timed_out) r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void slurm_live_round(SlurmLive& live, double now_s, const std::vector<RoundPlacement>& placed) {
  if (!live.started) {
    live.started = true;
    live.sim_origin_s = now_s;
    live.wall_origin = Clock::now();
  }
  sleep_until_offset(live, now_s);  // an idle cluster waits in real time for the next arrival
  live.last_round_s = now_s;
  if (live.log) {
    std::string text = fmt::format("# round at {:.0f} s, placed:", now_s);
    for (const auto& p : placed) text += fmt::format(" {}={}:{}", p.job, p.type, p.gpus);
    *live.log << text << "\n";
  }
  for (const auto& a : slurm_round_actions(live.state, placed, live.options)) run_action(live, a);
  await_running(live, placed);
  if (now_s == live.sim_origin_s) live.wall_origin = Clock::now();  // the first round starts once its jobs run
  // Jobs the model finishes inside this round: cancelled when it says they are done.
  std::vector<const RoundPlacement*> ending;
  for (const auto& p : placed)
    if (p.end_s >= 0) ending.push_back(&p);
  std::stable_sort(ending.begin(), ending.end(), [](auto* a, auto* b) { return a->end_s < b->end_s; });
  for (const auto* p : ending) {
    sleep_until_offset(live, now_s + p->end_s);
    for (const auto& a : slurm_cancel(live.state, p->job)) run_action(live, a);
  }
}

void slurm_live_finish(SlurmLive& live) {
  if (!live.started) return;
  auto actions = slurm_cancel(live.state);
  if (actions.empty()) return;
  sleep_until_offset(live, live.last_round_s + live.round_s);
  for (const auto& a : actions) run_action(live, a);
}

}  // namespace strata::sched
