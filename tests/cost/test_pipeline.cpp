// Tests for the pipeline schedule formulas: bubble fractions per schedule, AMP eq. 5 on heterogeneous stages,
// in-flight micro-batches and weight versions per schedule.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "strata/cost/stage.hpp"

using namespace strata::cost;

namespace {
// Bubble of a uniform pipeline measured from the iteration-time formula: T / (m·t) − 1.
double measured_bubble(Schedule s, int p, std::int64_t m, int v) {
  const double t = 0.37;
  std::vector<double> ts(p, t), es(p - 1, 0.0);
  return pipeline_time(s, m, v, ts, es) / (static_cast<double>(m) * t) - 1.0;
}
}  // namespace

TEST(CostPipeline, BubbleFractionsPerSchedule) {
  for (int p : {2, 4, 8})
    for (std::int64_t m : {8, 16, 64})
      for (int v : {1, 2, 3}) {
        EXPECT_NEAR(measured_bubble(Schedule::gpipe, p, m, 1), (p - 1.0) / m, 1e-12);
        EXPECT_NEAR(measured_bubble(Schedule::one_f_one_b, p, m, 1), (p - 1.0) / m, 1e-12);
        EXPECT_NEAR(measured_bubble(Schedule::interleaved, p, m, v), (p - 1.0) / (v * m), 1e-12);
        EXPECT_NEAR(measured_bubble(Schedule::pipedream, p, m, 1), 0.0, 1e-12);
        EXPECT_NEAR(measured_bubble(Schedule::two_bw, p, m, 1), 0.0, 1e-12);
        EXPECT_NEAR(bubble_fraction(Schedule::interleaved, p, m, v), (p - 1.0) / (v * m), 1e-15);
        EXPECT_NEAR(bubble_fraction(Schedule::gpipe, p, m, v), (p - 1.0) / m, 1e-15);
      }
}

TEST(CostPipeline, AmpEq5OnHeterogeneousStages) {
  const std::vector<double> t = {1.0, 3.0, 2.0}, e = {0.5, 0.25};
  // (m−1)·max t + Σ t + Σ e with m = 4.
  EXPECT_DOUBLE_EQ(pipeline_iteration_time(Schedule::one_f_one_b, 4, 1, t, e), 3 * 3.0 + 6.0 + 0.75);
  EXPECT_DOUBLE_EQ(pipeline_iteration_time(Schedule::pipedream, 4, 1, t, e), 4 * 3.0);
  // m = 1 reduces to Σ t + Σ e (AMP §3.5).
  EXPECT_DOUBLE_EQ(pipeline_iteration_time(Schedule::gpipe, 1, 1, t, e), 6.75);
}

TEST(CostPipeline, OneFOneBRoundTripsAreExposedInTheSteadyState) {
  // Uniform stages t, links e: the longest 1F1B cycle spans all p stages, P = t + e·(p−1)/p (m ≥ p + 1).
  for (int p : {2, 3, 6})
    for (double e : {0.0, 0.2, 1.5}) {
      const std::vector<double> t(p, 3.0), ev(p - 1, e);
      EXPECT_NEAR(one_f_one_b_period(t, ev, 16), 3.0 + e * (p - 1) / p, 1e-12);
      EXPECT_NEAR(pipeline_time(Schedule::one_f_one_b, 16, 1, t, ev), 15 * (3.0 + e * (p - 1) / p) + p * 3.0 + (p - 1) * e,
                  1e-9);
      // Two micro-batches: no cycle closes, P = max t and the formula is AMP eq. 5.
      EXPECT_NEAR(pipeline_time(Schedule::one_f_one_b, 2, 1, t, ev),
                  pipeline_iteration_time(Schedule::one_f_one_b, 2, 1, t, ev), 1e-12);
    }
  // Bounds on random heterogeneous stages: max t ≤ P ≤ max(t_i + e_i); pipeline_time ≥ the planner's objective,
  // equal without p2p.
  std::uint64_t x = 7;
  auto next = [&] { x = x * 6364136223846793005ull + 1442695040888963407ull; return (x >> 11) * 0x1.0p-53; };
  for (int trial = 0; trial < 200; ++trial) {
    const int p = 2 + trial % 7;
    std::vector<double> t(p), ev(p - 1), zero(p - 1, 0.0);
    for (auto& y : t) y = 0.5 + next();
    for (auto& y : ev) y = 2.0 * next();
    double tmax = 0, upper = 0;
    for (int i = 0; i < p; ++i) {
      tmax = std::max(tmax, t[i]);
      upper = std::max(upper, t[i] + (i + 1 < p ? ev[i] : 0.0));
    }
    const double P = one_f_one_b_period(t, ev, 32);
    EXPECT_GE(P, tmax);
    EXPECT_LE(P, upper + 1e-12);
    for (auto sched : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::pipedream}) {
      const int v = sched == Schedule::interleaved ? 2 : 1;
      EXPECT_GE(pipeline_time(sched, 4 * p, v, t, ev), pipeline_iteration_time(sched, 4 * p, v, t, ev) - 1e-12);
      EXPECT_NEAR(pipeline_time(sched, 4 * p, v, t, zero), pipeline_iteration_time(sched, 4 * p, v, t, zero), 1e-12);
    }
  }
}

TEST(CostPipeline, PipeDreamSyncsEveryMicroBatchTwoBwOncePerIteration) {
  const std::vector<double> t = {1.0, 3.0, 2.0}, e = {0.5, 0.25}, sync = {0.5, 0.25, 2.0};
  // Vanilla PipeDream: m·max(t_i + sync_i) = 4·max(1.5, 3.25, 4.0).
  EXPECT_DOUBLE_EQ(iteration_time(Schedule::pipedream, 4, 1, t, e, sync), 4 * 4.0);
  // 2BW: one sync per m micro-batches: m·max t + max sync.
  EXPECT_DOUBLE_EQ(iteration_time(Schedule::two_bw, 4, 1, t, e, sync), 4 * 3.0 + 2.0);
  // Flush schedules: pipeline_time + max sync.
  EXPECT_DOUBLE_EQ(iteration_time(Schedule::gpipe, 1, 1, t, e, sync), 6.75 + 2.0);
}

TEST(CostPipeline, InFlightMicroBatchesAndWeightVersions) {
  const int p = 8;
  for (int r = 0; r < p; ++r) {
    EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::one_f_one_b, p, r, 64, 1), p - r);
    EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::gpipe, p, r, 64, 1), 64.0);
    EXPECT_EQ(weight_versions(Schedule::two_bw, p, r), 2);
    EXPECT_EQ(weight_versions(Schedule::pipedream, p, r), p - r);
    EXPECT_EQ(weight_versions(Schedule::one_f_one_b, p, r), 1);
  }
  // Fewer micro-batches than stages: at most m in flight.
  EXPECT_DOUBLE_EQ(in_flight_micro_batches(Schedule::one_f_one_b, p, 0, 3, 1), 3.0);
  // Interleaved first stage: p·(1 + (p−1)/(p·v)) (Korthikanti §4.2.3).
  EXPECT_NEAR(in_flight_micro_batches(Schedule::interleaved, 8, 0, 64, 3), 8.0 * (1 + 7.0 / 24.0), 1e-12);
  EXPECT_NEAR(in_flight_micro_batches(Schedule::interleaved, 8, 0, 64, 1), 8.0, 1e-12);
}
