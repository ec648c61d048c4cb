// cli/main: the `strata` entry point. Registers sub-commands, runs the chosen one, and turns an InputError into
// one line on stderr and exit code 2. run, profile and exec-worker are parsed here (help, flag errors) and then
// handed to the `strata-exec` binary, so this one loads no libtorch (exec_binary.hpp).
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "commands.hpp"
#include "exec_binary.hpp"
#include "exec_commands.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace {
// An error message may quote user input (a name, a path): escape control characters and cut it to a screenful,
// so that the one-line contract holds whatever was typed.
std::string one_line(const char* what) {
  constexpr std::size_t kMaxBytes = 2000;
  std::string text = strata::core::printable(what);
  if (text.size() > kMaxBytes) text = text.substr(0, kMaxBytes) + fmt::format("... ({} bytes cut)", text.size() - kMaxBytes);
  return text;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "strata: find, explain, simulate, run and schedule the fastest way to train a model on a (heterogeneous) "
      "GPU cluster.\n\nStart with `strata models`, `strata clusters`, then `strata describe --model gpt3-175b "
      "--cluster dgx-a100:16`.",
      "strata"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every sub-command");
  strata::cli::register_catalog_commands(app);
  strata::cli::register_describe_command(app);
  strata::cli::register_estimate_commands(app);
  strata::cli::register_plan_command(app);
  strata::cli::register_simulate_command(app);
  strata::cli::ExecHandlers to_executor;
  to_executor.run = [=](const strata::cli::RunArgs&) { strata::cli::hand_over_to_executor(argc, argv, "run"); };
  to_executor.profile = [=](const strata::cli::ProfileArgs&) {
    strata::cli::hand_over_to_executor(argc, argv, "profile");
  };
  to_executor.worker = [=](const strata::cli::WorkerArgs&) {
    strata::cli::hand_over_to_executor(argc, argv, "exec-worker");
  };
  strata::cli::register_exec_commands(app, to_executor);
  strata::cli::register_sched_commands(app);
  strata::cli::register_export_command(app);
  strata::cli::register_report_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : strata::core::kInputErrorExitCode;
  } catch (const strata::core::InputError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: error: {}\n", one_line(e.what()));
    return strata::core::kInputErrorExitCode;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: internal error: {}\n", one_line(e.what()));
    return 1;
  }
  return 0;
}
