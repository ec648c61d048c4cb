// tests/sched/test_cloud: price traces (reading, piecewise-constant look-up, errors), and the simulator's cloud
// behaviour: a cost policy switches instance types when prices cross, bills each round at the price in force,
// and a spot preemption loses the round's progress and costs a restart.
#include <gtest/gtest.h>

#include <cmath>

#include "strata/core/error.hpp"
#include "strata/sched/simulate.hpp"

namespace strata::sched {
namespace {

PriceTrace trace_of(const std::string& text) { return price_trace_from_json(core::Json::parse(text), "p.json"); }

TEST(PriceTrace, PiecewiseConstantPrices) {
  const PriceTrace t = trace_of(R"({"types": {"v100": [[0, 2, 1], [100, 2, 3]]}})");
  std::vector<WorkerType> types{{"v100", 1, 1}, {"k80", 1, 1, 0.5, 0.2}};
  EXPECT_TRUE(apply_prices(t, 0, types));
  EXPECT_EQ(types[0].price_spot, 1);
  EXPECT_FALSE(apply_prices(t, 99.9, types));
  EXPECT_TRUE(apply_prices(t, 100, types));
  EXPECT_EQ(types[0].price_spot, 3);
  EXPECT_EQ(types[1].price_spot, 0.2);  // a type the trace does not name keeps its prices
}

TEST(PriceTrace, Errors) {
  EXPECT_THROW(trace_of(R"({"types": {"v100": [[5, 2, 1]]}})"), core::InputError);            // not from t = 0
  EXPECT_THROW(trace_of(R"({"types": {"v100": [[0, 2, 1], [0, 2, 1]]}})"), core::InputError);  // not increasing
  EXPECT_THROW(trace_of(R"({"types": {"v100": [[0, 2]]}})"), core::InputError);
  EXPECT_THROW(trace_of(R"({"types": {"v100": [[0, 2, -1]]}})"), core::InputError);
  EXPECT_THROW(trace_of(R"({"types": {"v100": [[0, 2, 1]]}, "preemptions": [{"t_s": 1, "type": "k80"}]})"),
               core::InputError);
  EXPECT_THROW(trace_of(R"({"types": {}, "prices": 1})"), core::InputError);
}

// One job equally fast on two types; spot prices cross after 2 rounds.
Problem one_job(double steps) {
  Problem p;
  p.types = {{"a", 1, 1, 1.0, 1.0}, {"b", 1, 1, 1.0, 1.0}};
  JobSpec j;
  j.name = "j";
  j.throughputs = {1.0, 1.0};
  j.steps = steps;
  p.jobs = {j};
  return p;
}

SimOptions cloud_options(const std::string& trace, bool switching) {
  SimOptions o;
  o.policy = parse_policy("min-cost");
  o.policy_options.price = PriceKind::kSpot;
  o.round_s = 100;
  o.restart_overhead_s = 0;
  o.price_trace = trace_of(trace);
  o.switch_on_price_change = switching;
  return o;
}

TEST(CloudSimulate, CostPolicySwitchesWhenPricesCross) {
  const std::string t = R"({"types": {"a": [[0, 9, 1], [200, 9, 4]], "b": [[0, 9, 2]]}})";
  const Problem p = one_job(400);  // 4 rounds at 1 step/s
  const SimResult dynamic = simulate(p, cloud_options(t, true));
  const SimResult fixed = simulate(p, cloud_options(t, false));
  // Dynamic: 2 rounds on a at $1/h, then 2 on b at $2/h; fixed: 2 on a at $1, 2 on a at $4.
  EXPECT_NEAR(dynamic.jobs[0].cost_usd, (200 * 1 + 200 * 2) / 3600.0, 1e-9);
  EXPECT_NEAR(fixed.jobs[0].cost_usd, (200 * 1 + 200 * 4) / 3600.0, 1e-9);
  EXPECT_EQ(dynamic.jobs[0].type_switches, 1);
  EXPECT_EQ(fixed.jobs[0].type_switches, 0);
  EXPECT_EQ(dynamic.metrics.price_changes, 2);  // the initial prices, then the crossing
}

TEST(CloudSimulate, PreemptionLosesTheRoundAndCostsARestart) {
  const std::string t = R"({"types": {"a": [[0, 9, 1]], "b": [[0, 9, 2]]}, "preemptions": [{"t_s": 150, "type": "a"}]})";
  SimOptions o = cloud_options(t, true);
  o.restart_overhead_s = 10;
  const SimResult r = simulate(one_job(300), o);
  // Round 1 on a: 90 steps (10 s start-up); round 2 (renewed) preempted at 150 s: nothing kept, 50 s billed;
  // round 3 restarts (not renewed): 90 more; round 4 (renewed): 100; round 5: the last 20 → done at 420 s.
  EXPECT_EQ(r.metrics.preemptions, 1);
  EXPECT_NEAR(r.jobs[0].completion_s, 420, 1e-9);
  EXPECT_NEAR(r.jobs[0].gpu_seconds, 100 + 50 + 100 + 100 + 20, 1e-9);
}

}  // namespace
}  // namespace strata::sched
