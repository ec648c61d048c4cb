// tests/sched/test_policies: every policy on small hand-solved cases, including the thesis' worked LAS example
// (notes_003 §4.3) and the hierarchical water-filling example (weights 3,1,1,1 on 4 GPUs).
#include <gtest/gtest.h>

#include <cmath>

#include "strata/core/error.hpp"
#include "strata/sched/policy.hpp"

namespace strata::sched {
namespace {

Problem parse(const std::string& text) { return problem_from_json(core::Json::parse(text), "test.json"); }

// Thesis §5.2 worked example: (V100, K80) throughputs (40,10), (12,4), (100,50) on one V100 + one K80.
Problem thesis_example() {
  return parse(R"({"workers": {"v100": 1, "k80": 1}, "jobs": [
    {"name": "job0", "throughputs": {"v100": 40, "k80": 10}, "steps": 1000},
    {"name": "job1", "throughputs": {"v100": 12, "k80": 4}, "steps": 1000},
    {"name": "job2", "throughputs": {"v100": 100, "k80": 50}, "steps": 1000}]})");
}

// Types are ordered by name (the JSON object's order), so tests look them up by name.
double frac(const Problem& p, const std::vector<std::vector<double>>& f, int job, const char* type) {
  return f[job][p.type_index(type)];
}

void expect_feasible(const Problem& p, const Allocation& a) {
  const auto f = job_type_fractions(p, a);
  std::vector<double> used(p.num_types(), 0.0);
  for (int m = 0; m < p.num_jobs(); ++m) {
    double sum = 0;
    for (int t = 0; t < p.num_types(); ++t) {
      EXPECT_GE(f[m][t], -1e-9);
      sum += f[m][t];
    }
    EXPECT_LE(sum, 1 + 1e-6) << p.jobs[m].name;
  }
  for (std::size_t k = 0; k < a.combos.size(); ++k)
    for (std::size_t c = 0; c < a.columns.size(); ++c) used[a.columns[c].type] += a.x[k][c] * a.combos[k].scale_factor;
  for (int t = 0; t < p.num_types(); ++t) EXPECT_LE(used[t], p.types[t].count + 1e-6) << p.types[t].name;
}

TEST(MaxMinFairness, ThesisWorkedExample) {
  const Problem p = thesis_example();
  const Allocation a = allocate(p, parse_policy("max-min-fairness"));
  expect_feasible(p, a);
  const auto f = job_type_fractions(p, a);
  const double want[3][2] = {{5.0 / 11, 0}, {5.0 / 11, 1.0 / 11}, {1.0 / 11, 10.0 / 11}};  // (V100, K80)
  for (int m = 0; m < 3; ++m) {
    EXPECT_NEAR(frac(p, f, m, "v100"), want[m][0], 1e-6) << m;
    EXPECT_NEAR(frac(p, f, m, "k80"), want[m][1], 1e-6) << m;
  }
  for (double n : normalized_throughputs(p, a)) EXPECT_NEAR(n, 8.0 / 11.0, 1e-6);
}

TEST(MaxMinFairness, SingleLpGivesTheSameUniqueOptimum) {
  const Problem p = thesis_example();
  PolicyOptions o;
  o.water_filling = false;
  const Allocation a = allocate(p, parse_policy("max-min-fairness"), o);
  EXPECT_EQ(a.lp_solves, 1);
  for (double n : normalized_throughputs(p, a)) EXPECT_NEAR(n, 8.0 / 11.0, 1e-6);
}

TEST(MaxMinFairness, AgnosticIsTheIsolatedSplitAndWorse) {
  // The agnostic policy sees equal speeds: every job gets 2/3 of a GPU-time in total; its normalised throughput
  // depends on which type the LP picked, but the minimum cannot beat the aware 8/11.
  const Problem p = thesis_example();
  const Allocation a = allocate(p, parse_policy("max-min-fairness-agnostic"));
  expect_feasible(p, a);
  const auto f = job_type_fractions(p, a);
  for (int m = 0; m < 3; ++m) EXPECT_NEAR(f[m][0] + f[m][1], 2.0 / 3.0, 1e-6);
  const auto n = normalized_throughputs(p, a);
  EXPECT_LT(*std::min_element(n.begin(), n.end()), 8.0 / 11.0 - 1e-3);
}

TEST(MaxMinFairness, WeightsScaleTheShares) {
  // One type, 2 GPUs, 3 identical jobs with weights 2,1,1 → time fractions 1, 0.5, 0.5.
  const Problem p = parse(R"({"workers": {"a": 2}, "jobs": [
    {"name": "x", "throughputs": {"a": 1}, "weight": 2}, {"name": "y", "throughputs": {"a": 1}},
    {"name": "z", "throughputs": {"a": 1}}]})");
  const auto f = job_type_fractions(p, allocate(p, parse_policy("las")));
  EXPECT_NEAR(f[0][0], 1.0, 1e-6);
  EXPECT_NEAR(f[1][0], 0.5, 1e-6);
  EXPECT_NEAR(f[2][0], 0.5, 1e-6);
}

TEST(MaxMinFairness, WaterFillingGivesLeftoverCapacity) {
  // 2 GPUs of type a, job x can only use type b (1 GPU): x is capped at its one b GPU; with plain max-min the
  // level is set by... x runs alone on b; y and z share a. Single-type jobs y, z are capped at 1 each.
  // Max-min level: x on b gets 1 (normalised by equal share 1/2 → 2·... ) water-filling must give y, z a full GPU.
  const Problem p = parse(R"({"workers": {"a": 2, "b": 1}, "jobs": [
    {"name": "x", "throughputs": {"b": 1}}, {"name": "y", "throughputs": {"a": 1}},
    {"name": "z", "throughputs": {"a": 1}, "weight": 4}]})");
  const auto f = job_type_fractions(p, allocate(p, parse_policy("max-min-fairness")));
  EXPECT_NEAR(f[0][1], 1.0, 1e-6);
  EXPECT_NEAR(f[1][0], 1.0, 1e-6);
  EXPECT_NEAR(f[2][0], 1.0, 1e-6);
}

TEST(Hierarchical, ThesisWaterFillingExample) {
  // Thesis §5.3: 4 identical jobs, weights 3,1,1,1, 4 identical GPUs. Iteration 1: job 1 → 1.0, others → 1/3;
  // job 1 is bottlenecked; iteration 2 gives jobs 2–4 full GPUs.
  const Problem p = parse(R"({"workers": {"gpu": 4},
    "entities": {"e1": {"weight": 3}, "e2": {"weight": 1}, "e3": {"weight": 1}, "e4": {"weight": 1}},
    "jobs": [{"name": "j1", "throughputs": {"gpu": 1}, "entity": "e1"},
             {"name": "j2", "throughputs": {"gpu": 1}, "entity": "e2"},
             {"name": "j3", "throughputs": {"gpu": 1}, "entity": "e3"},
             {"name": "j4", "throughputs": {"gpu": 1}, "entity": "e4"}]})");
  const Allocation a = allocate(p, parse_policy("hierarchical"));
  EXPECT_NEAR(a.objective, 1.0 / 3.0, 1e-6);  // iteration-1 level t: job 1 at 3t = 1.0, others at t = 1/3
  EXPECT_EQ(a.iterations, 2);
  for (double x : effective_throughputs(p, a)) EXPECT_NEAR(x, 1.0, 1e-6);
}

TEST(Hierarchical, EntityFairnessSplitsAndFifoOrders) {
  // 2 GPUs; entity A (weight 1, fairness) has 2 jobs, entity B (weight 1, fifo) has 2 jobs.
  // A's jobs get 1/4 of the weight each → 0.5 GPU each; B's first job gets B's whole weight → 1 GPU; B's second
  // job gets nothing (FIFO) since the cluster is full.
  const Problem p = parse(R"({"workers": {"gpu": 2},
    "entities": {"A": {"weight": 1, "policy": "fairness"}, "B": {"weight": 1, "policy": "fifo"}},
    "jobs": [{"name": "a1", "throughputs": {"gpu": 1}, "entity": "A"},
             {"name": "a2", "throughputs": {"gpu": 1}, "entity": "A"},
             {"name": "b1", "throughputs": {"gpu": 1}, "entity": "B"},
             {"name": "b2", "throughputs": {"gpu": 1}, "entity": "B"}]})");
  const Allocation a = allocate(p, parse_policy("hierarchical"));
  expect_feasible(p, a);
  const auto x = effective_throughputs(p, a);
  EXPECT_NEAR(x[0], 0.5, 1e-6);
  EXPECT_NEAR(x[1], 0.5, 1e-6);
  EXPECT_NEAR(x[2], 1.0, 1e-6);
  EXPECT_NEAR(x[3], 0.0, 1e-6);
}

TEST(Makespan, BalancesFinishTimes) {
  // One GPU type with 1 GPU, two jobs of 100 and 300 steps at 1 step/s: makespan 400 s, X = 1/4, 3/4.
  const Problem p = parse(R"({"workers": {"a": 1}, "jobs": [
    {"name": "s", "throughputs": {"a": 1}, "steps": 100}, {"name": "l", "throughputs": {"a": 1}, "steps": 300}]})");
  const Allocation a = allocate(p, parse_policy("makespan"));
  EXPECT_NEAR(a.objective, 400.0, 1e-4);
  const auto f = job_type_fractions(p, a);
  EXPECT_NEAR(f[0][0], 0.25, 1e-6);
  EXPECT_NEAR(f[1][0], 0.75, 1e-6);
}

TEST(Makespan, HeterogeneityAwareBeatsAgnostic) {
  // Job f is 10x faster on v100, job s is equally fast on both: aware puts f on the V100.
  const Problem p = parse(R"({"workers": {"v100": 1, "k80": 1}, "jobs": [
    {"name": "f", "throughputs": {"v100": 10, "k80": 1}, "steps": 1000},
    {"name": "s", "throughputs": {"v100": 1, "k80": 1}, "steps": 100}]})");
  const Allocation a = allocate(p, parse_policy("makespan"));
  EXPECT_NEAR(a.objective, 100.0, 1e-4);  // f alone on V100 → 100 s; s alone on K80 → 100 s
  const auto tp = effective_throughputs(p, allocate(p, parse_policy("makespan-agnostic")));
  EXPECT_GT(std::max(1000 / tp[0], 100 / tp[1]), 100.0 + 1e-3);
}

TEST(Fifo, FirstJobGetsTheFastGpu) {
  const Problem p = parse(R"({"workers": {"v100": 1, "k80": 1}, "jobs": [
    {"name": "first", "throughputs": {"v100": 4, "k80": 1}, "arrival_s": 0},
    {"name": "second", "throughputs": {"v100": 4, "k80": 1}, "arrival_s": 10},
    {"name": "third", "throughputs": {"v100": 4, "k80": 1}, "arrival_s": 20}]})");
  const auto f = job_type_fractions(p, allocate(p, parse_policy("fifo")));
  EXPECT_NEAR(frac(p, f, 0, "v100"), 1.0, 1e-6);
  EXPECT_NEAR(frac(p, f, 1, "k80"), 1.0, 1e-6);
  EXPECT_NEAR(f[2][0] + f[2][1], 0.0, 1e-6);
}

TEST(Sjf, ShortestRemainingJobFirst) {
  const Problem p = parse(R"({"workers": {"a": 1}, "jobs": [
    {"name": "long", "throughputs": {"a": 1}, "steps": 500}, {"name": "short", "throughputs": {"a": 1}, "steps": 5}]})");
  const auto f = job_type_fractions(p, allocate(p, parse_policy("sjf")));
  EXPECT_NEAR(f[1][0], 1.0, 1e-6);
  EXPECT_NEAR(f[0][0], 0.0, 1e-6);
}

TEST(MaxThroughput, EachTypeToItsRelativelyBestJob) {
  // Job a is 4x faster on v100, job b 1.25x: the sum of normalised throughputs is largest with a on V100 and b
  // on K80 (2·4/5 + 2·1/1.8... computed: a: T_eq = 2.5, b: T_eq = 4.5 → a on v100 = 1.6, b on k80 = 0.889).
  const Problem p = parse(R"({"workers": {"v100": 1, "k80": 1}, "jobs": [
    {"name": "a", "throughputs": {"v100": 4, "k80": 1}}, {"name": "b", "throughputs": {"v100": 5, "k80": 4}}]})");
  const Allocation a = allocate(p, parse_policy("max-throughput"));
  const auto f = job_type_fractions(p, a);
  EXPECT_NEAR(frac(p, f, 0, "v100"), 1.0, 1e-6);
  EXPECT_NEAR(frac(p, f, 1, "k80"), 1.0, 1e-6);
  EXPECT_NEAR(a.objective, 4 / 2.5 + 4 / 4.5, 1e-6);
}

TEST(MinCost, PrefersThroughputPerDollar) {
  // v100 costs 5x the k80; job x is only 2x faster on v100 → the cheaper k80 gives more steps per $.
  const Problem p = parse(R"({"workers": {"v100": 1, "k80": 1},
    "prices": {"v100": {"on_demand": 2.5, "spot": 0.75}, "k80": {"on_demand": 0.5, "spot": 0.15}},
    "jobs": [{"name": "x", "throughputs": {"v100": 2, "k80": 1}, "steps": 100}]})");
  const Allocation a = allocate(p, parse_policy("min-cost"));
  const auto f = job_type_fractions(p, a);
  EXPECT_NEAR(frac(p, f, 0, "k80"), 1.0, 1e-6);
  EXPECT_NEAR(frac(p, f, 0, "v100"), 0.0, 1e-6);
  EXPECT_NEAR(a.objective, 0.5, 1e-9);  // $/h
}

TEST(MinCostSlo, SloForcesTheFastGpu) {
  // 100 steps within 60 s needs >= 1.667 steps/s: k80 (1/s) alone cannot, so the v100 is used.
  const Problem p = parse(R"({"workers": {"v100": 1, "k80": 1},
    "prices": {"v100": {"on_demand": 2.5}, "k80": {"on_demand": 0.5}},
    "jobs": [{"name": "x", "throughputs": {"v100": 2, "k80": 1}, "steps": 100, "slo_s": 60}]})");
  const Allocation a = allocate(p, parse_policy("min-cost-slo"));
  EXPECT_TRUE(a.note.empty());
  EXPECT_GE(effective_throughputs(p, a)[0], 100.0 / 60.0 - 1e-6);
  const auto f = job_type_fractions(p, a);
  EXPECT_GT(frac(p, f, 0, "v100"), 0.5);
}

TEST(MinCostSlo, InfeasibleSlosAreReported) {
  const Problem p = parse(R"({"workers": {"v100": 1},
    "prices": {"v100": {"on_demand": 2.5}},
    "jobs": [{"name": "x", "throughputs": {"v100": 2}, "steps": 100, "slo_s": 10}]})");
  EXPECT_FALSE(allocate(p, parse_policy("min-cost-slo")).note.empty());
}

TEST(MakespanBudget, BinarySearchMeetsTheBudget) {
  // One job, 3600 steps; v100 at 2 steps/s costs $3/h, k80 at 1 step/s costs $1/h.
  // All on v100: 1800 s, $1.5. All on k80: 3600 s, $1. With budget $1.25: mix with cost 1.25 → split evenly in
  // steps? Let the time be M with fraction a on v100: 2aM + (1−a)M = 3600, M(3a + 1(1−a))/3600 = 1.25.
  // → M(1 + a) = 3600 and M(1 + 2a) = 4500 → a = 0.25/... solve: divide: (1+2a)/(1+a) = 1.25 → a = 1/3, M = 2700.
  const Problem p = parse(R"({"workers": {"v100": 1, "k80": 1},
    "prices": {"v100": {"on_demand": 3}, "k80": {"on_demand": 1}},
    "jobs": [{"name": "x", "throughputs": {"v100": 2, "k80": 1}, "steps": 3600}]})");
  PolicyOptions o;
  o.budget_usd = 1.25;
  const Allocation a = allocate(p, parse_policy("makespan-budget"), o);
  EXPECT_NEAR(a.objective, 2700.0, 0.01);
  EXPECT_LE(cost_per_hour(p, a, PriceKind::kOnDemand) * a.objective / 3600.0, 1.25 + 1e-6);
  o.budget_usd = 0.5;
  EXPECT_THROW(allocate(p, parse_policy("makespan-budget"), o), core::InputError);
}

TEST(FinishTimeFairness, EqualisesRhoAtStart) {
  // With no history, ρ_m = throughput_iso/throughput: min max ρ is max-min of throughput over isolated
  // throughput. Thesis example: isolated = 1/3 of each GPU; optimum gives every job ρ = 11/12 (= (2/3)/(8/11)).
  const Problem p = thesis_example();
  const Allocation a = allocate(p, parse_policy("finish-time-fairness"));
  EXPECT_NEAR(a.objective, 11.0 / 12.0, 1e-5);
}

TEST(SpaceSharing, PairsAddThroughput) {
  // One GPU, two jobs; alone 1 step/s each (normalised 1), together 0.8 each: max-min with space sharing runs
  // the pair all the time (0.8 each) instead of time-slicing (0.5 each).
  const Problem p = parse(R"({"workers": {"a": 1}, "jobs": [
    {"name": "x", "throughputs": {"a": 1}}, {"name": "y", "throughputs": {"a": 1}}],
    "pairs": [{"jobs": ["x", "y"], "throughputs": {"a": [0.8, 0.8]}}]})");
  const auto off = effective_throughputs(p, allocate(p, parse_policy("max-min-fairness")));
  EXPECT_NEAR(off[0], 0.5, 1e-6);
  PolicyOptions o;
  o.space_sharing = true;
  const Allocation a = allocate(p, parse_policy("max-min-fairness"), o);
  const auto on = effective_throughputs(p, a);
  EXPECT_NEAR(on[0], 0.8, 1e-6);
  EXPECT_NEAR(on[1], 0.8, 1e-6);
  expect_feasible(p, a);
}

TEST(PlacementSensitivity, UnconsolidatedColumnUsedWhenJobSpansServers) {
  // 8 GPUs in servers of 4; a 4-GPU job consolidates at 10/s, unconsolidated 6/s; an 8-GPU job can only run
  // unconsolidated. The policy's throughput for the 8-GPU job is its unconsolidated one.
  const Problem p = parse(R"({"workers": {"a": {"count": 8, "per_server": 4}}, "jobs": [
    {"name": "big", "throughputs": {"a": 20}, "unconsolidated_throughputs": {"a": 12}, "scale_factor": 8}]})");
  PolicyOptions o;
  o.placement_sensitive = true;
  const Allocation a = allocate(p, parse_policy("max-throughput"), o);
  EXPECT_NEAR(effective_throughputs(p, a)[0], 12.0, 1e-6);
  EXPECT_NEAR(effective_throughputs(p, allocate(p, parse_policy("max-throughput")))[0], 12.0, 1e-6);
}

TEST(Policy, NamesRoundTripAndUnknownIsAnError) {
  for (const auto& n : policy_names()) EXPECT_EQ(policy_name(parse_policy(n)), n);
  EXPECT_THROW(parse_policy("fastest"), core::InputError);
}

TEST(Policy, MissingDataIsAnInputError) {
  const Problem p = parse(R"({"workers": {"a": 1}, "jobs": [{"name": "x", "throughputs": {"a": 1}}]})");
  EXPECT_THROW(allocate(p, parse_policy("makespan")), core::InputError);   // no steps
  EXPECT_THROW(allocate(p, parse_policy("min-cost")), core::InputError);   // no prices
}

}  // namespace
}  // namespace strata::sched
