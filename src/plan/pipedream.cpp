// plan/pipedream: PipeDream's partitioner and its brute-force reference (pipedream.hpp; notes_003 §1.3).
#include "strata/plan/pipedream.hpp"

#include <algorithm>
#include <functional>
#include <limits>

#include "strata/core/units.hpp"

namespace strata::plan {
namespace {
using core::kInf;
}

double pipedream_stage_time(const PipeDreamProfile& p, int first, int last, int replicas) {
  double t = 0, w = 0;
  for (int l = first; l <= last; ++l) t += p.time_s[l], w += p.weight_bytes[l];
  // PipeDream §3.1: compute overlaps the data-parallel weight sync of the m replicas; per input divide by m.
  return std::max(t, 2.0 * (replicas - 1) * w / p.bw_bytes_per_s) / replicas;
}

double pipedream_period(const PipeDreamProfile& p, const std::vector<PipeDreamStage>& stages) {
  double worst = 0;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    worst = std::max(worst, pipedream_stage_time(p, stages[i].first, stages[i].last, stages[i].replicas));
    if (i + 1 < stages.size()) worst = std::max(worst, 2.0 * p.output_bytes[stages[i].last] / p.bw_bytes_per_s);
  }
  return worst;
}

PipeDreamPlan pipedream_partition(const PipeDreamProfile& p) {
  const int L = static_cast<int>(p.time_s.size()), N = p.workers;
  // A[j][m] over layers 0..j with exactly m workers; choice = (cut s, m') or s = −1 (one replicated stage).
  std::vector<std::vector<double>> A(L, std::vector<double>(N + 1, kInf));
  std::vector<std::vector<std::pair<int, int>>> choice(L, std::vector<std::pair<int, int>>(N + 1, {-1, 0}));
  for (int j = 0; j < L; ++j)
    for (int m = 1; m <= N; ++m) {
      A[j][m] = pipedream_stage_time(p, 0, j, m);
      choice[j][m] = {-1, m};
      for (int s = 0; s < j; ++s)
        for (int m2 = 1; m2 < m; ++m2) {
          const double v = std::max({A[s][m - m2], 2.0 * p.output_bytes[s] / p.bw_bytes_per_s,
                                     pipedream_stage_time(p, s + 1, j, m2)});
          if (v < A[j][m]) A[j][m] = v, choice[j][m] = {s, m2};
        }
    }
  PipeDreamPlan plan;
  plan.period_s = A[L - 1][N];
  int j = L - 1, m = N;
  while (j >= 0) {
    const auto [s, m2] = choice[j][m];
    plan.stages.push_back({s + 1, j, m2});
    if (s < 0) break;
    j = s;
    m -= m2;
  }
  std::reverse(plan.stages.begin(), plan.stages.end());
  return plan;
}

PipeDreamPlan pipedream_brute_force(const PipeDreamProfile& p) {
  const int L = static_cast<int>(p.time_s.size());
  PipeDreamPlan best;
  best.period_s = kInf;
  std::vector<PipeDreamStage> cur;
  std::function<void(int, int)> rec = [&](int first, int left) {
    if (first == L) {
      if (left != 0) return;
      const double v = pipedream_period(p, cur);
      if (v < best.period_s) best.period_s = v, best.stages = cur;
      return;
    }
    for (int last = first; last < L; ++last)
      for (int r = 1; r <= left; ++r) {
        cur.push_back({first, last, r});
        rec(last + 1, left - r);
        cur.pop_back();
      }
  };
  rec(0, p.workers);
  return best;
}

}  // namespace strata::plan
