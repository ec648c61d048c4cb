// Tests for the Galvatron-BMW search (plan/layerwise): the decision-tree counts of seed_001 §3.2 (68 / 44 / 22
// candidates on 8 GPUs, DP+TP and DP+PP 4 each), the stage DP equal to brute force on 150 random small problems
// (≤ 8 layers, groups ≤ 8 devices, a memory budget), and the search's plan fitting a memory budget and beating
// (or matching) every fixed per-layer choice of the same configuration.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "strata/cost/layerwise.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/plan/layerwise.hpp"
#include "strata/plan/split.hpp"

using namespace strata;
using namespace strata::plan;

namespace {

hw::Cluster cluster(const std::string& spec) {
  static const hw::Catalog catalog = hw::builtin_catalog();
  return hw::resolve_cluster(spec, catalog);
}

TEST(LayerwiseSpace, DecisionTreeCountsOnEightGpus) {
  // PP degrees 1, 2, 4, 8 leave groups of 8, 4, 2, 1 devices.
  int all = 0, no_mix = 0;
  for (int g : {1, 2, 4, 8}) {
    all += static_cast<int>(decision_trees(g, true).size());
    no_mix += static_cast<int>(decision_trees(g, false).size());
  }
  EXPECT_EQ(decision_trees(8, true).size(), 21u);  // 3 + 12 two-level + 6 three-level
  EXPECT_EQ(decision_trees(4, true).size(), 9u);
  EXPECT_EQ(2 * all, 68);     // × CKPT on/off: Galvatron-BMW's full space
  EXPECT_EQ(2 * no_mix, 44);  // without DP+SDP mixes (Takeaway #3)
  EXPECT_EQ(no_mix, 22);      // Galvatron (no CKPT)
  // strata's candidates are exactly the trees without mixes (one LayerChoice each, all distinct) × CKPT.
  const auto m = model::zoo_model("bert-huge-32");  // 16 heads: every tp ≤ 8 is valid
  int space = 0, no_ckpt = 0, dp_tp = 0, dp_pp = 0;
  for (int g : {1, 2, 4, 8}) {
    const auto full = layer_choice_space(m, g, {});
    std::set<std::tuple<int, int, int, int>> distinct;
    for (const auto& c : full)
      distinct.insert({c.tp, static_cast<int>(c.data_parallel), static_cast<int>(c.recompute), static_cast<int>(c.tp_order)});
    EXPECT_EQ(distinct.size(), full.size());
    space += static_cast<int>(full.size());
    no_ckpt += static_cast<int>(layer_choice_space(m, g, {.ckpt = false}).size());
    LayerSpaceOptions tp_only{.sdp = false, .ckpt = false, .tp = true, .strided = false};
    if (g == 8) dp_tp = static_cast<int>(layer_choice_space(m, g, tp_only).size());  // Galvatron (DP+TP): pp = 1
    dp_pp += static_cast<int>(layer_choice_space(m, g, {.sdp = false, .ckpt = false, .tp = false}).size());
  }
  EXPECT_EQ(space, 44);
  EXPECT_EQ(no_ckpt, 22);
  EXPECT_EQ(dp_tp, 4);
  EXPECT_EQ(dp_pp, 4);
}

TEST(LayerwiseSpace, TreeToChoiceOrder) {
  // [TP2, DP4]: TP innermost = consecutive; [DP4, TP2]: TP outside = strided (ranks 4 apart).
  const auto a = choice_of_tree({{{'t', 2}, {'d', 4}}}, 8);
  const auto b = choice_of_tree({{{'d', 4}, {'t', 2}}}, 8);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->tp_order, cost::TpOrder::consecutive);
  EXPECT_EQ(b->tp_order, cost::TpOrder::strided);
  EXPECT_FALSE(choice_of_tree({{{'d', 2}, {'s', 4}}}, 8).has_value());
}

// Random stage problems with choices drawn from the real space of a group (their layouts), random times, memory
// and transformation costs.
StageDpProblem random_problem(std::mt19937_64& rng, const model::Model& m) {
  const int groups[] = {1, 2, 4, 8};
  const int g = groups[rng() % 4];
  auto space = layer_choice_space(m, g, {});
  std::shuffle(space.begin(), space.end(), rng);
  StageDpProblem p;
  p.layers = 1 + static_cast<int>(rng() % 8);
  // Keep choices^layers ≤ ~200k for the brute force.
  int S = static_cast<int>(space.size());
  while (S > 1 && std::pow(static_cast<double>(S), p.layers) > 2e5) --S;
  p.choices = S;
  std::vector<std::pair<int, int>> layouts;
  for (int s = 0; s < S; ++s) {
    const std::pair<int, int> key{space[s].tp, static_cast<int>(space[s].tp_order)};
    auto it = std::find(layouts.begin(), layouts.end(), key);
    if (it == layouts.end()) it = layouts.insert(layouts.end(), key);
    p.layout_of.push_back(static_cast<int>(it - layouts.begin()));
  }
  p.layouts = static_cast<int>(layouts.size());
  for (int l = 0; l < p.layers; ++l) {
    std::vector<std::int64_t> t(S);
    std::vector<int> mu(S);
    for (int s = 0; s < S; ++s) {
      t[s] = 1 + static_cast<std::int64_t>(rng() % 1000);
      if (rng() % 10 == 0) t[s] = kInfinitePs;  // an unusable choice
      mu[s] = static_cast<int>(rng() % 21);
    }
    p.time_ps.push_back(t);
    p.mem_units.push_back(mu);
    std::vector<std::int64_t> tr(static_cast<std::size_t>(p.layouts) * p.layouts);
    for (auto& x : tr) x = static_cast<std::int64_t>(rng() % 400);
    p.trans_ps.push_back(tr);
  }
  p.budget_units = static_cast<int>(rng() % (12 * p.layers + 1));
  return p;
}

TEST(LayerwiseDp, EqualsBruteForceOnRandomSmallCases) {
  const auto m = model::zoo_model("bert-huge-32");
  std::mt19937_64 rng(16);
  int feasible = 0;
  for (int i = 0; i < 150; ++i) {
    const StageDpProblem p = random_problem(rng, m);
    const StageDpResult dp = solve_stage_dp(p);
    const StageDpResult bf = brute_force_stage_dp(p);
    ASSERT_EQ(dp.feasible, bf.feasible) << "case " << i;
    if (!dp.feasible) continue;
    ++feasible;
    EXPECT_EQ(dp.time_ps, bf.time_ps) << "case " << i;
    EXPECT_EQ(dp.mem_units, bf.mem_units) << "case " << i;
    // The DP's assignment really has that time and memory.
    std::int64_t t = 0;
    int mem = 0;
    for (int l = 0; l < p.layers; ++l) {
      const int s = dp.choice[l];
      t += p.time_ps[l][s];
      mem += p.mem_units[l][s];
      if (l > 0 && p.layout_of[dp.choice[l - 1]] != p.layout_of[s])
        t += p.trans_ps[l][p.layout_of[dp.choice[l - 1]] * p.layouts + p.layout_of[s]];
    }
    EXPECT_EQ(t, dp.time_ps) << "case " << i;
    EXPECT_EQ(mem, dp.mem_units) << "case " << i;
    EXPECT_LE(mem, p.budget_units);
  }
  EXPECT_GT(feasible, 60);  // the budgets are not all impossible
}

TEST(LayerwiseSearch, FitsTheBudgetAndBeatsFixedChoices) {
  const auto m = model::zoo_model("bert-huge-32");
  const auto c = cluster("dgx-a100");
  LayerwiseOptions o;
  o.global_batch = 64;
  o.max_pp = 2;
  o.cost.memory_budget_bytes = 12.0 * (1ull << 30);
  const LayerwisePlan p = plan_layerwise(m, c, o);
  ASSERT_TRUE(p.found);
  EXPECT_TRUE(p.estimate.fits);
  EXPECT_LE(p.estimate.peak_memory_bytes, 12.0 * (1ull << 30));
  // Every uniform choice of the same space at pp 1 and 2 (every layer tp t, DP or SDP, with or without CKPT) that
  // fits is no faster than the plan.
  const int L = static_cast<int>(m.layers.size());
  for (int t : {1, 2, 4, 8})
    for (const char* dp : {"", ".sdp"})
      for (const char* ck : {"", ".full"}) {
        const std::string text =
            fmt::format("mbs=1,gbs=64,stages=0+1+2+3+4+5+6+7:dp8:tp1:{},layers=tp{}{}{}*{}", L, t, dp, ck, L);
        cost::Strategy s = cost::complete_strategy(cost::parse_strategy(text), m, c);
        const cost::Estimate e = cost::estimate(m, c, s, o.cost);
        if (e.fits) EXPECT_GE(e.iteration_time_s * 1.0001, p.estimate.iteration_time_s) << text;
      }
}

}  // namespace
