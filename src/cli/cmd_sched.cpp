// cli/cmd_sched: placeholder registration; the owning issue replaces it with the real sub-commands.
#include "commands.hpp"

namespace strata::cli {
void register_sched_commands(CLI::App& /*app*/) {}
}  // namespace strata::cli
