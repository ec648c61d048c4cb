// cli/commands: each file cmd_*.cpp registers its sub-commands on the root CLI11 app. The CLI stays thin:
// parse flags, call the library, print a table or JSON. run/profile/exec-worker: exec_commands.hpp.
#pragma once
#include <CLI/CLI.hpp>

namespace strata::cli {

void register_catalog_commands(CLI::App& app);   // models, hardware, clusters        (cmd_catalog.cpp)
void register_describe_command(CLI::App& app);   // describe                          (cmd_describe.cpp)
void register_estimate_commands(CLI::App& app);  // estimate, validate                (cmd_estimate.cpp)
void register_plan_command(CLI::App& app);       // plan                              (cmd_plan.cpp)
void register_simulate_command(CLI::App& app);   // simulate                          (cmd_simulate.cpp)
void register_sched_commands(CLI::App& app);     // allocate, schedule                (cmd_sched.cpp)

}  // namespace strata::cli
