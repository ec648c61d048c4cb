// cli/cmd_catalog: placeholder registration; the owning issue replaces it with the real sub-commands.
#include "commands.hpp"

namespace strata::cli {
void register_catalog_commands(CLI::App& /*app*/) {}
}  // namespace strata::cli
