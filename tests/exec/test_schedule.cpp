// tests/exec/test_schedule: pipeline schedules — every stage runs each (micro-batch, chunk) forward and backward
// exactly once, no schedule deadlocks with async sends / blocking receives, and the known shapes (1F1B warm-up
// depth, GPipe all-forward-first, Megatron's interleaved order) hold.
#include <gtest/gtest.h>

#include "strata/exec/schedule.hpp"

namespace strata::exec {
namespace {
using cost::Schedule;

std::vector<std::vector<PipeOp>> all_stages(Schedule s, int pp, int v, int m) {
  std::vector<std::vector<PipeOp>> out;
  for (int st = 0; st < pp; ++st) out.push_back(stage_schedule(s, pp, v, m, st));
  return out;
}

TEST(Schedule, EveryScheduleIsCompleteAndDeadlockFree) {
  for (int pp = 1; pp <= 5; ++pp)
    for (int m = 1; m <= 9; ++m) {
      for (auto s : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::pipedream, Schedule::two_bw})
        EXPECT_EQ(check_schedule(all_stages(s, pp, 1, m), pp, 1, m), "") << "pp=" << pp << " m=" << m;
      if (pp >= 2 && m % pp == 0)
        for (int v = 2; v <= 3; ++v) {
          EXPECT_EQ(check_schedule(all_stages(Schedule::interleaved, pp, v, m), pp, v, m), "")
              << "interleaved pp=" << pp << " v=" << v << " m=" << m;
          EXPECT_EQ(check_schedule(all_stages(Schedule::gpipe, pp, v, m), pp, v, m), "")
              << "gpipe pp=" << pp << " v=" << v << " m=" << m;
        }
    }
}

TEST(Schedule, CheckerFindsADeadlock) {
  // Stage 0 waits for a backward before doing the forward the next stage needs.
  std::vector<std::vector<PipeOp>> bad = {{{false, 0, 0}, {true, 0, 0}}, {{true, 0, 0}, {false, 0, 0}}};
  EXPECT_NE(check_schedule(bad, 2, 1, 1).find("deadlock"), std::string::npos);
}

TEST(Schedule, OneFOneBWarmupDepth) {
  // PipeDream-Flush: stage s runs pp−s−1 forwards before its first backward, and keeps at most pp−s in flight.
  const int pp = 4, m = 8;
  for (int s = 0; s < pp; ++s) {
    const auto ops = stage_schedule(Schedule::one_f_one_b, pp, 1, m, s);
    int warm = 0;
    while (ops[warm].forward) ++warm;
    EXPECT_EQ(warm, pp - s) << "stage " << s;  // warm-up forwards + the first steady forward
    int in_flight = 0, peak = 0;
    for (const auto& op : ops) {
      in_flight += op.forward ? 1 : -1;
      peak = std::max(peak, in_flight);
    }
    EXPECT_EQ(peak, pp - s);
  }
}

TEST(Schedule, GpipeRunsAllForwardsFirst) {
  const auto ops = stage_schedule(Schedule::gpipe, 3, 1, 5, 1);
  ASSERT_EQ(ops.size(), 10u);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(ops[i].forward);
  for (int i = 5; i < 10; ++i) EXPECT_FALSE(ops[i].forward);
}

TEST(Schedule, InterleavedFollowsMegatronOrder) {
  // pp = 2, v = 2, m = 4: forwards go through chunk 0 for micro-batches 0,1, then chunk 1 for 0,1, then 2,3...
  const auto ops = stage_schedule(Schedule::interleaved, 2, 2, 4, 0);
  std::vector<PipeOp> fwd;
  for (const auto& op : ops)
    if (op.forward) fwd.push_back(op);
  const std::vector<PipeOp> expect = {{true, 0, 0}, {true, 1, 0}, {true, 0, 1}, {true, 1, 1},
                                      {true, 2, 0}, {true, 3, 0}, {true, 2, 1}, {true, 3, 1}};
  EXPECT_EQ(fwd, expect);
  // Stage 0 warms up with (pp−1)·2 + (v−1)·pp = 4 forwards.
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(ops[i].forward);
  EXPECT_TRUE(ops[4].forward);
  EXPECT_FALSE(ops[5].forward);
  // Backwards mirror the chunks: the first backward on stage 0 is chunk 1 (the model's last chunk there).
  EXPECT_EQ(ops[5].chunk, 1);
}

}  // namespace
}  // namespace strata::exec
