// exec_cli/run_commands: the executor's actions for the run/profile/exec-worker flags of src/cli/cmd_exec.cpp.
#pragma once
#include "exec_commands.hpp"

namespace strata::cli {

// run → exec::run_local (or one rank under torchrun), profile → exec::run_profile, exec-worker → the worker mains.
ExecHandlers executor_handlers();

}  // namespace strata::cli
