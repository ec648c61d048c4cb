// plan/pipedream: PipeDream's partitioner (notes_003 §1.3, PipeDream §3.1; one topology level) on its own
// profile model — per layer the forward+backward time T_l, output activation a_l and weights w_l, one bandwidth
// B between workers — choosing the layer split AND each stage's replication r_i over N workers:
//   T(i→j, m) = (1/m)·max(Σ_{l=i..j} T_l, 2(m−1)·Σ_{l=i..j} w_l / B)               (replicated stage)
//   A(j, m)   = min( T(0→j, m), min_{s<j, 1≤m'<m} max(A(s, m−m'), 2·a_s/B, T(s+1→j, m')) )
// (the single replicated stage as a candidate, [INF] in the notes). The steady-state period per micro-batch is
// A(N_layers−1, N); the per-stage planner (plan/stage_search) generalises it to GPU types and tensor parallelism.
#pragma once
#include <vector>

namespace strata::plan {

struct PipeDreamProfile {
  std::vector<double> time_s;        // T_l: forward + backward of one micro-batch on one worker
  std::vector<double> output_bytes;  // a_l: activation sent to the next layer (its gradient comes back)
  std::vector<double> weight_bytes;  // w_l
  double bw_bytes_per_s = 1;         // B
  int workers = 1;                   // N (all used)
};

struct PipeDreamStage {
  int first = 0, last = 0;           // layers first..last
  int replicas = 1;
  bool operator==(const PipeDreamStage&) const = default;
};

struct PipeDreamPlan {
  std::vector<PipeDreamStage> stages;
  double period_s = 0;               // max over stages T(i→j, r) and cuts 2·a/B
};

// T(i→j, m).
double pipedream_stage_time(const PipeDreamProfile& p, int first, int last, int replicas);
// The dynamic program above (ties: fewer stages first, then the earliest cut, then the fewest replicas last).
PipeDreamPlan pipedream_partition(const PipeDreamProfile& p);
// Every split and every replica vector summing to N (tests).
PipeDreamPlan pipedream_brute_force(const PipeDreamProfile& p);
// The period of a given plan.
double pipedream_period(const PipeDreamProfile& p, const std::vector<PipeDreamStage>& stages);

}  // namespace strata::plan
