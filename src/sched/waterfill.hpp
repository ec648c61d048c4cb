// sched/waterfill (private): max-min fairness (LAS) and hierarchical multi-entity fairness by water-filling with
// the bottleneck MILP (thesis §5.3, "Hierarchical"; Gavel's max_min_fairness_water_filling).
#pragma once
#include "strata/sched/policy.hpp"

namespace strata::sched::detail {

Allocation max_min_fairness(const Problem& p, const PolicyOptions& opt);
Allocation hierarchical(const Problem& p, const PolicyOptions& opt);

}  // namespace strata::sched::detail
