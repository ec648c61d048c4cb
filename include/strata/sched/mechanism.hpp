// sched/mechanism: Gavel's round-based mechanism (thesis §5.4, Algorithm 2). Each round, every (combination k,
// GPU type j) with X_kj > 0 gets priority X_kj / f_kj, f_kj being the fraction of rounds since the last
// re-allocation that k spent on j; combinations are taken greedily in priority order (a job at most once per
// round, only if the type still has scale_factor free GPUs); then each type's chosen combinations are placed on
// servers: lease renewals first (same GPUs as last round), then by scale factor descending, each on one server
// when one has room (best fit), otherwise spread (unconsolidated).
#pragma once
#include <vector>

#include "strata/sched/policy.hpp"

namespace strata::sched {

struct Assignment {
  int combo = 0;            // index into Allocation::combos
  int type = 0;
  std::vector<int> gpus;    // GPU indices within the type (server s holds [s·per_server, (s+1)·per_server))
  bool consolidated = true; // all on one server
  bool renewed = false;     // same type and GPUs as the previous round (lease renewal: no checkpoint/restart)
};

// Bookkeeping since the last re-allocation.
struct RoundBook {
  std::vector<std::vector<double>> received;  // [combo][type] rounds received
  double rounds = 0;                          // rounds elapsed
  void reset(std::size_t combos, std::size_t types);
};

// X per combination and physical type (columns of the same type summed). [combo][type]
std::vector<std::vector<double>> combo_type_fractions(const Problem& p, const Allocation& a);

// One round: chooses and places combinations. `active[k]` = the combination may run (all its jobs still
// running); `previous` = last round's assignments (for lease renewal). Deterministic: ties are broken by larger
// X, then lower combination index, then lower type index.
std::vector<Assignment> schedule_round(const Problem& p, const Allocation& a, const RoundBook& book,
                                       const std::vector<bool>& active, const std::vector<Assignment>& previous);

// Updates the bookkeeping after a round ran `assignments`.
void record_round(RoundBook& book, const std::vector<Assignment>& assignments);

}  // namespace strata::sched
