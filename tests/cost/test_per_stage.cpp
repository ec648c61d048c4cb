// tests/cost/test_per_stage: the cost model of per-stage strategies (issue 14) — closed forms reduce to the uniform
// ones for equal widths, a stage costs what the uniform model gives the same devices and widths, the re-sharding
// pieces partition the activation, and memory/sync follow each stage's own dp.
#include <gtest/gtest.h>

#include <numeric>

#include "helpers.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/per_stage.hpp"
#include "strata/cost/program.hpp"
#include "strata/cost/reshard.hpp"
#include "strata/cost/stage.hpp"

namespace {

using namespace strata;
using cost_test::cluster;
using cost_test::run;

TEST(PerStage, ClosedFormsReduceToUniformForEqualWidths) {
  const std::vector<double> t = {3e-3, 5e-3, 4e-3}, e = {0.2e-3, 0.1e-3};
  const std::vector<int> r = {2, 2, 2};
  const std::int64_t M = 16, m = 8;
  using S = cost::Schedule;
  // gpipe/1f1b: Σt + Σe + (m−1)·max t — the uniform separable objective (AMP eq. 5).
  for (S s : {S::gpipe, S::one_f_one_b})
    EXPECT_NEAR(cost::per_stage_pipeline_time(s, M, r, t, e), cost::pipeline_iteration_time(s, m, 1, t, e), 1e-15);
  // pipedream/2bw: M·max t_i/r_i = m·max t.
  for (S s : {S::pipedream, S::two_bw})
    EXPECT_NEAR(cost::per_stage_pipeline_time(s, M, r, t, e), cost::pipeline_time(s, m, 1, t, e), 1e-15);
}

TEST(PerStage, UnequalWidthsClosedForms) {
  using S = cost::Schedule;
  const std::vector<double> t = {6e-3, 2e-3}, e = {1e-3}, sync = {0.5e-3, 0.1e-3};
  const std::vector<int> r = {3, 1};
  const std::int64_t M = 12;  // m_0 = 4, m_1 = 12
  // 1f1b: Σt + Σe + max((4−1)·6 + 0.5, (12−1)·2 + 0.1) ms = 9 + 22.1 ms.
  EXPECT_NEAR(cost::per_stage_iteration_time(S::one_f_one_b, M, r, t, e, sync), 31.1e-3, 1e-15);
  // pipedream: M·max((6 + 0.5)/3, 2.1, 1) ms = 12 · 2.1666… ms (PipeDream's max_i T_i/r_i).
  EXPECT_NEAR(cost::per_stage_iteration_time(S::pipedream, M, r, t, e, sync), 12 * 6.5e-3 / 3, 1e-15);
  // 2bw: max(4·6 + 0.5, 12·2 + 0.1, 12·1) ms.
  EXPECT_NEAR(cost::per_stage_iteration_time(S::two_bw, M, r, t, e, sync), 24.5e-3, 1e-15);
  EXPECT_THROW(cost::per_stage_iteration_time(S::interleaved, M, r, t, e, sync), core::InputError);
}

// Each stage is costed with the uniform building blocks on its own devices and widths: two V100 stages that leave
// the rest of the cluster idle cost what the uniform model gives them on a cluster of just those devices.
TEST(PerStage, StagesCostAsTheUniformModelOnTheirDevices) {
  const auto m = model::zoo_model("small-gpt");
  const auto per = run(m, cluster("p3.8xlarge:3+g4dn.12xlarge:1"), "mbs=2,gbs=16,stages=0+1:dp2:tp1:5/2+3:dp2:tp1:5");
  const auto uni = run(m, cluster("p3.8xlarge:1"), "dp=2,pp=2,mbs=2,gbs=16,split=5+5");
  ASSERT_EQ(per.stages.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(per.stages[i].time_s, uni.stages[i].time_s);
    EXPECT_DOUBLE_EQ(per.stages[i].memory_bytes, uni.stages[i].memory_bytes);
    EXPECT_DOUBLE_EQ(per.stages[i].dp_comm_s, uni.stages[i].dp_comm_s);
  }
}

// Wider stages sync over their own dp group and run fewer micro-batches per replica (m_i = gbs/(dp_i·mbs)).
TEST(PerStage, StagesKeepTheirOwnWidths) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cluster("p3.8xlarge:3+g4dn.12xlarge:1");
  const auto e = run(m, c, "mbs=2,gbs=16,stages=v100:dp2:tp1:6/t4:dp1:tp4:4");
  EXPECT_GT(e.stages[0].dp_comm_s, 0);   // 2 replicas
  EXPECT_EQ(e.stages[1].dp_comm_s, 0);   // 1 replica
  EXPECT_GT(e.stages[1].tp_comm_s, 0);   // tp 4
  EXPECT_EQ(e.stages[0].tp_comm_s, 0);
  const std::vector<int> r = {2, 1};
  const std::vector<double> t = {e.stages[0].time_s, e.stages[1].time_s}, p2p = {e.stages[0].p2p_s};
  const std::vector<double> sync = {e.stages[0].dp_comm_s + e.stages[0].optimizer_s,
                                    e.stages[1].dp_comm_s + e.stages[1].optimizer_s};
  // Unequal widths: the closed form's pipeline with each stage's sync from its own last backward (cost/per_stage).
  const std::vector<double> f = {e.stages[0].fwd_s, e.stages[1].fwd_s}, b = {e.stages[0].bwd_s, e.stages[1].bwd_s};
  const auto timing = cost::per_stage_timing({cost::Schedule::one_f_one_b, 8, r, f, b, p2p, sync});
  EXPECT_DOUBLE_EQ(e.pipeline_time_s, timing.iteration_s);
  // Stage 0 finishes last (the gradient ends there), so its sync follows the whole pipeline.
  EXPECT_DOUBLE_EQ(timing.iteration_s, std::max(timing.pipeline_s + sync[0],
                                                timing.pipeline_s - e.stages[0].bwd_s - p2p[0] / 2 + sync[1]));
  EXPECT_DOUBLE_EQ(timing.pipeline_s, cost::per_stage_pipeline_time(cost::Schedule::one_f_one_b, 8, r, t, p2p));
  EXPECT_GT(e.stages[0].p2p_s, 0);
}

// Equal widths: the estimate is the pipeline program of one replica pipeline (m = M/r), timed by time_program with
// each stage's sync + step as its optimizer op — the uniform plans' estimate/simulator equality, for per-stage plans.
TEST(PerStage, EqualWidthsAreTimedByThePipelineProgram) {
  const auto m = model::zoo_model("small-gpt");
  const auto c = cluster("p3.8xlarge:3+g4dn.12xlarge:1");
  for (const char* sched : {"1f1b", "gpipe"}) {
    const auto e = run(m, c, std::string("mbs=1,gbs=32,stages=t4:dp2:tp2:3/v100:dp2:tp1:4/v100:dp2:tp2:3,schedule=") +
                                 sched);
    cost::ProgramShape sh;
    sh.schedule = cost::parse_schedule(sched, "test");
    sh.p = 3;
    sh.m = 16;
    cost::ProgramDurations d;
    for (int i = 0; i < 3; ++i) {
      d.fwd_s.push_back({e.stages[i].fwd_s});
      d.bwd_s.push_back({e.stages[i].bwd_s});
      d.p2p_s.push_back({e.stages[i].p2p_s / 2});
      d.optimizer_s.push_back(e.stages[i].dp_comm_s + e.stages[i].optimizer_s);
    }
    EXPECT_DOUBLE_EQ(e.pipeline_time_s, cost::time_program(cost::build_program(sh), d).makespan_s) << sched;
  }
  // A late stage's large sync overlaps the drain of the stages before it: less than the closed form, which adds it
  // after stage 0's last backward.
  const std::vector<double> f = {1.0, 1.0}, b = {2.0, 2.0}, e = {0.0}, sync = {0.0, 5.0}, t = {3.0, 3.0};
  const std::vector<int> r = {2, 2};
  const auto timing = cost::per_stage_timing({cost::Schedule::one_f_one_b, 8, r, f, b, e, sync});
  EXPECT_NEAR(timing.pipeline_s, (4 + 2 - 1) * 3.0, 1e-12);
  EXPECT_NEAR(timing.iteration_s, (4 + 2 - 1) * 3.0 - 2.0 + 5.0, 1e-12);  // stage 1 ends one backward earlier
  // Closed form: Σt + max((m − 1)·t + sync) = 6 + 9 + 5.
  EXPECT_NEAR(cost::per_stage_iteration_time(cost::Schedule::one_f_one_b, 8, r, t, e, sync), 20.0, 1e-12);
}

TEST(PerStage, ReshardPiecesPartitionTheActivation) {
  const std::vector<int> a = {0, 1, 2, 3}, b = {4, 5, 6, 7};
  // dp 2 × tp 2 → dp 1 × tp 4: micro-batch 1 leaves replica 1 (devices 2, 3) in 4 slices of a quarter.
  auto pairs = cost::reshard_pairs({a, 2, 2}, {b, 1, 4}, 1, 8.0);
  ASSERT_EQ(pairs.size(), 4u);
  double sum = 0;
  for (const auto& p : pairs) {
    EXPECT_TRUE(p.from == 2 || p.from == 3);
    EXPECT_DOUBLE_EQ(p.bytes, 2.0);
    sum += p.bytes;
  }
  EXPECT_DOUBLE_EQ(sum, 8.0);
  // tp 4 → tp 1: four quarters into one device.
  pairs = cost::reshard_pairs({a, 1, 4}, {b, 4, 1}, 6, 8.0);
  ASSERT_EQ(pairs.size(), 4u);
  for (const auto& p : pairs) EXPECT_EQ(p.to, 6);  // replica 6 mod 4 = 2
  // Equal (dp, tp) = 1: one direct piece of the whole tensor.
  pairs = cost::reshard_pairs({std::vector<int>{0}, 1, 1}, {std::vector<int>{5}, 1, 1}, 0, 8.0);
  ASSERT_EQ(pairs.size(), 1u);
  EXPECT_DOUBLE_EQ(pairs[0].bytes, 8.0);
}

TEST(PerStage, ReshardTimeIsTheBottleneckPiece) {
  const auto c = cluster("p3.8xlarge:3+g4dn.12xlarge:1");
  const std::vector<int> v = {0}, t4 = {12};
  const double bytes = 4e6;
  // One piece across nodes: the p2p of the whole tensor, there and back.
  EXPECT_DOUBLE_EQ(cost::reshard_time(c, {v, 1, 1}, {t4, 1, 1}, bytes), 2 * cost::p2p_device_time(c, 0, 12, bytes));
  // Same device: nothing moves.
  EXPECT_EQ(cost::reshard_time(c, {v, 1, 1}, {v, 1, 1}, bytes), 0.0);
  // tp 4 senders into one receiver across one NIC: four quarter pieces sharing the NIC = one whole-tensor time.
  const std::vector<int> four = {12, 13, 14, 15};
  cost::CommOptions co;
  co.concurrent_groups_per_nic = 4;
  EXPECT_DOUBLE_EQ(cost::reshard_time(c, {four, 1, 4}, {v, 1, 1}, bytes),
                   2 * cost::p2p_device_time(c, 12, 0, bytes / 4, co));
}

}  // namespace
