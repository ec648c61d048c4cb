// tests/sched/test_problem: the throughputs-file reader — the documented format, and one clear InputError line
// for each kind of bad or infeasible input.
#include <gtest/gtest.h>

#include <fstream>

#include "strata/core/error.hpp"
#include "strata/sched/planner_throughputs.hpp"
#include "strata/sched/policy.hpp"

namespace strata::sched {
namespace {

Problem parse(const std::string& text) { return problem_from_json(core::Json::parse(text), "t.json"); }

std::string error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const core::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Problem, ReadsTheExampleFile) {
  const Problem p = load_problem(std::string(STRATA_SOURCE_DIR) + "/examples/sched_throughputs.json");
  ASSERT_EQ(p.num_types(), 2);
  ASSERT_EQ(p.num_jobs(), 3);
  const int v = p.type_index("v100");
  EXPECT_EQ(p.jobs[0].throughputs[v], 40);
  EXPECT_EQ(p.jobs[2].steps, 1000);
  EXPECT_EQ(p.types[v].count, 1);
  EXPECT_DOUBLE_EQ(p.types[v].price_on_demand, 2.48);
  EXPECT_DOUBLE_EQ(equal_share_throughput(p.jobs[0]), 25.0);
  EXPECT_DOUBLE_EQ(fastest_throughput(p.jobs[1]), 12.0);
}

TEST(Problem, OptionalFieldsAndPairs) {
  const Problem p = parse(R"({"workers": {"a": {"count": 8, "per_server": 2}, "b": 2},
    "entities": {"e": {"weight": 2, "policy": "fifo"}},
    "jobs": [{"name": "x", "throughputs": {"a": 3}, "scale_factor": 2, "weight": 0.5, "slo_s": 100, "steps": 7,
              "entity": "e", "arrival_s": 4, "unconsolidated_throughputs": {"a": 2}},
             {"name": "y", "throughputs": {"a": 1, "b": 1}, "scale_factor": 2}],
    "pairs": [{"jobs": ["y", "x"], "throughputs": {"a": [0.5, 2.5]}}]})");
  EXPECT_EQ(p.types[0].per_server, 2);
  EXPECT_EQ(p.types[1].per_server, 4);
  EXPECT_EQ(p.jobs[0].entity, "e");
  EXPECT_EQ(p.entities[0].policy, EntityPolicy::kFifo);
  EXPECT_EQ(p.jobs[0].unconsolidated[0], 2);
  ASSERT_EQ(p.pairs.size(), 1u);
  EXPECT_EQ(p.pairs[0].a, 0);  // stored in job order, throughputs swapped with it
  EXPECT_EQ(p.pairs[0].throughputs[0][0], 2.5);
  EXPECT_EQ(p.pairs[0].throughputs[0][1], 0.5);
}

TEST(Problem, InfeasibleInputIsOneClearLine) {
  const std::string w = R"("workers": {"v100": 1, "k80": 2})";
  auto check = [&](const std::string& jobs, const std::string& want) {
    const std::string err = error_of("{" + w + ", " + jobs + "}");
    EXPECT_NE(err.find(want), std::string::npos) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos);
    EXPECT_EQ(err.rfind("t.json", 0), 0u) << err;
  };
  check(R"("jobs": [{"name": "a", "throughputs": {"v100": -3}}])", "jobs[0].throughputs.v100: throughput must be >= 0");
  check(R"("jobs": [{"name": "a", "throughputs": {"v100": 0, "k80": 0}}])", "runs on no GPU type");
  check(R"("jobs": [{"name": "a", "throughputs": {}}])", "runs on no GPU type");
  check(R"("jobs": [{"name": "a", "throughputs": {"t4": 1}}])", "jobs[0].throughputs.t4: unknown GPU type");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}, "scale_factor": 3}])", "needs 3 GPUs but the largest");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}}, {"name": "a", "throughputs": {"k80": 1}}])",
        "duplicate job name");
  check(R"("jobs": [])", "needs at least one job");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": "fast"}}])", "expected a number");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}, "weight": 0}])", "weight: must be > 0");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}, "speed": 1}])", "jobs[0].speed: unknown field");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}, "entity": "z"}])", "unknown entity 'z'");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}}], "pairs": [{"jobs": ["a", "b"], "throughputs": {}}])",
        "unknown job 'b'");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}}, {"name": "b", "throughputs": {"k80": 1}, "scale_factor": 2}],
           "pairs": [{"jobs": ["a", "b"], "throughputs": {"k80": [1, 1]}}])", "equal scale_factor");
  check(R"("jobs": [{"name": "a", "throughputs": {"k80": 1}}], "prices": {"t4": {"spot": 1}})", "prices.t4: unknown GPU");
  EXPECT_NE(error_of(R"({"jobs": [{"name": "a", "throughputs": {"k80": 1}}]})").find("workers: missing"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"workers": {"k80": 0}, "jobs": []})").find("workers.k80: must be > 0"), std::string::npos);
}

TEST(Problem, MalformedJsonNamesLineAndColumn) {
  const std::string path = ::testing::TempDir() + "/bad_sched.json";
  std::ofstream(path) << "{\n  \"workers\": {\"a\": 1},\n  \"jobs\": [,]\n}\n";
  try {
    load_problem(path);
    FAIL() << "no error";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("bad_sched.json:3:"), std::string::npos) << e.what();
  }
}

TEST(Problem, WithWorkerTypesRemapsByName) {
  const Problem p = problem_from_json(core::Json::parse(R"({"jobs": [{"name": "a", "throughputs": {"k80": 2, "v100": 8}}]})"),
                                      "trace.json", /*require_workers=*/false);
  const Problem q = with_worker_types(p, parse_cluster_spec("v100:3,p100:2"));
  ASSERT_EQ(q.num_types(), 2);
  EXPECT_EQ(q.jobs[0].throughputs[0], 8);
  EXPECT_EQ(q.jobs[0].throughputs[1], 0);  // p100 not listed: cannot run there
}

TEST(Planner, ThroughputsFromThePlannerAreCachedAndOrdered) {
  // Two identical jobs share the planner queries; a bigger GPU type (V100 vs T4) must not be slower for BERT.
  Problem p = parse(R"({"workers": {"v100": 4, "t4": 4}, "jobs": [
    {"name": "a", "model": "bert-large", "global_batch": 16, "steps": 100},
    {"name": "b", "model": "bert-large", "global_batch": 16, "steps": 100}]})");
  const auto catalog = hw::builtin_catalog();
  EXPECT_EQ(catalog_gpu_for("v100", catalog), "v100-16gb");
  EXPECT_THROW(catalog_gpu_for("z80", catalog), core::InputError);
  fill_throughputs_from_planner(p, catalog, {});
  validate_problem(p, "t.json");
  const int v = p.type_index("v100"), t = p.type_index("t4");
  EXPECT_GT(p.jobs[0].throughputs[v], 0);
  EXPECT_GT(p.jobs[0].throughputs[t], 0);
  EXPECT_GE(p.jobs[0].throughputs[v], p.jobs[0].throughputs[t]);
  EXPECT_EQ(p.jobs[0].throughputs, p.jobs[1].throughputs);
  const Allocation a = allocate(p, parse_policy("max-min-fairness"));
  for (double n : normalized_throughputs(p, a)) EXPECT_GT(n, 0);
}

}  // namespace
}  // namespace strata::sched
