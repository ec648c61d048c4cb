// exec_cli/main: the `strata-exec` entry point — the executor half of the `strata` command line (run, profile
// and the hidden exec-worker), the only binary that links libtorch and Gloo. `strata` execs it for those
// sub-commands (src/cli/exec_binary.hpp), and it spawns itself for the worker ranks (/proc/self/exe). Its app is
// named "strata" so that help and errors read exactly as from `strata`.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "io.hpp"
#include "run_commands.hpp"
#include "strata/core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"strata: the executor commands (run, profile). Use them through `strata`.", "strata"};
  app.require_subcommand(1);
  strata::cli::register_exec_commands(app, strata::cli::executor_handlers());
  return strata::cli::parse_and_run(app, argc, argv);
}
