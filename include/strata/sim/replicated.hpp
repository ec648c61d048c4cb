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
  bool record_ops = false;       // simulate_replicated_flush: keep every compute op (ReplicatedResult::ops)
};

// One compute op of a replica (a Gantt box): forward, backward, or its sync and step (micro = −1).
struct ReplicaOp {
  enum class Kind : std::uint8_t { forward, backward, sync };
  int stage = 0, replica = 0;
  Kind kind = Kind::forward;
  std::int64_t micro = -1;
  double start_s = 0, end_s = 0;
};

struct ReplicatedResult {
  std::vector<double> done_s;    // per micro-batch: the end of its last op (stage 0's backward or sync)
  double makespan_s = 0;
  double period_s = 0;           // steady state per micro-batch: completions (time order) up to 3/4 of the run
                                 // repeat every c micro-batches shifted by c·period (the smallest such c whose
                                 // last four shifts agree to 1e-12); else a window of whole round-robin periods
  std::vector<double> stage_busy_s;  // simulate_replicated_flush: compute + sync of a replica, mean per stage
  std::vector<ReplicaOp> ops;        // with record_ops: in start order (ties: insertion)
  std::vector<std::int64_t> stage_max_in_flight;  // flush: most micro-batches forwarded, not yet backwarded, on
                                                 // one replica of each stage (activation memory: docs/simulator.md)
};

ReplicatedResult simulate_replicated(const ReplicatedInput& in);

// One flushed iteration of the same pipeline (schedule gpipe or 1f1b; sim/replicated_flush.cpp): all
// `micro_batches` enter stage 0 at once, micro-batch k runs on replica k mod r_i of stage i. Every stage r wide
// (r dividing M): each replica runs its stage's op order of the pipeline program of M/r micro-batches
// (cost::build_program — the order cost/per_stage times and the executor runs). Unequal widths: GPipe runs every
// forward of a replica before its backwards, 1F1B runs backward first with at most ⌈Σ_{j≥i} r_j / r_i⌉ micro-batches
// in flight on a replica of stage i (PipeDream's NOAM from stage i on); a stage's `sync_s` (exposed DP sync + optimizer step) runs once, on all its replicas at once, when the
// last of them has run its last backward (the all-reduce is a collective over them), blocking them.
// makespan_s = the iteration time, period_s = 0.
ReplicatedResult simulate_replicated_flush(const ReplicatedInput& in, cost::Schedule schedule);

// PipeDream's steady-state period of the same input: max(max_i c_i / r_i, max_i 2·link_i) with c_i = max(T_i, W_i)
// (overlapping sync) or T_i + W_i (blocking), T_i = fwd + bwd.
double replicated_period_closed_form(const ReplicatedInput& in);

// The input of a complete per-stage strategy from its cost estimate (stage times, exposed sync + step per
// micro-batch blocking, half the boundary round trip per message), for the pipedream schedule.
ReplicatedInput replicated_from_estimate(const cost::Strategy& s, const cost::Estimate& e);

// A complete per-stage strategy (stages of different widths) played out for its schedule: gpipe / 1f1b one flushed
// iteration (simulate_replicated_flush); pipedream and 2bw the periodic steady state over at least 4000
// micro-batches (simulate_replicated) times the iteration's M micro-batches — 2BW with each stage's sync and step
// spread over its M/r_i micro-batches (one update per iteration: PipeDream-2BW §2, docs/cost-model.md).
struct PerStageSimulation {
  ReplicatedInput input;               // as replayed (pipedream / 2bw: micro_batches raised to the steady state)
  ReplicatedResult result;
  std::int64_t micro_batches = 0;      // M of one iteration
  double iteration_time_s = 0;         // simulated
  double estimate_iteration_time_s = 0;  // cost::estimate's pipeline_time_s (same stage times)
};
PerStageSimulation simulate_per_stage(const cost::Strategy& s, const cost::Estimate& e);

}  // namespace strata::sim
