// cost/per_stage: the cost model of per-stage strategies (issue 14) — every stage its own GPU type, dp_i, tp_i
// and layers, devices possibly left idle. Stage times, memory and DP sync come from the same building blocks as
// the uniform form (cost/stage: make_stage_context, sum_stage_layers, stage_memory, dp_sync_exposed_time,
// optimizer_step_time) evaluated on a stage-local view of the strategy (dp_i, tp_i); the boundaries are the
// many-to-many transfers of cost/reshard; the schedules' closed forms for unequal widths are below
// (docs/cost-model.md §Per-stage strategies).
#pragma once
#include <cstdint>
#include <span>

#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"

namespace strata::cost {

// Micro-batches: the pipeline carries M = gbs/mbs per iteration, dealt round-robin (micro-batch k on replica
// k mod r_i of stage i), so each replica of stage i runs m_i = M/r_i (docs/strategy.md). With t_i the stage time
// per micro-batch, e_i the boundary round trip after stage i (size p−1) and sync_i the stage's exposed DP sync +
// optimizer step, an iteration takes
//   gpipe, 1f1b:  Σ t_i + Σ e_i + max_i [(m_i − 1)·t_i + sync_i]
//                 (fill and drain Σ t + Σ e, plus the busiest replica's other m_i − 1 micro-batches and its sync;
//                  AMP eq. 5's (m−1)·max t with per-stage replica counts)
//   pipedream:    M · max( max_i (t_i + sync_i)/r_i , max_i e_i )
//                 (PipeDream §3 (notes_003 §1.3): steady state max_i T_i/r_i, one sync + step per micro-batch and
//                  replica as the uniform form's vanilla PipeDream)
//   2bw:          max( max_i [m_i·t_i + sync_i] , M·max_i e_i )
//                 (each stage's cycle per batch: its m_i micro-batches, then its one update; PipeDream-2BW §2)
// Every one is max_i q_i + Σ_i h_i over stages and boundaries (what plan/stage_search minimises exactly); for
// gpipe / 1f1b estimate_per_stage charges per_stage_timing below, which places each stage's sync at its own end.
// `replicas` r_i, `t`, `sync` size p; `e` size p − 1. interleaved is not a per-stage schedule (InputError).
double per_stage_iteration_time(Schedule sched, std::int64_t total_micro, std::span<const int> replicas,
                                std::span<const double> t, std::span<const double> e, std::span<const double> sync);
// The same without the DP sync and optimizer (sync = 0): the pipeline part.
double per_stage_pipeline_time(Schedule sched, std::int64_t total_micro, std::span<const int> replicas,
                               std::span<const double> t, std::span<const double> e);

// The iteration estimate_per_stage charges (docs/cost-model.md §Per-stage strategies). gpipe / 1f1b with every stage
// as wide (r_i = r): the pipeline program (cost/program) of one of the r independent replica pipelines of M/r
// micro-batches, timed by time_program with each stage's sync + step as its optimizer op — the order and the
// critical path the simulator replays, so a stage's sync starts at its own last backward while the stages before
// it still drain (the closed form above adds the largest sync after the whole drain: 7 % too slow on the AMP
// cluster's --per-stage plan). gpipe / 1f1b with unequal widths: the closed form's pipeline, each stage's sync
// starting at the end of its last backward, D_j = Σ_{k<j} (b_k + e_k/2) before stage 0's. pipedream / 2bw: the
// closed forms above (plan/stage_search minimises those for every schedule).
struct StageTimes {
  Schedule schedule = Schedule::one_f_one_b;
  std::int64_t total_micro = 1;        // M
  std::span<const int> replicas;       // r_i
  std::span<const double> fwd, bwd;    // per micro-batch on one replica (t_i = fwd_i + bwd_i)
  std::span<const double> e;           // boundary round trips (size p − 1)
  std::span<const double> sync;        // exposed DP sync + optimizer step per stage
};
struct PerStageTiming {
  double pipeline_s = 0;   // without the syncs and steps
  double iteration_s = 0;  // with them
};
PerStageTiming per_stage_timing(const StageTimes& x);

// The stage-local view of a complete per-stage strategy: a uniform strategy with dp = dp_i, tp = tp_i, pp = p and
// split = the stages' layers, so that make_stage_context / sum_stage_layers / stage_memory cost stage `stage`
// with its own widths (m = gbs/(dp_i·mbs) = m_i).
Strategy stage_local_strategy(const Strategy& s, int stage);

// estimate() of a complete per-stage strategy (no per-layer choices: issues 16/17). estimate() calls it.
Estimate estimate_per_stage(const model::Model& m, const hw::Cluster& c, const Strategy& s, const CostOptions& opt);

}  // namespace strata::cost
