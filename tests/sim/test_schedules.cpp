// Tests for sim/schedule + sim/pipeline on abstract inputs: closed forms of notes_003 (Table 1.1, §3.3) on
// uniform stages with zero communication, activation/weight-version memory per schedule, the 2BW version rule.
#include <gtest/gtest.h>

#include <set>

#include "strata/sim/pipeline.hpp"
#include "strata/cost/program.hpp"

using namespace strata;
using namespace strata::sim;
using cost::Schedule;

namespace {
void expect_rel(double got, double want, double tol = 1e-9) {
  EXPECT_NEAR(got, want, tol * std::abs(want)) << "got " << got << " want " << want;
}
}  // namespace

TEST(SimSchedule, GpipeAndOneFOneBClosedForm) {
  for (auto s : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (int p : {1, 2, 4, 7}) {
      for (std::int64_t m : {1, 3, 8, 17}) {
        const double tf = 0.37, tb = 0.81;
        auto res = simulate_pipeline(uniform_pipeline(s, p, m, 1, tf, tb));
        expect_rel(res.iteration_time_s, (m + p - 1) * (tf + tb));
        // Bubble: idle share of the iteration (p−1)/(m+p−1), i.e. (p−1)/m of the ideal time.
        expect_rel(res.bubble_fraction, double(p - 1) / double(m + p - 1), 1e-9);
      }
    }
  }
}

TEST(SimSchedule, InterleavedClosedForm) {
  for (int p : {2, 3, 4}) {
    for (int v : {2, 3, 4}) {
      for (std::int64_t mult : {1, 2, 3}) {
        const std::int64_t m = mult * p;
        const double tf = 0.5, tb = 1.1;
        auto res = simulate_pipeline(uniform_pipeline(Schedule::interleaved, p, m, v, tf, tb));
        expect_rel(res.iteration_time_s, (m * v + p - 1) * (tf + tb) / v);
      }
    }
  }
}

TEST(SimSchedule, InterleavedRejectsMNotMultipleOfP) {
  EXPECT_THROW(simulate_pipeline(uniform_pipeline(Schedule::interleaved, 4, 6, 2, 1, 2)), std::invalid_argument);
}

TEST(SimSchedule, ActivationsInFlight) {
  const int p = 5;
  const std::int64_t m = 9;
  auto one = simulate_pipeline(uniform_pipeline(Schedule::one_f_one_b, p, m, 1, 1, 2));
  auto gp = simulate_pipeline(uniform_pipeline(Schedule::gpipe, p, m, 1, 1, 2));
  for (int r = 0; r < p; ++r) {
    // act_bytes = 1 per micro-batch, nothing else: the memory peak counts micro-batches held.
    EXPECT_DOUBLE_EQ(one.workers[r].peak_memory_bytes, p - r) << "1F1B stage " << r;
    EXPECT_EQ(one.workers[r].max_in_flight, p - r);
    EXPECT_DOUBLE_EQ(gp.workers[r].peak_memory_bytes, m) << "GPipe stage " << r;
  }
  // Fewer micro-batches than stages: 1F1B holds min(p − r, m).
  auto few = simulate_pipeline(uniform_pipeline(Schedule::one_f_one_b, p, 2, 1, 1, 2));
  EXPECT_DOUBLE_EQ(few.workers[0].peak_memory_bytes, 2);
}

TEST(SimSchedule, InterleavedWarmupCounts) {
  // Megatron: rank r runs (p−r−1)·2 + (v−1)·p forwards before its first backward (m > p).
  const int p = 4, v = 2;
  for (int r = 0; r < p; ++r) {
    std::vector<cost::ProgramOp> ops;
    const auto prog = cost::build_program({Schedule::interleaved, p, v, 8, 1, 0, 0});
    for (const auto& op : prog.stages[r].ops)
      if (op.kind == cost::ProgramOpKind::forward || op.kind == cost::ProgramOpKind::backward) ops.push_back(op);
    int warm = 0;
    while (ops[warm].kind == cost::ProgramOpKind::forward) ++warm;
    EXPECT_EQ(warm, (p - r - 1) * 2 + (v - 1) * p + 1) << r;  // + the first steady-state forward
    // Every (micro, chunk) appears once forward and once backward.
    std::set<std::pair<std::int64_t, int>> f, b;
    for (auto& op : ops) {
      if (op.kind == cost::ProgramOpKind::forward) EXPECT_TRUE(f.insert({op.micro, op.chunk}).second);
      if (op.kind == cost::ProgramOpKind::backward) EXPECT_TRUE(b.insert({op.micro, op.chunk}).second);
    }
    EXPECT_EQ(f.size(), 16u);
    EXPECT_EQ(f, b);
  }
}

TEST(SimSchedule, PipeDreamSteadyStateIsMaxStage) {
  // Heterogeneous stages: steady state runs one micro-batch per max stage time.
  auto in = uniform_pipeline(Schedule::pipedream, 4, 8, 1, 1.0, 2.0, 4);
  const double tf[] = {1.0, 1.5, 0.7, 1.2}, tb[] = {2.0, 2.6, 1.9, 2.2};
  for (int r = 0; r < 4; ++r) {
    in.workers[r].chunks[0].fwd_s = tf[r];
    in.workers[r].chunks[0].bwd_s = tb[r];
  }
  auto res = simulate_pipeline(in);
  expect_rel(res.iteration_time_s / in.m, 1.5 + 2.6);
  EXPECT_NEAR(res.workers[1].bubble_fraction, 0.0, 1e-9);  // the bottleneck stage never idles
}

TEST(SimSchedule, PipeDreamUniformAndStashing) {
  const int p = 4;
  auto in = uniform_pipeline(Schedule::pipedream, p, 6, 1, 1.0, 2.0, 3);
  for (auto& w : in.workers) w.weight_bytes = 100.0;
  auto res = simulate_pipeline(in);
  expect_rel(res.iteration_time_s, 6 * 3.0);
  for (int r = 0; r < p; ++r) {
    // Weight stashing: one version per in-flight micro-batch, at most p − r (+ the freshest), never above p.
    EXPECT_LE(res.workers[r].max_weight_versions, p - r + 1);
    EXPECT_LE(res.workers[r].max_weight_versions, p);
    EXPECT_TRUE(res.workers[r].version_rule_ok);
  }
  EXPECT_GE(res.workers[0].max_weight_versions, 2);
}

TEST(SimSchedule, TwoBwVersionRuleAndTwoVersions) {
  // notes_003 §2.1: p = m = 4, inputs 1–8 → v0, 9–12 → v1, 13–16 → v2 (1-based).
  for (std::int64_t k1 = 1; k1 <= 16; ++k1) {
    const std::int64_t want = k1 <= 8 ? 0 : (k1 <= 12 ? 1 : 2);
    EXPECT_EQ(cost::two_bw_version(k1 - 1, 4), want) << k1;
  }
  for (int p : {2, 4, 6}) {
    for (std::int64_t m : {std::int64_t(p), std::int64_t(2 * p)}) {
      auto in = uniform_pipeline(Schedule::two_bw, p, m, 1, 1.0, 2.0, 5);
      for (auto& w : in.workers) w.weight_bytes = 1000.0;
      auto res = simulate_pipeline(in);
      for (int r = 0; r < p; ++r) {
        EXPECT_LE(res.workers[r].max_weight_versions, 2) << "p " << p << " m " << m << " r " << r;
        EXPECT_TRUE(res.workers[r].version_rule_ok);
        // Memory never exceeds two weight versions + p − r micro-batches of activations.
        EXPECT_LE(res.workers[r].peak_memory_bytes, 2 * 1000.0 + (p - r));
      }
      EXPECT_EQ(res.workers[0].max_weight_versions, 2);
      expect_rel(res.iteration_time_s, m * 3.0);
    }
  }
}

TEST(SimSchedule, MultiIterationFlushIsRepeatable) {
  auto one = simulate_pipeline(uniform_pipeline(Schedule::one_f_one_b, 4, 8, 1, 1, 2, 1));
  auto three = simulate_pipeline(uniform_pipeline(Schedule::one_f_one_b, 4, 8, 1, 1, 2, 3));
  expect_rel(three.iteration_time_s, one.iteration_time_s);
  expect_rel(three.makespan_s, 3 * one.makespan_s);
}

TEST(SimSchedule, Deterministic) {
  auto in = uniform_pipeline(Schedule::interleaved, 4, 8, 2, 1.0, 2.0, 2, 2);
  auto a = simulate_pipeline(in, {true, false});
  auto b = simulate_pipeline(in, {true, false});
  EXPECT_EQ(a.engine.start_s, b.engine.start_s);
  EXPECT_EQ(a.engine.end_s, b.engine.end_s);
  EXPECT_EQ(a.events, b.events);
}

TEST(SimSchedule, DpBucketsOverlapTheLastBackward) {
  // One stage, one micro-batch, two replicas: F 1 s, B 2 s split into 2 buckets released at 2 s and 3 s.
  for (double comm : {0.5, 1.5}) {
    auto in = uniform_pipeline(Schedule::one_f_one_b, 1, 1, 1, 1.0, 2.0, 1, 2);
    in.resource_bw = {1e9};
    in.sync.resize(1);
    in.sync[0].grad_buckets = {{{Flow{comm, 0.0, {0}}}, {Flow{comm, 0.0, {0}}}}};
    for (auto& w : in.workers) w.optimizer_s = 0.1;
    auto res = simulate_pipeline(in);
    // Buckets run back to back on the dp stream: max(release, previous end) + comm.
    const double b1 = 2.0 + comm, b2 = std::max(3.0, b1) + comm;
    expect_rel(res.iteration_time_s, b2 + 0.1);
  }
}

TEST(SimSchedule, OneFOneBWithP2pAddsFillAndDrainAtLeast) {
  // Sends of e per direction: the pipeline fill and drain each cross p−1 links, so the iteration takes at least
  // (m+p−1)(tf+tb) + 2(p−1)e; the formula (AMP eq. 5) adds Σe for both directions once.
  const int p = 4;
  const std::int64_t m = 8;
  const double tf = 1, tb = 2, e = 0.25;
  auto in = uniform_pipeline(Schedule::one_f_one_b, p, m, 1, tf, tb);
  for (auto& w : in.workers) {
    w.chunks[0].send_next = Flow{e, 0, {}};
    w.chunks[0].send_prev = Flow{e, 0, {}};
  }
  auto res = simulate_pipeline(in);
  EXPECT_GE(res.iteration_time_s + 1e-9, (m + p - 1) * (tf + tb) + 2 * (p - 1) * e);
}
