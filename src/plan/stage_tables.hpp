// plan/stage_tables: the per-stage search's precomputed tables (private to plan/stage_search*): stage
// configurations, per configuration and layer range the stage time, DP sync + optimizer and memory fit by depth,
// and the boundary round trips per configuration pair and cut.
#pragma once
#include <cstdint>
#include <vector>

#include "strata/plan/stage_search.hpp"

namespace strata::plan {

struct StageTables {
  cost::Schedule sched = cost::Schedule::one_f_one_b;
  std::int64_t M = 1;                     // micro-batches per iteration (gbs / mbs)
  std::int64_t mbs = 1;
  int L = 0;                              // chain entries
  int D = 0;                              // most stages
  std::vector<StageConfig> cfg;
  std::vector<int> types;                 // cluster GPU types with devices (search order)
  std::vector<int> type_slot;             // cluster type → slot in `types` (−1 none)
  std::vector<int> type_count;            // per slot: devices of the type
  std::vector<int> stride;                // per slot: mixed-radix stride of the device-usage index
  int U = 1;                              // usage states Π (count + 1)
  // Per configuration, range [a, b) at a·(L+1) + b: stage time t (per micro-batch), sync (exposed DP sync +
  // optimizer per sync), fit_depth (largest d = stages from this one to the end whose memory fits; 0 = none).
  std::vector<std::vector<double>> t, sync;
  std::vector<std::vector<std::uint8_t>> fit_depth;
  // e[(from·C + to)·(L+1) + cut]: round trip across a cut between configurations `from` (before) and `to`.
  std::vector<double> e;
  int C() const { return static_cast<int>(cfg.size()); }
  std::size_t range(int a, int b) const { return static_cast<std::size_t>(a) * (L + 1) + b; }
  double boundary(int from, int to, int cut) const {
    return e[(static_cast<std::size_t>(from) * C() + to) * (L + 1) + cut];
  }
  // The stage and boundary terms of cost/per_stage's closed form, as max_i q_i + Σ_i h_i (per_stage.hpp).
  bool flush() const { return sched == cost::Schedule::gpipe || sched == cost::Schedule::one_f_one_b; }
  double stage_q(int c, int a, int b) const;
  double stage_h(int c, int a, int b) const { return flush() ? t[c][range(a, b)] : 0.0; }
  double boundary_q(double e_s) const { return flush() ? 0.0 : static_cast<double>(M) * e_s; }
  double boundary_h(double e_s) const { return flush() ? e_s : 0.0; }
};

}  // namespace strata::plan
