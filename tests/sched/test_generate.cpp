// tests/sched/test_generate: the generated workloads' extras — space-sharing pairs from the job-type table's
// co-location model, SLOs, entities, priorities — and that each one changes what its policy does: with them,
// --space-sharing, min-cost-slo and hierarchical differ from their plain forms, and agnostic policies differ from
// each other at load.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>

#include "strata/core/error.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

double max_abs_difference(const Problem& p, const Allocation& a, const Allocation& b) {
  const auto fa = job_type_fractions(p, a), fb = job_type_fractions(p, b);
  double d = 0;
  for (int m = 0; m < p.num_jobs(); ++m)
    for (int t = 0; t < p.num_types(); ++t) d = std::max(d, std::abs(fa[m][t] - fb[m][t]));
  return d;
}

TEST(GenerateExtras, KeepTheBaseTraceAndFollowTheirSpec) {
  const auto table = default_job_types();
  const auto cluster = parse_cluster_spec("v100:4,p100:4,k80:4");
  const auto plain = generate_trace(table, cluster, parse_generate_spec("jobs=300,rate=2,seed=5"));
  const auto rich =
      generate_trace(table, cluster, parse_generate_spec("jobs=300,rate=2,seed=5,pairs=2,slo=1,entities=3,priority=0.2"));
  ASSERT_EQ(rich.num_jobs(), plain.num_jobs());
  int high = 0, in_entity[3] = {0, 0, 0};
  for (int i = 0; i < plain.num_jobs(); ++i) {
    EXPECT_EQ(rich.jobs[i].steps, plain.jobs[i].steps);
    EXPECT_EQ(rich.jobs[i].arrival_s, plain.jobs[i].arrival_s);
    EXPECT_EQ(plain.jobs[i].slo_s, kNoSlo);
    // SLO = {1.2, 2, 10} × the duration on the fastest type.
    const double factor = rich.jobs[i].slo_s / (rich.jobs[i].steps / fastest_throughput(rich.jobs[i]));
    EXPECT_TRUE(std::abs(factor - 1.2) < 1e-9 || std::abs(factor - 2) < 1e-9 || std::abs(factor - 10) < 1e-9) << factor;
    high += rich.jobs[i].weight == 5;
    ASSERT_EQ(rich.jobs[i].entity.substr(0, 1), "e");
    ++in_entity[std::stoi(rich.jobs[i].entity.substr(1))];
  }
  EXPECT_NEAR(high / 300.0, 0.2, 0.07);
  for (int c : in_entity) EXPECT_GT(c, 60);
  ASSERT_EQ(rich.entities.size(), 3u);
  EXPECT_EQ(rich.entities[2].weight, 3.0);
  // Pairs: at most 2 per first job, equal sizes, throughputs = the co-location model's fraction of solo.
  ASSERT_GT(rich.pairs.size(), 100u);
  for (const auto& ps : rich.pairs) {
    EXPECT_LT(ps.a, ps.b);
    const auto& a = rich.jobs[ps.a];
    const auto& b = rich.jobs[ps.b];
    for (int t = 0; t < rich.num_types(); ++t) {
      const double fa = ps.throughputs[t][0] / a.throughputs[t], fb = ps.throughputs[t][1] / b.throughputs[t];
      EXPECT_NEAR(fa, fb, 1e-12);  // one fraction for both jobs of a pair
      EXPECT_GT(fa, 0.5);          // only pairs that beat time sharing
      EXPECT_LE(fa, 0.9 + 1e-12);  // the table's interference factor
    }
  }
}

TEST(GenerateExtras, ColocationModelClosedForm) {
  const auto table = default_job_types();
  // A3C (0.3) + ResNet-18 (0.5) fit in one GPU: both keep 0.9; CycleGAN (0.9) + ResNet-50 (0.95): 0.9 / 1.85.
  auto idx = [&](const char* n) {
    for (int k = 0; k < table.types.num_jobs(); ++k)
      if (table.types.jobs[k].name == n) return k;
    return -1;
  };
  EXPECT_NEAR(colocated_fraction(table, idx("A3C"), idx("ResNet-18")), 0.9, 1e-12);
  EXPECT_NEAR(colocated_fraction(table, idx("CycleGAN"), idx("ResNet-50")), 0.9 / 1.85, 1e-12);
}

TEST(GenerateExtras, ParseErrors) {
  EXPECT_THROW(parse_generate_spec("jobs=5,pairs=-1"), core::InputError);
  EXPECT_THROW(parse_generate_spec("jobs=5,slo=2"), core::InputError);
  EXPECT_THROW(parse_generate_spec("jobs=5,priority=1.5"), core::InputError);
  JobTypeTable no_colocation = default_job_types();
  no_colocation.gpu_demand.clear();
  EXPECT_THROW(generate_trace(no_colocation, parse_cluster_spec("v100:2"), parse_generate_spec("jobs=5,pairs=1")),
               core::InputError);
}

// A static workload larger than the cluster: every extra must change its policy's allocation.
Problem loaded_static(const char* extras, int jobs = 12) {
  return generate_trace(default_job_types(), parse_cluster_spec("v100:2,p100:2,k80:2"),
                        parse_generate_spec(fmt::format("jobs={},seed=3{}", jobs, extras)));
}

TEST(GenerateExtras, SpaceSharingRaisesTheFairShare) {
  const Problem p = loaded_static(",pairs=3");
  PolicyOptions plain, ss;
  ss.space_sharing = true;
  const Allocation a = allocate(p, parse_policy("max-min-fairness"), plain);
  const Allocation b = allocate(p, parse_policy("max-min-fairness"), ss);
  // Co-location is never worse (thesis §5.3) and here strictly better: pairs of demand <= 1 run near full speed.
  EXPECT_GT(b.objective, a.objective * 1.01);
  double pair_time = 0;
  for (std::size_t k = 0; k < b.combos.size(); ++k)
    if (b.combos[k].pair >= 0)
      for (double x : b.x[k]) pair_time += x;
  EXPECT_GT(pair_time, 0.1);
}

TEST(GenerateExtras, PairsSpreadOverServersProgress) {
  // Two paired 8-GPU jobs on 4-GPU servers always run spread: a pair slows down as each job does alone
  // (unconsolidated / consolidated). Before, the simulator ran spread pairs at 0 while the LP counted them at full
  // speed, and such jobs never finished (space sharing lost 20 % on continuous-multiple traces).
  const Problem p = problem_from_json(core::Json::parse(R"({"workers": {"v100": {"count": 8, "per_server": 4}},
    "jobs": [{"name": "a", "throughputs": {"v100": 10}, "unconsolidated_throughputs": {"v100": 5}, "scale_factor": 8,
              "steps": 36000},
             {"name": "b", "throughputs": {"v100": 10}, "unconsolidated_throughputs": {"v100": 5}, "scale_factor": 8,
              "steps": 36000}],
    "pairs": [{"jobs": ["a", "b"], "throughputs": {"v100": [8, 8]}}]})"), "t.json");
  const Combo pair{{0, 1}, 8, 0};
  EXPECT_DOUBLE_EQ(combo_throughput(p, pair, Column{0, false}, 0), 4.0);  // 8 x 5/10
  EXPECT_DOUBLE_EQ(combo_throughput(p, pair, Column{0, true}, 1), 4.0);   // 8 GPUs > a server: spread anyway
  SimOptions o;
  o.policy = parse_policy("max-min-fairness");
  const SimResult plain = simulate(p, o);
  o.policy_options.space_sharing = true;
  const SimResult ss = simulate(p, o);
  ASSERT_EQ(ss.metrics.jobs_finished, 2);
  // Together at 4 steps/s each beats taking turns at 5 (2.5 each on average): 2.5 h vs ~4 h.
  EXPECT_LT(ss.metrics.avg_jct_s, plain.metrics.avg_jct_s * 0.7);
}

TEST(GenerateExtras, MinCostSloMeetsSlosThatMinCostMisses) {
  // 5 jobs on 6 GPUs: the SLOs are feasible, and the cheapest-per-step types are too slow for the tight ones.
  const Problem p = loaded_static(",slo=1", 5);
  const Allocation plain = allocate(p, parse_policy("min-cost"));
  const Allocation slo = allocate(p, parse_policy("min-cost-slo"));
  EXPECT_GT(max_abs_difference(p, plain, slo), 1e-3);
  ASSERT_EQ(slo.note, "");
  const auto tp_plain = effective_throughputs(p, plain), tp = effective_throughputs(p, slo);
  int missed_by_plain = 0;
  for (int m = 0; m < p.num_jobs(); ++m) {
    if (p.jobs[m].slo_s == kNoSlo) continue;
    EXPECT_GE(tp[m], p.jobs[m].steps / p.jobs[m].slo_s * (1 - 1e-6));
    missed_by_plain += tp_plain[m] < p.jobs[m].steps / p.jobs[m].slo_s * (1 - 1e-6);
  }
  EXPECT_GT(missed_by_plain, 0);
}

TEST(GenerateExtras, MinCostSloJobFinishesBeforeItsDeadlineInSimulation) {
  // K80 is cheaper per step, V100 needed for the tight SLO: the fluid optimum finishes exactly at the deadline, the
  // round-based mechanism (restart costs when the job changes type) needs the simulator's slack to make it.
  const Problem p = problem_from_json(core::Json::parse(R"({"workers": {"v100": 1, "k80": 1},
    "prices": {"v100": {"on_demand": 2.48}, "k80": {"on_demand": 0.45}},
    "jobs": [{"name": "a", "throughputs": {"v100": 10, "k80": 2}, "steps": 36000, "slo_s": 4320}]})"), "t.json");
  SimOptions o;
  o.policy = parse_policy("min-cost-slo");
  const SimResult r = simulate(p, o);
  ASSERT_EQ(r.metrics.slo_jobs, 1);
  EXPECT_EQ(r.metrics.slo_violations, 0);
  EXPECT_LE(r.jobs[0].jct_s, 4320.0);
  EXPECT_GT(r.jobs[0].jct_s, 3600.0);  // still not all on the V100: it saves money
}

TEST(GenerateExtras, HierarchicalFollowsEntityWeights) {
  const Problem p = loaded_static(",entities=3");
  const Allocation flat = allocate(p, parse_policy("max-min-fairness"));
  const Allocation tiered = allocate(p, parse_policy("hierarchical"));
  EXPECT_GT(max_abs_difference(p, flat, tiered), 1e-3);
  // Normalised throughput per entity, per unit of weight: the heaviest entity gets the most.
  const auto norm = normalized_throughputs(p, tiered);
  double share[3] = {0, 0, 0};
  for (int m = 0; m < p.num_jobs(); ++m) share[std::stoi(p.jobs[m].entity.substr(1))] += norm[m];
  EXPECT_GT(share[2], share[0]);
}

TEST(GenerateExtras, AgnosticPoliciesDifferAtLoad) {
  const auto trace = generate_trace(default_job_types(), parse_cluster_spec("v100:2,p100:2,k80:2"),
                                    parse_generate_spec("jobs=40,rate=1.5,seed=2"));
  auto jct = [&](const char* policy) {
    SimOptions o;
    o.policy = parse_policy(policy);
    return simulate(trace, o).metrics.avg_jct_s;
  };
  const double las = jct("max-min-fairness-agnostic"), fifo = jct("fifo-agnostic"), sjf = jct("sjf-agnostic");
  EXPECT_GT(std::abs(las - fifo), 0.02 * las);
  EXPECT_LT(sjf, fifo);  // shortest-first beats arrival order on average JCT
}

}  // namespace
}  // namespace strata::sched
