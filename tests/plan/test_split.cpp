// tests/plan/test_split: the exact layer split equals exhaustive enumeration of every contiguous split (objective
// AND the lexicographically smallest optimal split) on thousands of random heterogeneous cases, with memory
// limits, stage-dependent cut costs, both objective shapes (AMP eq. 5 and PipeDream's steady state) and many ties.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "strata/plan/split.hpp"

namespace strata::plan {
namespace {

using i64 = std::int64_t;

// A raw random instance, independent of the SplitProblem encoding (the brute force below reads only this).
struct Raw {
  int L = 0, P = 0;
  std::vector<std::vector<i64>> time;        // [class][layer]
  std::vector<std::vector<i64>> stat, act;   // [class][layer]
  std::vector<int> cls;                      // [stage]
  std::vector<i64> mult, cap;                // [stage]
  std::vector<std::vector<i64>> cut;         // [stage][b]
  i64 wmax = 0, wsum = 1;
  bool cuts_in_max = false;
};

Raw random_raw(std::mt19937_64& rng) {
  auto uni = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  Raw r;
  r.L = static_cast<int>(uni(1, 12));
  r.P = static_cast<int>(uni(1, std::min<i64>(r.L, 8)));
  const int classes = static_cast<int>(uni(2, 3));
  const bool ties = uni(0, 2) == 0;  // tiny value range: many equal objectives
  const i64 tmax = ties ? 3 : 1000;
  r.time.resize(classes);
  r.stat.resize(classes);
  r.act.resize(classes);
  for (int k = 0; k < classes; ++k) {
    const i64 speed = uni(1, 4);  // a slower GPU type multiplies every layer
    for (int i = 0; i < r.L; ++i) {
      r.time[k].push_back(uni(0, tmax) * speed);
      r.stat[k].push_back(uni(0, 50));
      r.act[k].push_back(uni(0, 20));
    }
  }
  for (int j = 0; j < r.P; ++j) {
    r.cls.push_back(static_cast<int>(uni(0, classes - 1)));
    r.mult.push_back(uni(1, r.P));
    r.cap.push_back(uni(0, 3) == 0 ? 1'000'000 : uni(20, 400));
  }
  r.cut.assign(std::max(0, r.P - 1), std::vector<i64>(r.L + 1, 0));
  for (int j = 0; j + 1 < r.P; ++j) {
    const i64 link = uni(1, 5);  // random "bandwidth" per stage pair
    for (int b = 1; b < r.L; ++b) r.cut[j][b] = uni(0, ties ? 2 : 300) * link;
  }
  if (uni(0, 3) == 0) {
    r.wmax = uni(1, 30);  // pipedream / 2bw: m·max(max t, max e)
    r.wsum = 0;
    r.cuts_in_max = true;
  } else {
    r.wmax = uni(0, 30);  // m − 1 (0 = one micro-batch)
    r.wsum = 1;
  }
  return r;
}

SplitProblem encode(const Raw& r) {
  SplitProblem p;
  p.layers = r.L;
  for (const auto& t : r.time) {
    std::vector<i64> pre(r.L + 1, 0);
    for (int i = 0; i < r.L; ++i) pre[i + 1] = pre[i] + t[i];
    p.time_prefix.push_back(pre);
  }
  p.stage_class = r.cls;
  for (int j = 0; j < r.P; ++j)
    p.min_start.push_back(min_start_linear(r.stat[r.cls[j]], r.act[r.cls[j]], r.mult[j], r.cap[j]));
  p.cut = r.cut;
  p.weight_max = r.wmax;
  p.weight_sum = r.wsum;
  p.cuts_in_max = r.cuts_in_max;
  return p;
}

// Exhaustive enumeration straight from the raw instance: direct sums, direct memory check.
struct Best {
  bool found = false;
  i64 obj = 0;
  std::vector<int> sizes;
};
Best brute(const Raw& r) {
  Best best;
  std::vector<int> sizes(r.P);
  std::function<void(int, int)> rec = [&](int j, int left) {
    if (j == r.P - 1) {
      sizes[j] = left;
      i64 mx = 0, sum = 0;
      int a = 0;
      for (int s = 0; s < r.P; ++s) {
        const int k = r.cls[s];
        i64 t = 0, mem_s = 0, mem_a = 0;
        for (int i = a; i < a + sizes[s]; ++i) {
          t += r.time[k][i];
          mem_s += r.stat[k][i];
          mem_a += r.act[k][i];
        }
        if (mem_s + r.mult[s] * mem_a > r.cap[s]) return;
        mx = std::max(mx, t);
        sum += t;
        a += sizes[s];
        if (s + 1 < r.P) {
          sum += r.cut[s][a];
          if (r.cuts_in_max) mx = std::max(mx, r.cut[s][a]);
        }
      }
      const i64 obj = r.wmax * mx + r.wsum * sum;
      if (!best.found || obj < best.obj) best = {true, obj, sizes};  // lexicographic order of enumeration
      return;
    }
    for (int s = 1; s <= left - (r.P - 1 - j); ++s) {
      sizes[j] = s;
      rec(j + 1, left - s);
    }
  };
  rec(0, r.L);
  return best;
}

TEST(Split, EqualsExhaustiveEnumerationOnRandomHeterogeneousCases) {
  std::mt19937_64 rng(20240601);
  int feasible = 0, multi_bound = 0;
  for (int c = 0; c < 3000; ++c) {
    const Raw raw = random_raw(rng);
    const SplitProblem p = encode(raw);
    const Best want = brute(raw);
    const SplitResult got = solve_split(p);
    ASSERT_EQ(got.feasible, want.found) << "case " << c;
    if (!want.found) continue;
    ++feasible;
    if (got.bounds_tried > 3) ++multi_bound;
    ASSERT_EQ(static_cast<i64>(got.objective), want.obj) << "case " << c;
    ASSERT_EQ(got.sizes, want.sizes) << "case " << c << " (tie-break: lexicographically smallest)";
    // The library's own brute force agrees too.
    const SplitResult bf = brute_force_split(p);
    ASSERT_EQ(static_cast<i64>(bf.objective), want.obj);
    ASSERT_EQ(bf.sizes, want.sizes);
  }
  EXPECT_GT(feasible, 1500);   // the generator exercises both outcomes
  EXPECT_GT(multi_bound, 100); // and sweeps several bounds
}

TEST(Split, UniformLayersOnEqualStagesGiveBalancedSplit) {
  // 12 equal layers, 4 equal stages, no cut cost: 3 each is the unique min of (m−1)·max + Σ.
  Raw r;
  r.L = 12;
  r.P = 4;
  r.time = {std::vector<i64>(12, 10)};
  r.stat = {std::vector<i64>(12, 0)};
  r.act = {std::vector<i64>(12, 0)};
  r.cls = {0, 0, 0, 0};
  r.mult = {1, 1, 1, 1};
  r.cap = {1, 1, 1, 1};
  r.cut.assign(3, std::vector<i64>(13, 0));
  r.wmax = 7;
  const SplitResult s = solve_split(encode(r));
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.sizes, (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(static_cast<std::int64_t>(s.objective), 7 * 30 + 120);
}

TEST(Split, FasterStageTakesMoreLayers) {
  // Stage 0 is 3x faster than stage 1 (e.g. V100 vs T4): with many micro-batches it takes ~3/4 of the layers.
  Raw r;
  r.L = 8;
  r.P = 2;
  r.time = {std::vector<i64>(8, 10), std::vector<i64>(8, 30)};
  r.stat = {std::vector<i64>(8, 0), std::vector<i64>(8, 0)};
  r.act = r.stat;
  r.cls = {0, 1};
  r.mult = {1, 1};
  r.cap = {1, 1};
  r.cut.assign(1, std::vector<i64>(9, 0));
  r.wmax = 100;
  const SplitResult s = solve_split(encode(r));
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.sizes, (std::vector<int>{6, 2}));
}

TEST(Split, MemoryLimitForcesLayersAway) {
  // Stage 0 can hold at most 2 layers although it is faster.
  Raw r;
  r.L = 6;
  r.P = 2;
  r.time = {std::vector<i64>(6, 1), std::vector<i64>(6, 5)};
  r.stat = {std::vector<i64>(6, 10), std::vector<i64>(6, 10)};
  r.act = {std::vector<i64>(6, 0), std::vector<i64>(6, 0)};
  r.cls = {0, 1};
  r.mult = {1, 1};
  r.cap = {20, 1000};
  r.cut.assign(1, std::vector<i64>(7, 0));
  r.wmax = 10;
  const SplitResult s = solve_split(encode(r));
  ASSERT_TRUE(s.feasible);
  EXPECT_EQ(s.sizes, (std::vector<int>{2, 4}));
  r.cap = {5, 1000};  // nothing fits stage 0
  EXPECT_FALSE(solve_split(encode(r)).feasible);
}

TEST(Split, EvaluateRejectsMalformedSplits) {
  Raw r;
  r.L = 4;
  r.P = 2;
  r.time = {std::vector<i64>(4, 1)};
  r.stat = {std::vector<i64>(4, 0)};
  r.act = r.stat;
  r.cls = {0, 0};
  r.mult = {1, 1};
  r.cap = {1, 1};
  r.cut.assign(1, std::vector<i64>(5, 3));
  const SplitProblem p = encode(r);
  EXPECT_FALSE(evaluate_split(p, {4, 0}).feasible);
  EXPECT_FALSE(evaluate_split(p, {1, 2}).feasible);
  EXPECT_FALSE(evaluate_split(p, {1, 1, 2}).feasible);
  const SplitResult ok = evaluate_split(p, {1, 3});
  ASSERT_TRUE(ok.feasible);
  EXPECT_EQ(ok.sum_term, 4 + 3);
}

TEST(Split, MinStartFromPredicateMatchesDirectScan) {
  std::mt19937_64 rng(7);
  for (int c = 0; c < 200; ++c) {
    const int L = 1 + static_cast<int>(rng() % 15);
    std::vector<i64> s(L), a(L);
    for (int i = 0; i < L; ++i) {
      s[i] = static_cast<i64>(rng() % 30);
      a[i] = static_cast<i64>(rng() % 10);
    }
    const i64 mult = 1 + static_cast<i64>(rng() % 4), cap = static_cast<i64>(rng() % 150);
    const auto ms = min_start_linear(s, a, mult, cap);
    for (int b = 1; b <= L; ++b) {
      int want = b;
      for (int st = 0; st < b; ++st) {
        i64 m = 0;
        for (int i = st; i < b; ++i) m += s[i] + mult * a[i];
        if (m <= cap) {
          want = st;
          break;
        }
      }
      ASSERT_EQ(ms[b], want);
    }
  }
}

// Every split of a raw instance that fits memory, as (max term, sum term).
std::vector<std::pair<i64, i64>> all_fitting_splits(const Raw& r) {
  std::vector<std::pair<i64, i64>> out;
  std::vector<int> sizes(r.P);
  std::function<void(int, int)> rec = [&](int j, int left) {
    if (j == r.P - 1) {
      sizes[j] = left;
      i64 mx = 0, sum = 0;
      int a = 0;
      for (int s = 0; s < r.P; ++s) {
        const int k = r.cls[s];
        i64 t = 0, mem_s = 0, mem_a = 0;
        for (int i = a; i < a + sizes[s]; ++i) t += r.time[k][i], mem_s += r.stat[k][i], mem_a += r.act[k][i];
        if (mem_s + r.mult[s] * mem_a > r.cap[s]) return;
        mx = std::max(mx, t);
        sum += t;
        a += sizes[s];
        if (s + 1 < r.P) {
          sum += r.cut[s][a];
          if (r.cuts_in_max) mx = std::max(mx, r.cut[s][a]);
        }
      }
      out.emplace_back(mx, sum);
      return;
    }
    for (int s = 1; s <= left - (r.P - 1 - j); ++s) {
      sizes[j] = s;
      rec(j + 1, left - s);
    }
  };
  rec(0, r.L);
  return out;
}

TEST(Split, BoundDpAndFeasibilityTestEqualEnumeration) {
  // F(B) (the DP of one bound) and the reachability test the binary search uses instead of it, against
  // enumeration, at every candidate value of the max term and its neighbours.
  std::mt19937_64 rng(20261123);
  int checked = 0, feasible = 0;
  for (int c = 0; c < 600; ++c) {
    const Raw raw = random_raw(rng);
    const SplitProblem p = encode(raw);
    const auto splits = all_fitting_splits(raw);
    std::vector<i64> bounds{-1, 0};
    for (const auto& [mx, sum] : splits) bounds.insert(bounds.end(), {mx - 1, mx, mx + 1});
    for (const auto& row : raw.cut)
      for (i64 e : row) bounds.push_back(e);
    for (i64 b : bounds) {
      bool found = false;
      i64 best = 0;
      for (const auto& [mx, sum] : splits)
        if (mx <= b && (!found || raw.wsum * sum < best)) found = true, best = raw.wsum * sum;
      ASSERT_EQ(bound_objective(p, b), found ? best : kInfinitePs) << "case " << c << " bound " << b;
      const int f = bound_feasible(p, b);
      ASSERT_NE(f, -1);
      ASSERT_EQ(f == 1, found) << "case " << c << " bound " << b;
      ++checked;
      feasible += found ? 1 : 0;
    }
  }
  EXPECT_GT(feasible, 1000);
  EXPECT_GT(checked - feasible, 1000);
}

TEST(Split, MemoReturnsWhatTheSolverReturns) {
  std::mt19937_64 rng(11);
  SplitMemo memo;
  for (int c = 0; c < 200; ++c) {
    const SplitProblem p = encode(random_raw(rng));
    const SplitResult want = solve_split(p);
    for (int again = 0; again < 2; ++again) {  // a miss, then a hit (the memo does not grow)
      const std::size_t before = memo.results.size();
      const SplitResult got = solve_split(p, memo);
      ASSERT_EQ(got.feasible, want.feasible);
      ASSERT_EQ(got.sizes, want.sizes);
      ASSERT_TRUE(got.objective == want.objective);
      ASSERT_EQ(got.bounds_tried, want.bounds_tried);
      if (again == 1) EXPECT_EQ(memo.results.size(), before);
      EXPECT_LE(memo.results.size(), SplitMemo::kMaxResults);
    }
  }
}

}  // namespace
}  // namespace strata::plan
