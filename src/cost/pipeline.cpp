// cost/pipeline: iteration time of a pipeline per schedule (AMP eq. 5 generalised), bubble fractions and the
// number of micro-batches / weight versions each stage holds (Narayanan et al. 2021; Korthikanti et al. 2022
// §4.2.3; PipeDream / PipeDream-2BW, notes_003).
#include <algorithm>
#include <numeric>

#include "strata/cost/stage.hpp"

namespace strata::cost {

double pipeline_iteration_time(Schedule sched, std::int64_t m, int v, std::span<const double> t,
                               std::span<const double> e) {
  if (t.empty() || m <= 0) return 0;
  const double tmax = *std::max_element(t.begin(), t.end());
  const double tsum = std::accumulate(t.begin(), t.end(), 0.0);
  const double esum = std::accumulate(e.begin(), e.end(), 0.0);
  const double md = static_cast<double>(m);
  switch (sched) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b:
      // AMP eq. 5: (m−1)·max t + Σ t + Σ e.
      return (md - 1) * tmax + tsum + esum;
    case Schedule::interleaved: {
      // Each stage's work is split into v chunks, so the fill/drain passes chunks of t/v:
      // m·max t + (Σ t − max t)/v + Σ e; uniform stages give (m·v + p − 1)·t/v.
      const double vd = std::max(1, v);
      return md * tmax + (tsum - tmax) / vd + esum;
    }
    case Schedule::pipedream:
    case Schedule::two_bw: {
      // Asynchronous steady state: one micro-batch completes per slowest stage (or slowest link) time.
      const double emax = e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
      return md * std::max(tmax, emax);
    }
  }
  return 0;
}

double bubble_fraction(Schedule sched, int p, std::int64_t m, int v) {
  if (m <= 0 || p <= 1) return 0;
  const double md = static_cast<double>(m);
  switch (sched) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b: return (p - 1) / md;
    case Schedule::interleaved: return (p - 1) / (std::max(1, v) * md);
    case Schedule::pipedream:
    case Schedule::two_bw: return 0;
  }
  return 0;
}

double in_flight_micro_batches(Schedule sched, int p, int stage, std::int64_t m, int v) {
  const double md = static_cast<double>(std::max<std::int64_t>(m, 1));
  const double ahead = static_cast<double>(std::max(p - stage, 1));
  switch (sched) {
    case Schedule::gpipe: return md;
    case Schedule::one_f_one_b:
    case Schedule::pipedream:
    case Schedule::two_bw: return std::min(ahead, md);
    case Schedule::interleaved: {
      if (v <= 1) return std::min(ahead, md);  // one chunk per stage: plain 1F1B
      // Megatron's interleaved warm-up: 2(p − r − 1) + (v − 1)·p forward chunks, plus the one in flight;
      // each chunk holds 1/v of the stage's activations.
      const double vd = std::max(1, v);
      const double chunks = 2.0 * (p - stage - 1) + (vd - 1) * p + 1;
      return std::min(md * vd, chunks) / vd;
    }
  }
  return 1;
}

int weight_versions(Schedule sched, int p, int stage) {
  switch (sched) {
    case Schedule::pipedream: return std::max(p - stage, 1);
    case Schedule::two_bw: return 2;
    default: return 1;
  }
}

}  // namespace strata::cost
