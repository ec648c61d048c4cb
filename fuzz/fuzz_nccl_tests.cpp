// fuzz_nccl_tests: parse_nccl_tests (nccl-tests text output, the measured-network input) on arbitrary bytes must
// either succeed or throw InputError (never crash, hang or throw anything else); a parsed run is then fitted,
// and the fit must be finite and non-negative.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "strata/core/error.hpp"
#include "strata/cost/nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto run = cost::parse_nccl_tests(text, "fuzz.txt", "all_reduce_perf");
    const auto fit = cost::fit_nccl_tests(run);
    if (!(std::isfinite(fit.alpha_s) && std::isfinite(fit.beta_s_per_byte) && fit.alpha_s >= 0 &&
          fit.beta_s_per_byte >= 0))
      std::abort();
  } catch (const core::InputError&) {
  }
  return 0;
}
