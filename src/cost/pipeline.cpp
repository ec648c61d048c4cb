// cost/pipeline: iteration time of a pipeline per schedule (AMP eq. 5 generalised), bubble fractions and the
// number of micro-batches / weight versions each stage holds (Narayanan et al. 2021; Korthikanti et al. 2022
// §4.2.3; PipeDream / PipeDream-2BW, notes_003).
#include <algorithm>
#include <numeric>

#include "strata/cost/stage.hpp"

namespace strata::cost {

double one_f_one_b_period(std::span<const double> t, std::span<const double> e, std::int64_t m) {
  const int p = static_cast<int>(t.size());
  if (p == 0) return 0;
  // Longest cycle: window [i, j] of L = j − i + 1 stages; it needs micro-batch k + L to exist, so L ≤ m − 1.
  const int max_len = static_cast<int>(std::min<std::int64_t>(p, std::max<std::int64_t>(m - 1, 1)));
  double period = 0;
  for (int i = 0; i < p; ++i) {
    double sum = 0;
    const int end = std::min(p, i + max_len);
    for (int j = i; j < end; ++j) {
      sum += t[j];
      if (j > i) sum += j - 1 < static_cast<int>(e.size()) ? e[j - 1] : 0.0;
      // sum / L > period  ⇔  sum > period·L (no division in the inner loop).
      if (sum > period * (j - i + 1)) period = sum / (j - i + 1);
    }
  }
  return period;
}

double pipeline_iteration_time(Schedule sched, std::int64_t m, int v, std::span<const double> t,
                               std::span<const double> e) {
  // The separable form the planner's split DP minimises (weight_max·max t + weight_sum·(Σ t + Σ e)).
  if (t.empty() || m <= 0) return 0;
  const double tmax = *std::max_element(t.begin(), t.end());
  const double tsum = std::accumulate(t.begin(), t.end(), 0.0);
  const double esum = std::accumulate(e.begin(), e.end(), 0.0);
  const double md = static_cast<double>(m);
  switch (sched) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b: return (md - 1) * tmax + tsum + esum;  // AMP eq. 5
    case Schedule::interleaved: return md * tmax + (tsum - tmax) / std::max(1, v) + esum;
    case Schedule::pipedream:
    case Schedule::two_bw: {
      const double emax = e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
      return md * std::max(tmax, emax);
    }
  }
  return 0;
}

double pipeline_time(Schedule sched, std::int64_t m, int v, std::span<const double> t, std::span<const double> e) {
  if (t.empty() || m <= 0) return 0;
  const int p = static_cast<int>(t.size());
  const double tmax = *std::max_element(t.begin(), t.end());
  const double tsum = std::accumulate(t.begin(), t.end(), 0.0);
  const double esum = std::accumulate(e.begin(), e.end(), 0.0);
  const double emax = e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
  const double md = static_cast<double>(m);
  switch (sched) {
    case Schedule::gpipe:
      // AMP eq. 5, (m−1)·max t + Σ t + Σ e, with the link as a possible bottleneck: all forwards then all
      // backwards, each a flow shop whose period is the slowest stage or the slowest link direction.
      return (md - 1) * std::max(tmax, emax) + tsum + esum;
    case Schedule::one_f_one_b:
      // 1F1B with communication: the steady state runs at the 1F1B cycle period P ≥ max t (round trips are not
      // hidden: see one_f_one_b_period); fill + drain is the first micro-batch's round trip Σ t + Σ e.
      return (md - 1) * one_f_one_b_period(t, e, m) + tsum + esum;
    case Schedule::interleaved: {
      // Each stage's work is split into v chunks, so the fill/drain passes chunks of t/v: m·max t + (Σ t − max t)/v,
      // uniform (m·v + p − 1)·t/v. The first micro-batch crosses v·p − 1 links (v·(p−1) inside the pipeline + v − 1
      // wrap-around links p−1 → 0, costed at the slowest link). In the steady state the ring of p stages holds
      // about 2p − 1 micro-batches (Megatron's warm-up 2(p−r−1) + (v−1)p chunks), so by Little's law the period is
      // at least the micro-batch's latency over them; beyond the first group of p micro-batches it is exposed.
      const double vd = std::max(1, v);
      if (v <= 1) return (md - 1) * one_f_one_b_period(t, e, m) + tsum + esum;
      const double links = vd * esum + (p > 1 ? (vd - 1) * emax : 0.0);
      const double latency = tsum + links;
      const double ring_period = p > 1 ? latency / (2.0 * p - 1.0) : tmax;
      const double extra = std::max(0.0, md - p) * std::max(0.0, ring_period - tmax);
      return md * tmax + (tsum - tmax) / vd + links + extra;
    }
    case Schedule::pipedream:
    case Schedule::two_bw:
      // Asynchronous steady state: one micro-batch completes per slowest stage (or slowest link) time.
      return md * std::max(tmax, emax);
  }
  return 0;
}

double iteration_time(Schedule sched, std::int64_t m, int v, std::span<const double> t, std::span<const double> e,
                      std::span<const double> sync) {
  if (t.empty() || m <= 0) return 0;
  double tail = 0;
  for (double x : sync) tail = std::max(tail, x);
  if (sched != Schedule::pipedream || sync.empty()) return pipeline_time(sched, m, v, t, e) + tail;
  // Vanilla PipeDream (notes_003 §1: no gradient accumulation) syncs and steps after every micro-batch: each
  // stage's per-micro-batch cycle grows by its own sync + step, m times per iteration.
  const double tmax_sync = [&] {
    double x = 0;
    for (std::size_t i = 0; i < t.size(); ++i) x = std::max(x, t[i] + (i < sync.size() ? sync[i] : 0.0));
    return x;
  }();
  const double emax = e.empty() ? 0.0 : *std::max_element(e.begin(), e.end());
  return static_cast<double>(m) * std::max(tmax_sync, emax);
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
      // m == p: Megatron runs every forward chunk before the first backward (all_warmup_microbatches), so the
      // stage holds all m micro-batches (cost/program builds the same order).
      if (m == p) return md;
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
