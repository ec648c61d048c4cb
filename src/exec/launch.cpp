// exec/launch: local process spawning and supervision for `strata run` / `strata profile`, plus run_local (write
// the worker config, spawn dp·tp·pp workers, read rank 0's record). No torch in this file.
#include "launch.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/exec/run.hpp"

extern char** environ;

namespace strata::exec {
namespace detail {

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw ExecError("cannot resolve /proc/self/exe: " + ec.message());
  return p.string();
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/strata-exec-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw ExecError(fmt::format("cannot create a temporary directory {}: {}", tmpl, std::strerror(errno)));
  path = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw ExecError(fmt::format("socket(): {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    throw ExecError("cannot find a free local port: " + err);
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

namespace {

struct Child {
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  bool killed_by_launcher = false;
};

std::string describe(int rank, const Child& c) {
  if (c.killed_by_launcher)
    return fmt::format("rank {} did not exit within the grace period after the failure and was killed", rank);
  if (WIFSIGNALED(c.status))
    return fmt::format("rank {} was killed by signal {} ({})", rank, WTERMSIG(c.status), strsignal(WTERMSIG(c.status)));
  if (WIFEXITED(c.status)) return fmt::format("rank {} exited with status {}", rank, WEXITSTATUS(c.status));
  return fmt::format("rank {} ended abnormally", rank);
}

bool failed(const Child& c) { return !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) || c.killed_by_launcher; }

// Everything exec needs, built before fork (the child of a multi-threaded parent may only call async-signal-safe
// functions until exec).
struct ExecImage {
  std::vector<std::string> argv_s, env_s;
  std::vector<char*> argv, env;
  void freeze() {
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_s) env.push_back(e.data());
    env.push_back(nullptr);
  }
};

ExecImage make_image(const std::string& exe, const std::vector<std::string>& args, int rank, int world, int port) {
  ExecImage im;
  im.argv_s.push_back(exe);
  im.argv_s.insert(im.argv_s.end(), args.begin(), args.end());
  static const char* overridden[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=",
                                     "MASTER_PORT=", "STRATA_EXEC_LOOPBACK="};
  for (char** e = environ; e && *e; ++e) {
    bool skip = false;
    for (const char* o : overridden) skip = skip || std::strncmp(*e, o, std::strlen(o)) == 0;
    if (!skip) im.env_s.emplace_back(*e);
  }
  im.env_s.push_back(fmt::format("RANK={}", rank));
  im.env_s.push_back(fmt::format("WORLD_SIZE={}", world));
  im.env_s.push_back(fmt::format("LOCAL_RANK={}", rank));
  im.env_s.push_back(fmt::format("LOCAL_WORLD_SIZE={}", world));
  im.env_s.push_back("MASTER_ADDR=127.0.0.1");
  im.env_s.push_back(fmt::format("MASTER_PORT={}", port));
  im.env_s.push_back("STRATA_EXEC_LOOPBACK=1");
  im.freeze();
  return im;
}

}  // namespace

void spawn_and_wait(const std::string& exe, const std::vector<std::string>& args, int world, double grace_s,
                    const std::string& what) {
  const int port = free_local_port();
  std::vector<ExecImage> images;
  for (int r = 0; r < world; ++r) images.push_back(make_image(exe, args, r, world, port));
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  std::vector<Child> kids(world);
  for (int r = 0; r < world; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (int k = 0; k < r; ++k) ::kill(kids[k].pid, SIGKILL);
      for (int k = 0; k < r; ++k) ::waitpid(kids[k].pid, nullptr, 0);
      throw ExecError(fmt::format("{}: fork failed: {}", what, std::strerror(errno)));
    }
    if (pid == 0) {
      // Die with the launcher, so that killing `strata run` never leaves orphans behind.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(126);
      ::execve(images[r].argv[0], images[r].argv.data(), images[r].env.data());
      static const char msg[] = "strata: exec of the worker binary failed\n";
      [[maybe_unused]] auto n = ::write(2, msg, sizeof(msg) - 1);
      ::_exit(127);
    }
    kids[r].pid = pid;
    kids[r].running = true;
  }
  using clock = std::chrono::steady_clock;
  std::optional<clock::time_point> first_failure;
  int first_failed_rank = -1;
  for (;;) {
    int running = 0;
    for (int r = 0; r < world; ++r) {
      auto& c = kids[r];
      if (!c.running) continue;
      const pid_t got = ::waitpid(c.pid, &c.status, WNOHANG);
      if (got == c.pid) {
        c.running = false;
        if (failed(c) && !first_failure) {
          first_failure = clock::now();
          first_failed_rank = r;
        }
      } else {
        ++running;
      }
    }
    if (running == 0) break;
    if (first_failure && clock::now() - *first_failure > std::chrono::duration<double>(grace_s)) {
      for (auto& c : kids)
        if (c.running) {
          ::kill(c.pid, SIGKILL);
          ::waitpid(c.pid, &c.status, 0);
          c.running = false;
          c.killed_by_launcher = true;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (first_failed_rank < 0) return;
  std::string msg = fmt::format("{} failed: {}", what, describe(first_failed_rank, kids[first_failed_rank]));
  for (int r = 0; r < world; ++r)
    if (r != first_failed_rank && failed(kids[r])) msg += "; " + describe(r, kids[r]);
  throw ExecError(msg);
}

}  // namespace detail

RunRecord run_local(const RunOptions& o) {
  const int world = cost::devices_used(o.strategy);
  if (world < 1) throw ExecError("run_local: the strategy is not complete (dp·tp·pp < 1)");
  check_host_memory(o, world);  // all ranks run on this host: refuse before any of them allocates
  detail::TempDir dir;
  const std::string config = dir.path + "/config.json";
  const std::string result = dir.path + "/record.json";
  {
    std::ofstream f(config);
    f << to_json(o).dump(2);
    if (!f) throw ExecError("cannot write " + config);
  }
  const std::string exe = o.worker_exe.empty() ? detail::self_exe() : o.worker_exe;
  detail::spawn_and_wait(exe, {"exec-worker", "--config", config, "--result", result}, world, o.timeout_s + 2.0,
                         fmt::format("run of {} on {} local processes", o.model.name, world));
  return run_record_from_json(core::load_json_file(result), result);
}

DistEnv dist_env_from_environment() {
  DistEnv e;
  const auto get = [](const char* k) -> std::string {
    const char* v = std::getenv(k);
    return v ? v : "";
  };
  const std::string rank = get("RANK"), world = get("WORLD_SIZE");
  if (rank.empty() || world.empty()) {
    e.world_size = 0;
    return e;
  }
  try {
    e.rank = std::stoi(rank);
    e.world_size = std::stoi(world);
    e.local_rank = get("LOCAL_RANK").empty() ? e.rank : std::stoi(get("LOCAL_RANK"));
    e.local_world_size = get("LOCAL_WORLD_SIZE").empty() ? 1 : std::stoi(get("LOCAL_WORLD_SIZE"));
    e.master_port = get("MASTER_PORT").empty() ? 29500 : std::stoi(get("MASTER_PORT"));
  } catch (const std::exception&) {
    throw core::InputError(
        "environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE and MASTER_PORT must be integers");
  }
  if (!get("MASTER_ADDR").empty()) e.master_addr = get("MASTER_ADDR");
  e.loopback = get("STRATA_EXEC_LOOPBACK") == "1";
  if (e.world_size < 1 || e.rank < 0 || e.rank >= e.world_size)
    throw core::InputError(fmt::format("environment: RANK {} is not in 0..WORLD_SIZE-1 ({})", e.rank, e.world_size));
  return e;
}

}  // namespace strata::exec
