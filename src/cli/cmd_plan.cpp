// cli/cmd_plan: placeholder registration; the owning issue replaces it with the real sub-commands.
#include "commands.hpp"

namespace strata::cli {
void register_plan_command(CLI::App& /*app*/) {}
}  // namespace strata::cli
