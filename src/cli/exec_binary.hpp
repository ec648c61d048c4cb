// cli/exec_binary: `strata` has no libtorch; its executor commands (run, profile, exec-worker, plan --trials) run
// in the sibling binary `strata-exec`, found next to /proc/self/exe (both are built into build/bin). Missing
// sibling → InputError (exit 2) naming the path it looked at.
#pragma once
#include <string>
#include <vector>

namespace strata::cli {

// <directory of /proc/self/exe>/strata-exec.
std::string exec_binary_path();
// Replaces this process by `strata-exec` with the same arguments (argv[1..]): its output and exit code are the
// command's. `command` names the sub-command in the error when the binary is missing or cannot be started.
[[noreturn]] void hand_over_to_executor(int argc, char** argv, const std::string& command);
// Runs `strata-exec args...` as a child with stdout and stderr written to the given files, waits for it and
// returns its exit code (128 + signal number when it was killed).
int run_executor(const std::vector<std::string>& args, const std::string& stdout_path, const std::string& stderr_path);

}  // namespace strata::cli
