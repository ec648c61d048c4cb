// Tests for the planner's lower bounds (plan/bounds): the flow-shop bound for stages of unequal speed (with and
// without the costliest-layer floor) against brute force over every contiguous split, and its equality with the plain bound (m−1)·w/p + w on equal stages.
// (Bound ≤ estimate for every configuration of random searches: Search.PrunedSearchEqualsExhaustiveEvaluation.)
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <vector>

#include "../../src/plan/bounds.hpp"

namespace strata::plan::detail {
namespace {

// Least (m−1)·max_j t_j + Σ_j t_j over every split of `base` into p non-empty contiguous stages, stage j's time
// being rho[j]·(its layers' base times): the exact optimum the bound must not exceed.
double best_split(const std::vector<double>& base, const std::vector<double>& rho, std::int64_t m) {
  const int L = static_cast<int>(base.size()), p = static_cast<int>(rho.size());
  double best = INFINITY;
  std::vector<int> sizes(p);
  std::function<void(int, int)> rec = [&](int j, int left) {
    if (j == p - 1) {
      sizes[j] = left;
      double tmax = 0, tsum = 0;
      int at = 0;
      for (int s = 0; s < p; ++s) {
        double w = 0;
        for (int i = 0; i < sizes[s]; ++i) w += base[at++];
        const double t = rho[s] * w;
        tmax = std::max(tmax, t);
        tsum += t;
      }
      best = std::min(best, static_cast<double>(m - 1) * tmax + tsum);
      return;
    }
    for (int x = 1; x <= left - (p - 1 - j); ++x) {
      sizes[j] = x;
      rec(j + 1, left - x);
    }
  };
  rec(0, L);
  return best;
}

TEST(PlanBounds, FlowShopBoundNeverExceedsTheBestSplit) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  int cases = 0, tighter = 0, layer_tighter = 0;
  for (int c = 0; c < 400; ++c) {
    const int p = 2 + static_cast<int>(rng() % 4), L = p + static_cast<int>(rng() % 6);
    const std::int64_t m = 1 + static_cast<std::int64_t>(rng() % 12);
    std::vector<double> base(L), rho(p), speeds(p);
    double w = 0;
    for (auto& x : base) w += (x = 0.1 + u01(rng));
    for (int j = 0; j < p; ++j) speeds[j] = 1.0 / (rho[j] = rng() % 2 ? 1.0 : 1.0 + 3 * u01(rng));
    const double bound = flow_shop_bound_s(w, speeds, m);
    const double best = best_split(base, rho, m);
    EXPECT_LE(bound, best * (1 + 1e-12)) << "case " << c;
    // With the costliest layer as a floor on the largest stage time (ρ ≥ 1, so its time anywhere is ≥ base).
    const double with_layer = flow_shop_bound_s(w, speeds, m, *std::max_element(base.begin(), base.end()));
    EXPECT_LE(with_layer, best * (1 + 1e-12)) << "case " << c;
    EXPECT_GE(with_layer, bound * (1 - 1e-12)) << "case " << c;
    layer_tighter += with_layer > bound * (1 + 1e-6) ? 1 : 0;
    double stages = 0;
    for (double x : speeds) stages += x;
    const double plain = (static_cast<double>(m) - 1) * w / stages + w;  // lower_bound_s's pipeline part
    EXPECT_GE(bound, plain * (1 - 1e-8)) << "case " << c;
    tighter += bound > plain * (1 + 1e-6) ? 1 : 0;
    ++cases;
  }
  EXPECT_GT(tighter, cases / 4);        // unequal speeds do tighten it
  EXPECT_GT(layer_tighter, cases / 10);  // and so does a layer costlier than the average stage
}

TEST(PlanBounds, FlowShopBoundIsThePlainBoundOnEqualStages) {
  for (int p : {1, 2, 4, 16})
    for (std::int64_t m : {1, 3, 32}) {
      const double w = 7.5;
      const double plain = (static_cast<double>(m) - 1) * w / p + w;
      EXPECT_NEAR(flow_shop_bound_s(w, std::vector<double>(p, 1.0), m), plain, 1e-8 * plain) << p << " " << m;
    }
}

}  // namespace
}  // namespace strata::plan::detail
