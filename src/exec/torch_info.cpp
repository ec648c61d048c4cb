// exec/torch_info: libtorch version string (proves the executor links libtorch).
#include "strata/exec/torch_info.hpp"

#include <torch/version.h>

namespace strata::exec {
std::string torch_version() { return TORCH_VERSION; }
}  // namespace strata::exec
