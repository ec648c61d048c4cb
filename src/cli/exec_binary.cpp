// cli/exec_binary: locating and starting the `strata-exec` sibling binary (see exec_binary.hpp).
#include "exec_binary.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "strata/core/error.hpp"

extern char** environ;

namespace strata::cli {
namespace {

// The one-line error of a missing or unusable executor binary.
core::InputError missing_executor(const std::string& command, const std::string& path, const std::string& why) {
  return core::InputError(fmt::format(
      "{}: the executor binary {} {} (it is built next to strata with libtorch and Gloo unless configured with "
      "-DSTRATA_WITH_EXEC=OFF; scripts/setup installs them)",
      command, path, why));
}

std::string checked_exec_binary(const std::string& command) {
  const std::string path = exec_binary_path();
  if (::access(path.c_str(), X_OK) != 0) throw missing_executor(command, path, "is missing");
  return path;
}

}  // namespace

std::string exec_binary_path() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw core::InputError("cannot resolve /proc/self/exe to find strata-exec: " + ec.message());
  return (self.parent_path() / "strata-exec").string();
}

void hand_over_to_executor(int argc, char** argv, const std::string& command) {
  const std::string path = checked_exec_binary(command);
  std::vector<char*> args{const_cast<char*>(path.c_str())};
  for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execv(path.c_str(), args.data());
  throw missing_executor(command, path, fmt::format("cannot be started: {}", std::strerror(errno)));
}

int run_executor(const std::vector<std::string>& args, const std::string& stdout_path, const std::string& stderr_path) {
  const std::string path = checked_exec_binary("plan: --trials");
  std::vector<std::string> owned{path};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&files, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, path.c_str(), &files, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) throw missing_executor("plan: --trials", path, fmt::format("cannot be started: {}", std::strerror(rc)));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw std::runtime_error(fmt::format("plan: --trials: waitpid: {}", std::strerror(errno)));
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace strata::cli
