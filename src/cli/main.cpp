// cli/main: the `strata` entry point. Registers sub-commands, runs the chosen one, and turns an InputError into
// one line on stderr and exit code 2. run, profile and exec-worker are parsed here (help, flag errors) and then
// handed to the `strata-exec` binary, so this one loads no libtorch (exec_binary.hpp).
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "commands.hpp"
#include "io.hpp"
#include "exec_binary.hpp"
#include "exec_commands.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace {
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
  strata::cli::register_sbp_command(app);
  return strata::cli::parse_and_run(app, argc, argv);
}
