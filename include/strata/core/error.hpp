// core/error: the two error kinds of strata. InputError is the user's mistake (bad file, bad field, impossible
// request): the CLI prints its one-line message and exits with code 2. Everything else is a bug.
#pragma once
#include <stdexcept>
#include <string>

namespace strata::core {

// A problem with what the user gave us. The message is one line that names the file/flag, the field and the
// problem, e.g. "cluster.json: nodes[1].gpu: unknown GPU type 'V200' (valid: a100-40gb, ...)".
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Exit code of the CLI for an InputError.
inline constexpr int kInputErrorExitCode = 2;

}  // namespace strata::core
