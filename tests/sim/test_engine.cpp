// Tests for sim/engine: stream order, dependencies, fair sharing of links (finish times recomputed when flows
// start/stop), compute/communication overlap slowdown, memory peaks, deadlock detection.
#include <gtest/gtest.h>

#include "strata/sim/engine.hpp"

using namespace strata::sim;

TEST(SimEngine, StreamOrderAndDependencies) {
  TaskGraphBuilder b;
  const int s0 = b.add_stream(), s1 = b.add_stream();
  const int a = b.add_compute(s0, 1.0);
  const int c = b.add_compute(s0, 2.0);
  const int d = b.add_compute(s1, 0.5);
  b.add_edge(a, d);
  auto r = run(b.build());
  EXPECT_DOUBLE_EQ(r.start_s[c], 1.0);
  EXPECT_DOUBLE_EQ(r.end_s[c], 3.0);
  EXPECT_DOUBLE_EQ(r.start_s[d], 1.0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 3.0);
}

TEST(SimEngine, TwoFlowsShareALink) {
  TaskGraphBuilder b;
  const int link = b.add_resource(100.0);
  const int s0 = b.add_stream(), s1 = b.add_stream();
  const int f0 = b.add_comm(s0, 1.0, 0.0, {link});
  const int f1 = b.add_comm(s1, 1.0, 0.0, {link});
  auto r = run(b.build());
  EXPECT_DOUBLE_EQ(r.end_s[f0], 2.0);  // each gets half the bandwidth the whole time
  EXPECT_DOUBLE_EQ(r.end_s[f1], 2.0);
}

TEST(SimEngine, FinishTimesRecomputedWhenAFlowLeaves) {
  TaskGraphBuilder b;
  const int link = b.add_resource(10.0);
  const int s0 = b.add_stream(), s1 = b.add_stream();
  const int shortf = b.add_comm(s0, 0.5, 0.0, {link});  // alone 0.5 s
  const int longf = b.add_comm(s1, 2.0, 0.0, {link});   // alone 2 s
  auto r = run(b.build());
  // Shared until the short one finishes at 1.0 (0.5 s of work at half speed); the long one has done 0.5 s of
  // work by then and runs its remaining 1.5 s alone: ends at 2.5.
  EXPECT_DOUBLE_EQ(r.end_s[shortf], 1.0);
  EXPECT_DOUBLE_EQ(r.end_s[longf], 2.5);
}

TEST(SimEngine, BottleneckLinkLimitsSharing) {
  // A flow bottlenecked on a slow NIC is not slowed by a second flow on its fast NVLink port.
  TaskGraphBuilder b;
  const int nvlink = b.add_resource(300.0), nic = b.add_resource(25.0);
  const int s0 = b.add_stream(), s1 = b.add_stream();
  const int across = b.add_comm(s0, 1.0, 0.0, {nvlink, nic});
  const int inside = b.add_comm(s1, 1.0, 0.0, {nvlink});
  auto r = run(b.build());
  EXPECT_DOUBLE_EQ(r.end_s[across], 1.0);  // 300/2 = 150 > 25: unaffected
  EXPECT_DOUBLE_EQ(r.end_s[inside], 1.5);  // half of NVLink until `across` leaves at 1.0, then alone
}

TEST(SimEngine, LatencyIsAFixedTail) {
  TaskGraphBuilder b;
  const int link = b.add_resource(1.0);
  const int s0 = b.add_stream(), s1 = b.add_stream();
  const int f0 = b.add_comm(s0, 1.0, 0.25, {link});
  const int f1 = b.add_comm(s1, 0.75, 0.0, {link});
  auto r = run(b.build());
  // Both share for 1.5 s (0.75 of work each), then f0 waits its 0.25 s latency.
  EXPECT_DOUBLE_EQ(r.end_s[f1], 1.5);
  EXPECT_DOUBLE_EQ(r.end_s[f0], 1.75);
}

TEST(SimEngine, OverlapSlowdown) {
  TaskGraphBuilder b;
  b.set_overlap_slowdown(2.0);
  const int grp = b.add_overlap_group();
  const int cs = b.add_stream(), ms = b.add_stream();
  const int comp = b.add_compute(cs, 1.0, grp);
  const int comm = b.add_comm(ms, 0.5, 0.0, {}, grp);
  auto r = run(b.build());
  // 0.5 s at half speed (0.25 of work), then 0.75 s alone.
  EXPECT_DOUBLE_EQ(r.end_s[comm], 0.5);
  EXPECT_DOUBLE_EQ(r.end_s[comp], 1.25);
}

TEST(SimEngine, MemoryPeakAndTime) {
  TaskGraphBuilder b;
  const int acc = b.add_memory_account(10.0);
  const int s = b.add_stream();
  const int t0 = b.add_compute(s, 1.0);
  const int t1 = b.add_compute(s, 1.0);
  b.set_memory(t0, acc, 5.0, 0.0);
  b.set_memory(t1, acc, 3.0, -8.0);
  EngineOptions o;
  o.record_memory_timeline = true;
  auto r = run(b.build(), o);
  EXPECT_DOUBLE_EQ(r.memory[acc].peak_bytes, 18.0);
  EXPECT_DOUBLE_EQ(r.memory[acc].peak_time_s, 1.0);
  EXPECT_DOUBLE_EQ(r.memory[acc].timeline.back().second, 10.0);
}

TEST(SimEngine, DeadlockIsDetected) {
  TaskGraphBuilder b;
  const int s = b.add_stream();
  const int a = b.add_compute(s, 1.0);
  const int c = b.add_compute(s, 1.0);
  b.add_edge(c, a);  // against stream order
  EXPECT_THROW(run(b.build()), std::logic_error);
}
