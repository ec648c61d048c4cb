// cli/cmd_estimate: placeholder registration; the owning issue replaces it with the real sub-commands.
#include "commands.hpp"

namespace strata::cli {
void register_estimate_commands(CLI::App& /*app*/) {}
}  // namespace strata::cli
