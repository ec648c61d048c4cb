// sim/replicated: discrete-event replay of a pipeline whose stages have different widths (issue 14) — stage i
// on r_i replicas, micro-batch k on replica k mod r_i (PipeDream's 1F1B-RR, notes_003 §1.4), each replica one
// compute resource running backward-first 1F1B, each boundary one shared link, each replica's weight sync either
// on its own resource overlapping compute (PipeDream's partitioner model: a replica's cycle is max(T, W)) or
// blocking its compute (the cost model's exposed sync: T + W). Asynchronous (PipeDream: no flush) — the input
// stage admits `in_flight` micro-batches per replica (NOAM). Links send gradients before activations. Measures
// the steady-state period per micro-batch, which must equal PipeDream's closed form max(max_i max(T_i, W_i)/r_i, max_i e_i) (tests/sim).
#pragma once
#include <cstdint>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::sim {

struct ReplicatedStage {
  int replicas = 1;
  double fwd_s = 0, bwd_s = 0;   // one micro-batch on one replica
  double sync_s = 0;             // weight sync (+ step) after each of the replica's backwards
  bool sync_overlaps = true;     // own resource (PipeDream §3) or blocking the compute (cost/per_stage)
};

struct ReplicatedInput {
  std::vector<ReplicatedStage> stages;
  std::vector<double> link_s;    // per boundary: one message (activation or gradient) on its link
  std::int64_t micro_batches = 0;
  int in_flight = 0;             // per input-stage replica; 0 = max(PipeDream's NOAM ⌈Σ r_i / r_0⌉, 2 × Little's
                                 // law (⌈round trip / (period · r_0)⌉ + 1))
};

struct ReplicatedResult {
  std::vector<double> done_s;    // per micro-batch: the end of its last op (stage 0's backward or sync)
  double makespan_s = 0;
  double period_s = 0;           // steady state per micro-batch: completions (time order) up to 3/4 of the run
                                 // repeat every c micro-batches shifted by c·period (the smallest such c whose
                                 // last four shifts agree to 1e-12); else a window of whole round-robin periods
};

ReplicatedResult simulate_replicated(const ReplicatedInput& in);

// PipeDream's steady-state period of the same input: max(max_i c_i / r_i, max_i 2·link_i) with c_i = max(T_i, W_i)
// (overlapping sync) or T_i + W_i (blocking), T_i = fwd + bwd.
double replicated_period_closed_form(const ReplicatedInput& in);

// The input of a complete per-stage strategy from its cost estimate (stage times, exposed sync + step per
// micro-batch blocking, half the boundary round trip per message), for the pipedream schedule.
ReplicatedInput replicated_from_estimate(const cost::Strategy& s, const cost::Estimate& e);

}  // namespace strata::sim
