// sim/run_size: how much a simulation will play out, checked before it starts (`strata simulate` and the Python
// API's strata.simulate refuse runs of hours with the numbers).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "strata/core/error.hpp"
#include "strata/core/numbers.hpp"
#include "strata/sim/from_cost.hpp"

namespace strata::sim {

double check_simulation_size(const cost::Strategy& s, const CostSimOptions& opt) {
  const double work = static_cast<double>(s.num_devices() / std::max(1, s.tp)) * s.num_micro_batches() *
                      s.virtual_stages * (opt.iterations > 0 ? opt.iterations : default_iterations(s.schedule));
  // The event count grows with the passes played out; past 1e8 a run takes hours, so refuse with the numbers.
  if (2 * work > 1e8)
    throw core::InputError(fmt::format("simulate: {:.3g} micro-batch passes to play out (more than 1e8, hours of "
                                       "simulation); use a larger mbs, a smaller gbs or fewer --iterations",
                                       2 * work));
  return 2 * work;
}

void check_simulation_options(std::optional<int> iterations, std::optional<double> overlap_slowdown,
                              std::optional<double> bucket_mib, const std::string& bucket_text) {
  if (iterations && *iterations < 1)
    throw core::InputError(fmt::format("simulate: --iterations: must be >= 1, got {}", *iterations));
  if (overlap_slowdown && !(std::isfinite(*overlap_slowdown) && *overlap_slowdown >= 1))
    throw core::InputError(fmt::format("simulate: --overlap-slowdown: must be a finite number >= 1 (1 = no "
                                       "slowdown), got {}", *overlap_slowdown));
  constexpr core::Range r = core::limits::kBucketMib;  // the CLI flag's range (one place)
  if (bucket_mib && !(std::isfinite(*bucket_mib) && *bucket_mib >= r.lo && *bucket_mib <= r.hi))
    throw core::InputError(fmt::format("simulate: --bucket-mb: expected a size in MiB in [{:g}, {:g}], got '{}'", r.lo,
                                       r.hi, bucket_text.empty() ? fmt::format("{}", *bucket_mib) : bucket_text));
}

}  // namespace strata::sim
