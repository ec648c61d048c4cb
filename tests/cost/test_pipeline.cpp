// Tests for the pipeline schedule formulas: bubble fractions per schedule, AMP eq. 5 on heterogeneous stages,
// in-flight micro-batches and weight versions per schedule.
#include <gtest/gtest.h>

#include <vector>

#include "strata/cost/stage.hpp"

using namespace strata::cost;

namespace {
// Bubble of a uniform pipeline measured from the iteration-time formula: T / (m·t) − 1.
double measured_bubble(Schedule s, int p, std::int64_t m, int v) {
  const double t = 0.37;
  std::vector<double> ts(p, t), es(p - 1, 0.0);
  return pipeline_iteration_time(s, m, v, ts, es) / (static_cast<double>(m) * t) - 1.0;
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
