// exec/torch_info: which libtorch/c10d the executor was built against (printed by `strata run --version`).
#pragma once
#include <string>

namespace strata::exec {
std::string torch_version();
}  // namespace strata::exec
