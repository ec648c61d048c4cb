// tests/plan/test_pipedream: PipeDream's partitioner (notes_003 §1.3) — a VGG-like profile whose optimum
// replicates the compute-heavy convolution stage and leaves the weight-heavy classifier unreplicated (PipeDream's
// "15-1" shape, here "3-1" on 4 workers): the DP's (layers, replicas) equal brute force; random profiles too.
#include <gtest/gtest.h>

#include <random>

#include "strata/plan/pipedream.hpp"

namespace {

using namespace strata::plan;

PipeDreamProfile vgg_like() {
  PipeDreamProfile p;
  p.time_s = {10e-3, 10e-3, 10e-3, 10e-3, 2e-3, 2e-3};        // conv ×4 (compute-heavy), fc ×2
  p.output_bytes = {50e6, 25e6, 12e6, 6e6, 2e4, 4e3};
  p.weight_bytes = {0.1e6, 0.2e6, 0.5e6, 1e6, 400e6, 70e6};   // the classifier holds the weights
  p.bw_bytes_per_s = 10e9;
  p.workers = 4;
  return p;
}

TEST(PipeDream, PartitionerExampleEqualsBruteForce) {
  const auto p = vgg_like();
  const auto dp = pipedream_partition(p);
  const auto bf = pipedream_brute_force(p);
  ASSERT_EQ(dp.stages.size(), 2u);
  EXPECT_EQ(dp.stages, bf.stages);
  EXPECT_EQ(dp.stages[0], (PipeDreamStage{0, 3, 3}));  // conv layers on 3 replicas
  EXPECT_EQ(dp.stages[1], (PipeDreamStage{4, 5, 1}));  // classifier on 1
  // Closed form: stage 0 = max(40 ms, 2·2·1.8 MB / 10 GB/s)/3 = 13.333 ms is the bottleneck.
  EXPECT_NEAR(dp.period_s, 40e-3 / 3, 1e-15);
  EXPECT_DOUBLE_EQ(dp.period_s, bf.period_s);
  EXPECT_DOUBLE_EQ(pipedream_period(p, dp.stages), dp.period_s);
}

TEST(PipeDream, RandomProfilesEqualBruteForce) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  for (int i = 0; i < 60; ++i) {
    PipeDreamProfile p;
    const int L = 2 + static_cast<int>(rng() % 5);
    for (int l = 0; l < L; ++l) {
      p.time_s.push_back(u(rng) * 1e-2);
      p.output_bytes.push_back(u(rng) * 1e7);
      p.weight_bytes.push_back(u(rng) * (rng() % 2 ? 1e6 : 2e8));
    }
    p.bw_bytes_per_s = 10e9;
    p.workers = 1 + static_cast<int>(rng() % 5);
    EXPECT_DOUBLE_EQ(pipedream_partition(p).period_s, pipedream_brute_force(p).period_s) << "case " << i;
  }
}

}  // namespace
