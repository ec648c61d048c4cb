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

// Gavel's mechanism also runs jobs whose allocation is zero (or whose turn it is not) on GPUs that are left over
// after the priority pass: its per-type queues hold every job, zero-priority ones last (scheduler.py,
// _schedule_jobs_on_workers_helper, c4fa400). strata takes one global priority queue (Gavel's
// enable_global_queue variant) and then fills the leftover GPUs with the jobs not yet placed.
struct RoundOptions {
  bool place_leftover = true;  // false: only cells with X > 0 run (strata's earlier convention)
  bool agnostic = false;       // leftover type choice: most free GPUs (agnostic) or fastest for the job (aware)
};

// One round: chooses and places combinations. `active[k]` = the combination may run (all its jobs still
// running); `previous` = last round's assignments (for lease renewal). Deterministic: ties are broken by larger
// X, then lower combination index, then lower type index.
std::vector<Assignment> schedule_round(const Problem& p, const Allocation& a, const RoundBook& book,
                                       const std::vector<bool>& active, const std::vector<Assignment>& previous,
                                       const RoundOptions& ro = {});

// Updates the bookkeeping after a round ran `assignments`.
void record_round(RoundBook& book, const std::vector<Assignment>& assignments);

}  // namespace strata::sched
