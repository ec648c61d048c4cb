// tests/sched/test_gavel: the Gavel-compatible conventions (issue 39) — the agnostic allocation does not depend on
// the order of the GPU types, proportional normalisation against a hand-solved LP on an unequal cluster, Gavel's
// throughput file (the committed sample and, when present, ../shared/gavel's full table), zero-allocation jobs on
// leftover GPUs, Gavel's generator conventions, the allocation reset interval, speed regardless of placement and
// Gavel's isolated share.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/sched/mechanism.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

Problem parse(const std::string& text) { return problem_from_json(core::Json::parse(text), "test.json"); }

// 8/12/16 GPUs; jobs of unequal speed-ups (one cannot use the k80s).
Problem unequal_cluster() {
  return parse(R"({"workers": {"v100": 8, "p100": 12, "k80": 16}, "jobs": [
    {"name": "a", "throughputs": {"v100": 4, "p100": 2, "k80": 1}},
    {"name": "b", "throughputs": {"v100": 3, "p100": 2.5, "k80": 1}},
    {"name": "c", "throughputs": {"v100": 1, "p100": 1, "k80": 1}, "scale_factor": 2},
    {"name": "d", "throughputs": {"v100": 6, "p100": 3, "k80": 0}}]})");
}

// X per job name and type name.
std::map<std::string, std::map<std::string, double>> by_name(const Problem& p, const Allocation& a) {
  std::map<std::string, std::map<std::string, double>> out;
  const auto f = job_type_fractions(p, a);
  for (int m = 0; m < p.num_jobs(); ++m)
    for (int t = 0; t < p.num_types(); ++t) out[p.jobs[m].name][p.types[t].name] = f[m][t];
  return out;
}

TEST(GavelAgnostic, InvariantToTheOrderOfGpuTypes) {
  const Problem p = unequal_cluster();
  for (const char* policy : {"max-min-fairness-agnostic", "makespan-agnostic", "fifo-agnostic"}) {
    SCOPED_TRACE(policy);
    Problem q = p;
    for (auto& j : q.jobs) j.steps = 1000;
    const auto base = by_name(q, allocate(q, parse_policy(policy)));
    for (const char* order : {"k80:16,v100:8,p100:12", "p100:12,k80:16,v100:8"}) {
      const Problem r = with_worker_types(q, parse_cluster_spec(order));
      const auto other = by_name(r, allocate(r, parse_policy(policy)));
      for (const auto& [job, row] : base)
        for (const auto& [type, x] : row) EXPECT_NEAR(other.at(job).at(type), x, 1e-6) << job << " on " << type;
    }
  }
}

TEST(GavelAgnostic, EachTypeInProportionToItsCount) {
  const Problem p = unequal_cluster();
  const auto x = by_name(p, allocate(p, parse_policy("max-min-fairness-agnostic")));
  // Jobs a, b, c run on every type: X_type / X_total = W_type / ΣW = 8/36, 12/36, 16/36.
  for (const char* job : {"a", "b", "c"}) {
    const auto& row = x.at(job);
    const double total = row.at("v100") + row.at("p100") + row.at("k80");
    ASSERT_GT(total, 0);
    EXPECT_NEAR(row.at("v100") / total, 8.0 / 36, 1e-9) << job;
    EXPECT_NEAR(row.at("k80") / total, 16.0 / 36, 1e-9) << job;
  }
  // d cannot use the k80s: proportional over the two types it can use, 8/20 and 12/20.
  const auto& d = x.at("d");
  EXPECT_NEAR(d.at("k80"), 0.0, 1e-12);
  EXPECT_NEAR(d.at("v100") / (d.at("v100") + d.at("p100")), 0.4, 1e-9);
}

TEST(GavelAgnostic, FillOrderIsKeptAsAnOption) {
  Problem p = unequal_cluster();
  p.jobs.pop_back();  // every job can use every type (else the LP's own split is kept)
  PolicyOptions o;
  o.agnostic_split = AgnosticSplit::kFillOrder;
  const Problem v = with_worker_types(p, parse_cluster_spec("v100:8,p100:12,k80:16"));
  const auto v100_first = by_name(v, allocate(v, parse_policy("max-min-fairness-agnostic"), o));
  const Problem r = with_worker_types(p, parse_cluster_spec("k80:16,v100:8,p100:12"));
  const auto k80_first = by_name(r, allocate(r, parse_policy("max-min-fairness-agnostic"), o));
  // The earlier convention depends on the listed order: with k80 first, job a gets more k80 time.
  EXPECT_GT(k80_first.at("a").at("k80"), v100_first.at("a").at("k80") + 0.1);
}

// Hand-solved LP: cluster a:1, b:2; J1 = (4, 1), J2..J4 = (1, 1). J1 only gains on type a, so the optimum gives
// J1 a share α of type a and the others the rest: t = (3 − α)/3 for J2..J4 and t = 4α/ref1 for J1.
//   proportional ref1 = (4·1 + 1·2)/3 = 2    → 2α = (3 − α)/3   → α = 3/7, t = 6/7
//   equal share  ref1 = (4 + 1)/2 = 2.5      → 1.6α = (3 − α)/3 → α = 15/29, t = 24/29
TEST(GavelNormalization, ProportionalEqualsTheHandSolvedLp) {
  const Problem p = parse(R"({"workers": {"a": 1, "b": 2}, "jobs": [
    {"name": "j1", "throughputs": {"a": 4, "b": 1}}, {"name": "j2", "throughputs": {"a": 1, "b": 1}},
    {"name": "j3", "throughputs": {"a": 1, "b": 1}}, {"name": "j4", "throughputs": {"a": 1, "b": 1}}]})");
  PolicyOptions o;
  o.water_filling = false;
  const Allocation prop = allocate(p, parse_policy("max-min-fairness"), o);
  EXPECT_NEAR(prop.objective, 6.0 / 7.0, 1e-6);
  EXPECT_NEAR(job_type_fractions(p, prop)[0][0], 3.0 / 7.0, 1e-6);
  EXPECT_NEAR(reference_throughput(p, p.jobs[0], Normalization::kProportional), 2.0, 1e-12);
  o.normalization = Normalization::kEqualShare;
  const Allocation eq = allocate(p, parse_policy("max-min-fairness"), o);
  EXPECT_NEAR(eq.objective, 24.0 / 29.0, 1e-6);
  EXPECT_NEAR(job_type_fractions(p, eq)[0][0], 15.0 / 29.0, 1e-6);
}

TEST(GavelNormalization, IdenticalJobsOnEightTwelveSixteen) {
  // 72 identical jobs (3, 2, 1) on 8/12/16: all 36 GPUs busy, each job 64/72 steps/s; proportional reference
  // 64/36 → level 0.5; equal-share reference 2 → 32/72.
  std::string jobs;
  for (int i = 0; i < 72; ++i)
    jobs += (i ? "," : "") + std::string(R"({"name": "j)") + std::to_string(i) +
            R"(", "throughputs": {"v100": 3, "p100": 2, "k80": 1}})";
  const Problem p = parse(R"({"workers": {"v100": 8, "p100": 12, "k80": 16}, "jobs": [)" + jobs + "]}");
  PolicyOptions o;
  o.water_filling = false;
  EXPECT_NEAR(allocate(p, parse_policy("max-min-fairness"), o).objective, 0.5, 1e-6);
  o.normalization = Normalization::kEqualShare;
  EXPECT_NEAR(allocate(p, parse_policy("max-min-fairness"), o).objective, 32.0 / 72.0, 1e-6);
}

void expect_sample_entries(const JobTypeTable& t) {
  ASSERT_EQ(t.types.num_types(), 3);
  EXPECT_EQ(t.types.types[0].name, "k80");
  EXPECT_EQ(t.types.types[2].name, "v100");
  const int v100 = 2;
  const int r50 = [&] {
    for (int i = 0; i < t.types.num_jobs(); ++i)
      if (t.types.jobs[i].name == "ResNet-50 (batch size 16)") return i;
    return -1;
  }();
  ASSERT_GE(r50, 0);
  const int e1 = t.measured_index(r50, 1), e2 = t.measured_index(r50, 2);
  ASSERT_GE(e1, 0);
  ASSERT_GE(e2, 0);
  EXPECT_DOUBLE_EQ(t.measured[e1].consolidated[v100], 11.396129065315943);
  EXPECT_DOUBLE_EQ(t.measured[e2].consolidated[v100], 13.859757680196113);
  EXPECT_DOUBLE_EQ(t.types.jobs[r50].throughputs[v100], 11.396129065315943);
  const auto pair = t.measured_pairs.find({e1, e1});
  ASSERT_NE(pair, t.measured_pairs.end());
  EXPECT_DOUBLE_EQ(pair->second[v100][0], 3.6053140003441353);
}

TEST(GavelThroughputs, CommittedSampleParses) {
  const core::Json j = core::embedded_json("sched/gavel_throughputs_sample.json");
  ASSERT_TRUE(is_gavel_throughputs(j));
  const JobTypeTable t = gavel_throughputs_from_json(j, "sample");
  EXPECT_EQ(t.types.num_jobs(), 3);
  EXPECT_EQ(t.measured.size(), 4u);
  expect_sample_entries(t);
  EXPECT_FALSE(is_gavel_throughputs(core::embedded_json("sched/gavel_job_types.json")));
}

TEST(GavelThroughputs, SharedFullTableParses) {
  const auto path = std::filesystem::path(STRATA_SOURCE_DIR) / ".." / "shared" / "gavel" / "simulation_throughputs.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const JobTypeTable t = load_job_types(path.string());
  EXPECT_EQ(t.types.num_jobs(), 26);
  EXPECT_EQ(t.measured.size(), 83u);
  std::map<int, int> per_size;
  for (const auto& m : t.measured) ++per_size[m.scale_factor];
  EXPECT_EQ(per_size[1], 26);
  EXPECT_EQ(per_size[2], 19);
  EXPECT_EQ(per_size[8], 19);
  for (const auto& j : t.types.jobs) EXPECT_GT(fastest_throughput(j), 0) << j.name;
  EXPECT_GT(t.measured_pairs.size(), 1000u);
  expect_sample_entries(t);
}

TEST(GavelThroughputs, BadKeysAreInputErrors) {
  EXPECT_THROW(gavel_throughputs_from_json(core::Json::parse(R"j({"v100": {"ResNet": {"null": 1}}})j"), "f.json"),
               core::InputError);
  EXPECT_THROW(gavel_throughputs_from_json(core::Json::parse(R"j({"v100": {"('A', 1)": {"null": -1}}})j"), "f.json"),
               core::InputError);
  EXPECT_THROW(gavel_throughputs_from_json(core::Json::parse(R"j({"v100": {"('A', 2)": {"null": 1}}})j"), "f.json"),
               core::InputError);  // no single-GPU entry
}

TEST(GavelMechanism, ZeroAllocationJobRunsOnLeftoverGpus) {
  // Types by name: k80 (0), v100 (1), 2 GPUs each. X: j0 all k80, j1 all v100, j2 nothing. With leftovers, j2
  // runs on the GPU type where it is fastest and has room (v100); without, it waits.
  const Problem p = parse(R"({"workers": {"v100": 2, "k80": 2}, "jobs": [
    {"name": "j0", "throughputs": {"v100": 2, "k80": 1}}, {"name": "j1", "throughputs": {"v100": 2, "k80": 1}},
    {"name": "j2", "throughputs": {"v100": 3, "k80": 1}}]})");
  Allocation a;
  for (int m = 0; m < 3; ++m) a.combos.push_back(Combo{{m}, 1, -1});
  a.columns = {Column{0, true}, Column{1, true}};
  a.x = {{1, 0}, {0, 1}, {0, 0}};
  RoundBook book;
  book.reset(3, 2);
  const std::vector<bool> active(3, true);
  const auto off = schedule_round(p, a, book, active, {}, RoundOptions{false, false});
  ASSERT_EQ(off.size(), 2u);
  const auto on = schedule_round(p, a, book, active, {}, RoundOptions{true, false});
  ASSERT_EQ(on.size(), 3u);
  EXPECT_EQ(on[2].combo, 2);  // sorted by (type, combo): v100 holds j1 and j2
  EXPECT_EQ(on[2].type, 1);
  // Agnostic leftover: the type with the most free GPUs. j0 takes a k80; j1 then goes to v100 (2 free), j2 to
  // either (1 free each: the lower index, k80) — not where it is fastest.
  a.x = {{1, 0}, {0, 0}, {0, 0}};
  const auto agn = schedule_round(p, a, book, active, {}, RoundOptions{true, true});
  ASSERT_EQ(agn.size(), 3u);
  EXPECT_EQ(agn[1].combo, 2);
  EXPECT_EQ(agn[1].type, 0);
  EXPECT_EQ(agn[2].combo, 1);
  EXPECT_EQ(agn[2].type, 1);
}

TEST(GavelGenerate, PhillySizesAndV100Durations) {
  const auto cluster = parse_cluster_spec("v100:8/8,p100:8/8,k80:8/8");
  const auto t = generate_trace(default_job_types(), cluster, parse_generate_spec("jobs=4000,rate=6,seed=2,multi=1"));
  std::map<int, int> sizes;
  for (const auto& j : t.jobs) {
    ++sizes[j.scale_factor];
    const double minutes = j.steps / j.throughputs[0] / 60.0;  // type 0 = v100: durations are on the V100
    EXPECT_GE(minutes, std::pow(10.0, 1.5) * (1 - 1e-9));
    EXPECT_LE(minutes, 1e4 * (1 + 1e-9));
  }
  EXPECT_NEAR(sizes[1] / 4000.0, 0.70, 0.025);
  EXPECT_NEAR(sizes[2] / 4000.0, 0.10, 0.015);
  EXPECT_NEAR(sizes[4] / 4000.0, 0.15, 0.02);
  EXPECT_NEAR(sizes[8] / 4000.0, 0.05, 0.01);
  EXPECT_EQ(sizes.size(), 4u);
}

TEST(GavelGenerate, MeasuredTableGivesMeasuredThroughputs) {
  const auto table = gavel_throughputs_from_json(core::embedded_json("sched/gavel_throughputs_sample.json"), "s");
  const auto cluster = parse_cluster_spec("v100:8/8,p100:8/8,k80:8/8");
  const auto t = generate_trace(table, cluster, parse_generate_spec("jobs=200,rate=6,seed=2,pairs=2"));
  for (const auto& j : t.jobs) {
    const int type = table.types.type_index("v100");
    for (int i = 0; i < table.types.num_jobs(); ++i)
      if (table.types.jobs[i].name == j.job_type) {
        EXPECT_DOUBLE_EQ(j.throughputs[0], table.types.jobs[i].throughputs[type]);
      }
  }
  EXPECT_FALSE(t.pairs.empty());  // measured pairs that beat time sharing
  const auto path = std::filesystem::path(STRATA_SOURCE_DIR) / ".." / "shared" / "gavel" / "simulation_throughputs.json";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no " << path;
  const JobTypeTable full = load_job_types(path.string());
  const auto m = generate_trace(full, cluster, parse_generate_spec("jobs=500,rate=6,seed=2,multi=1"));
  for (const auto& j : m.jobs) {
    int type = -1;
    for (int i = 0; i < full.types.num_jobs(); ++i)
      if (full.types.jobs[i].name == j.job_type) type = i;
    EXPECT_GE(full.measured_index(type, j.scale_factor), 0) << j.job_type << " x" << j.scale_factor;
  }
}

TEST(GavelSimulate, ResetIntervalBoundsTheSolvesAndEveryJobFinishes) {
  const auto cluster = parse_cluster_spec("v100:4,p100:4,k80:4");
  const auto trace = generate_trace(default_job_types(), cluster, parse_generate_spec("jobs=60,rate=3,seed=3"));
  SimOptions o;
  o.policy = parse_policy("max-min-fairness");
  apply_conventions(Conventions::kGavel, o);
  const auto gavel = simulate(trace, o);
  EXPECT_EQ(gavel.metrics.jobs_finished, 60);
  EXPECT_LE(gavel.metrics.reallocations, gavel.metrics.makespan_s / 1920.0 + 2);
  apply_conventions(Conventions::kStrata, o);
  const auto strata = simulate(trace, o);
  EXPECT_EQ(strata.metrics.jobs_finished, 60);
  EXPECT_GT(strata.metrics.reallocations, gavel.metrics.reallocations);
}

TEST(GavelIsolated, EveryJobOneNthOfTheClusterWhateverItsSize) {
  // 8 GPUs, four 1-GPU jobs and one 4-GPU job (n = 5, Σ sizes = 8). By size every job gets its GPUs' worth
  // (time fraction 1: 1 and 4 steps/s); Gavel's IsolatedPolicy gives each job 8/5 GPUs: the 4-GPU job runs
  // 8/(5·4) = 0.4 of the time, 1.6 steps/s; the 1-GPU jobs are capped at a time fraction of 1.
  const Problem p = parse(R"({"workers": {"v100": 4, "k80": 4}, "jobs": [
    {"name": "a", "throughputs": {"v100": 1, "k80": 1}}, {"name": "b", "throughputs": {"v100": 1, "k80": 1}},
    {"name": "c", "throughputs": {"v100": 1, "k80": 1}}, {"name": "d", "throughputs": {"v100": 1, "k80": 1}},
    {"name": "e", "throughputs": {"v100": 4, "k80": 4}, "scale_factor": 4}]})");
  const auto by_size = isolated_throughputs(p, IsolatedShare::kBySize);
  const auto per_job = isolated_throughputs(p, IsolatedShare::kPerJob);
  EXPECT_NEAR(by_size[4], 4.0, 1e-12);
  EXPECT_NEAR(per_job[4], 1.6, 1e-12);
  for (int m = 0; m < 4; ++m) {
    EXPECT_NEAR(per_job[m], 1.0, 1e-12);
    EXPECT_NEAR(by_size[m], 1.0, 1e-12);
  }
  SimOptions o;
  apply_conventions(Conventions::kGavel, o);
  EXPECT_EQ(o.policy_options.isolated_share, IsolatedShare::kPerJob);
}

TEST(GavelSimulate, SpreadJobRunsAtItsConsolidatedSpeed) {
  // An 8-GPU job on two 4-GPU servers is always spread. strata runs it at its unconsolidated 1 step/s (14,400 s);
  // Gavel's simulator reads only the consolidated entry, 4 steps/s (3,600 s). Before issue 39's follow-up the
  // Gavel conventions ran it at 1 step/s too.
  const Problem p = parse(R"({"workers": {"v100": {"count": 8, "per_server": 4}}, "jobs": [
    {"name": "x", "throughputs": {"v100": 4}, "unconsolidated_throughputs": {"v100": 1}, "scale_factor": 8,
     "steps": 14400}]})");
  SimOptions o;
  o.policy = parse_policy("max-min-fairness");
  apply_conventions(Conventions::kStrata, o);
  o.restart_overhead_s = 0;
  EXPECT_NEAR(simulate(p, o).jobs[0].jct_s, 14400.0, 1e-6);
  apply_conventions(Conventions::kGavel, o);
  EXPECT_FALSE(o.placement_affects_speed);
  EXPECT_NEAR(simulate(p, o).jobs[0].jct_s, 3600.0, 1e-6);
  o.policy_options.placement_sensitive = true;  // asking for placement keeps the unconsolidated speed
  EXPECT_NEAR(simulate(p, o).jobs[0].jct_s, 14400.0, 1e-6);
}

}  // namespace
}  // namespace strata::sched
