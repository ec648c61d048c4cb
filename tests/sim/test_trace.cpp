// Tests for sim/trace: the Chrome trace of a simulated run parses as JSON, every event has ph/ts/pid/tid,
// durations are ≥ 0, and no two events of one stream (pid, tid) overlap.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "strata/core/json.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/from_cost.hpp"
#include "strata/sim/trace.hpp"

using namespace strata;

namespace {

void check_trace(const std::string& text, std::size_t min_events) {
  const auto j = core::parse_json_text(text, "trace");
  ASSERT_TRUE(j.contains("traceEvents"));
  const auto& ev = j["traceEvents"];
  ASSERT_TRUE(ev.is_array());
  EXPECT_GE(ev.size(), min_events);
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> streams;
  int complete = 0;
  for (const auto& e : ev) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("tid")) << e.dump();
    const std::string ph = e["ph"];
    if (ph == "M") continue;
    ASSERT_TRUE(e.contains("ts")) << e.dump();
    if (ph == "X") {
      ++complete;
      const double dur = e["dur"].get<double>();
      EXPECT_GE(dur, 0.0);
      streams[{e["pid"].get<int>(), e["tid"].get<int>()}].push_back({e["ts"].get<double>(), dur});
    }
  }
  EXPECT_GT(complete, 0);
  for (auto& [key, v] : streams) {
    std::sort(v.begin(), v.end());
    for (std::size_t i = 1; i < v.size(); ++i)
      ASSERT_LE(v[i - 1].first + v[i - 1].second, v[i].first + 1e-6)
          << "overlap on pid " << key.first << " tid " << key.second;
  }
}

}  // namespace

TEST(SimTrace, ValidChromeTraceForEverySchedule) {
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster("dgx-a100:2", hw::builtin_catalog());
  for (const char* text : {"dp=2,tp=2,pp=4,mbs=1,gbs=16,schedule=1f1b,zero=1",
                           "dp=2,tp=2,pp=4,mbs=1,gbs=16,v=2,schedule=interleaved",
                           "dp=2,tp=2,pp=4,mbs=1,gbs=16,schedule=gpipe,recompute=full,zero=3",
                           "dp=2,tp=2,pp=4,mbs=1,gbs=16,schedule=2bw", "dp=2,tp=2,pp=4,mbs=1,gbs=16,schedule=pipedream"}) {
    const auto s = cost::complete_strategy(cost::parse_strategy(text), m, c);
    sim::SimOptions so;
    so.keep_timeline = true;
    so.record_memory_timeline = true;
    const auto run = sim::simulate(m, c, s, {}, so);
    std::ostringstream os;
    sim::write_chrome_trace(run.input, run.result, os);
    SCOPED_TRACE(text);
    check_trace(os.str(), static_cast<std::size_t>(run.result.tasks));
  }
}

TEST(SimTrace, RequiresTimeline) {
  const auto in = sim::uniform_pipeline(cost::Schedule::one_f_one_b, 2, 4, 1, 1.0, 2.0);
  const auto r = sim::simulate_pipeline(in);
  std::ostringstream os;
  EXPECT_THROW(sim::write_chrome_trace(in, r, os), std::invalid_argument);
}
