// exec_cli/main: the `strata-exec` entry point — the executor half of the `strata` command line (run, profile
// and the hidden exec-worker), the only binary that links libtorch and Gloo. `strata` execs it for those
// sub-commands (src/cli/exec_binary.hpp), and it spawns itself for the worker ranks (/proc/self/exe). Its app is
// named "strata" so that help and errors read exactly as from `strata`.
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "run_commands.hpp"
#include "strata/core/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"strata: the executor commands (run, profile). Use them through `strata`.", "strata"};
  app.require_subcommand(1);
  strata::cli::register_exec_commands(app, strata::cli::executor_handlers());
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : strata::core::kInputErrorExitCode;
  } catch (const strata::core::InputError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: error: {}\n", e.what());
    return strata::core::kInputErrorExitCode;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: internal error: {}\n", e.what());
    return 1;
  }
  return 0;
}
