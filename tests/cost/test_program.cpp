// Tests for cost/program: every schedule's program is valid for random shapes; its dependency-only critical path
// equals the closed forms of cost/pipeline (AMP eq. 5, PTD-P interleaving, PipeDream steady state); in-flight
// micro-batches and weight versions equal cost/pipeline's counts; the 2BW version rule; broken programs are caught.
#include <gtest/gtest.h>

#include <random>

#include "strata/cost/program.hpp"
#include "strata/core/error.hpp"
#include "strata/cost/stage.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

const Schedule kAll[] = {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::pipedream,
                         Schedule::two_bw};

// A random valid shape for schedule s (interleaving: m a multiple of p; 2BW: m ≥ p).
ProgramShape random_shape(Schedule s, std::mt19937& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  ProgramShape sh;
  sh.schedule = s;
  sh.p = pick(s == Schedule::interleaved ? 2 : 1, 6);
  sh.v = s == Schedule::interleaved ? pick(1, 4) : 1;
  sh.m = s == Schedule::interleaved ? sh.p * pick(1, 3) : pick(1, 12);
  if (s == Schedule::two_bw) sh.m = std::max<std::int64_t>(sh.m, sh.p);
  sh.iterations = pick(1, 3);
  sh.zero_stage = pick(0, 3);
  return sh;
}

std::string shape_name(const ProgramShape& sh) {
  return std::string(to_string(sh.schedule)) + " p=" + std::to_string(sh.p) + " v=" + std::to_string(sh.v) +
         " m=" + std::to_string(sh.m) + " it=" + std::to_string(sh.iterations) + " zero=" +
         std::to_string(sh.zero_stage);
}

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-9 * std::max(1.0, std::abs(want))) << what;
}

}  // namespace

TEST(Program, EveryScheduleIsValidOnRandomShapes) {
  std::mt19937 rng(7);
  for (auto s : kAll)
    for (int trial = 0; trial < 40; ++trial) {
      const auto sh = random_shape(s, rng);
      const auto prog = build_program(sh);
      EXPECT_EQ(check_program(prog), "") << shape_name(sh);
      for (const auto& st : prog.stages) {
        int fwd = 0, bwd = 0, opt = 0;
        for (const auto& op : st.ops) {
          fwd += op.kind == ProgramOpKind::forward;
          bwd += op.kind == ProgramOpKind::backward;
          opt += op.kind == ProgramOpKind::optimizer;
        }
        EXPECT_EQ(fwd, sh.m * sh.iterations * sh.v) << shape_name(sh);
        EXPECT_EQ(bwd, fwd) << shape_name(sh);
        EXPECT_EQ(opt, s == Schedule::pipedream ? sh.m * sh.iterations : sh.iterations) << shape_name(sh);
      }
    }
}

TEST(Program, CriticalPathMatchesClosedForms) {
  std::mt19937 rng(11);
  const double tf = 0.37, tb = 0.81;
  for (auto s : kAll)
    for (int trial = 0; trial < 25; ++trial) {
      auto sh = random_shape(s, rng);
      const bool async = s == Schedule::pipedream || s == Schedule::two_bw;
      sh.iterations = async ? 4 : 1;
      const auto timing = time_program(build_program(sh), uniform_durations(sh, tf, tb));
      const std::vector<double> t(sh.p, tf + tb), e(sh.p > 1 ? sh.p - 1 : 0, 0.0);
      const double closed = pipeline_time(s, sh.m, sh.v, t, e);
      if (!async) {
        expect_rel(timing.makespan_s, closed, shape_name(sh));
      } else {
        // Steady state: the iterations between the filled pipeline and the drain take m·max t each.
        const auto& end = timing.iteration_end_s;
        expect_rel((end[2] - end[0]) / 2, closed, shape_name(sh));
      }
    }
}

TEST(Program, InFlightAndWeightVersionsMatchCostModel) {
  for (auto s : kAll)
    for (int p : {2, 3, 4})
      for (std::int64_t mult : {1, 2, 3}) {
        ProgramShape sh{s, p, s == Schedule::interleaved ? 2 : 1, p * mult, s == Schedule::pipedream ? 3 : 2, 0, 0};
        const auto prog = build_program(sh);
        for (int r = 0; r < p; ++r) {
          const auto& st = prog.stages[r];
          const double want = in_flight_micro_batches(s, p, r, sh.m, sh.v) * sh.v;
          EXPECT_EQ(static_cast<double>(st.max_in_flight), want) << shape_name(sh) << " stage " << r;
          if (s == Schedule::two_bw || s == Schedule::pipedream || s == Schedule::one_f_one_b)
            EXPECT_LE(st.max_weight_versions, weight_versions(s, p, r)) << shape_name(sh) << " stage " << r;
          if (s == Schedule::two_bw && r == 0) EXPECT_EQ(st.max_weight_versions, 2) << shape_name(sh);
        }
      }
}

TEST(Program, TwoBwVersionRuleAndWindows) {
  // notes_003 §2.1: p = m = 4, inputs 1–8 → v0, 9–12 → v1, 13–16 → v2 (1-based).
  for (std::int64_t k1 = 1; k1 <= 16; ++k1)
    EXPECT_EQ(two_bw_version(k1 - 1, 4), k1 <= 8 ? 0 : (k1 <= 12 ? 1 : 2)) << k1;
  const auto prog = build_program({Schedule::two_bw, 4, 1, 4, 4, 0, 0});
  for (const auto& op : prog.stages[2].ops) {
    if (op.kind == ProgramOpKind::forward) EXPECT_EQ(op.weight_version, two_bw_version(op.micro, 4));
    if (op.kind == ProgramOpKind::backward) {
      EXPECT_EQ(op.window, op.micro / 4);
      EXPECT_EQ(op.opens_window, op.micro % 4 == 0);
      EXPECT_EQ(op.closes_window, op.micro % 4 == 3);
    }
  }
}

TEST(Program, ResumedRunShiftsMicroBatchesAndVersions) {
  // A run resumed at iteration 5 is the tail of a run from 0: same ops, micro-batches and versions.
  for (auto s : {Schedule::one_f_one_b, Schedule::pipedream, Schedule::two_bw}) {
    const auto whole = build_program({s, 3, 1, 4, 8, 0, 0});
    const auto tail = build_program({s, 3, 1, 4, 3, 5, 0});
    EXPECT_EQ(check_program(tail), "") << to_string(s);
    for (int r = 0; r < 3; ++r) {
      const auto& w = whole.stages[r].ops;
      const auto& t = tail.stages[r].ops;
      ASSERT_GT(w.size(), t.size());
      // The first op of the tail's first micro-batch.
      const auto first = std::find_if(w.begin(), w.end(), [](const ProgramOp& op) {
        return op.kind == ProgramOpKind::forward && op.micro == 5 * 4;
      });
      ASSERT_NE(first, w.end());
      if (s == Schedule::one_f_one_b) {
        // Flush schedules: each iteration stands alone, so the tail equals the last three iterations.
        EXPECT_TRUE(std::equal(t.begin(), t.end(), w.end() - static_cast<std::ptrdiff_t>(t.size()))) << r;
      }
      // Versions count updates since the very first iteration (2BW: W(t−1) for iteration t).
      for (const auto& op : t)
        if (op.kind == ProgramOpKind::forward)
          EXPECT_GE(op.weight_version, s == Schedule::two_bw ? 4 : (s == Schedule::pipedream ? 5 * 4 : 5)) << to_string(s);
    }
  }
}

TEST(Program, GpipeRunsBackwardsLastMicroBatchFirst) {
  const auto prog = build_program({Schedule::gpipe, 3, 1, 5, 1, 0, 0});
  std::vector<std::int64_t> order;
  for (const auto& op : prog.stages[1].ops)
    if (op.kind == ProgramOpKind::backward) order.push_back(op.micro);
  EXPECT_EQ(order, (std::vector<std::int64_t>{4, 3, 2, 1, 0}));
}

TEST(Program, ZeroStagesAddTheirGathers) {
  auto count = [](const PipelineProgram& p, ProgramOpKind k) {
    int n = 0;
    for (const auto& op : p.stages[0].ops) n += op.kind == k;
    return n;
  };
  const auto z1 = build_program({Schedule::one_f_one_b, 2, 1, 4, 2, 0, 1});
  const auto z3 = build_program({Schedule::one_f_one_b, 2, 1, 4, 2, 0, 3});
  EXPECT_EQ(count(z1, ProgramOpKind::param_gather), 2);
  EXPECT_EQ(count(z1, ProgramOpKind::zero3_gather), 0);
  EXPECT_EQ(count(z3, ProgramOpKind::zero3_gather), 2 * 4 * 2);  // before every forward and backward
  EXPECT_EQ(count(z3, ProgramOpKind::param_gather), 0);
}

TEST(Program, BrokenProgramsAreCaught) {
  auto prog = build_program({Schedule::one_f_one_b, 2, 1, 2, 1, 0, 0});
  auto bad = prog;
  // Stage 0 waits for micro-batch 0's gradient before sending its activation: stage 1 can never start.
  auto& ops = bad.stages[0].ops;
  const auto recv = std::find_if(ops.begin(), ops.end(), [](const ProgramOp& op) {
    return op.kind == ProgramOpKind::recv_gradient;
  });
  ASSERT_NE(recv, ops.end());
  std::rotate(ops.begin() + 1, recv, recv + 1);
  EXPECT_NE(check_program(bad).find("deadlock"), std::string::npos) << check_program(bad);
  auto twice = prog;
  twice.stages[0].ops.push_back(twice.stages[0].ops[0]);
  EXPECT_NE(check_program(twice), "");
  auto version = build_program({Schedule::two_bw, 4, 1, 2, 3, 0, 0});  // m < p: W(t−1) not produced in time
  EXPECT_NE(check_program(version).find("weight version"), std::string::npos) << check_program(version);
  EXPECT_THROW(build_program({Schedule::interleaved, 4, 2, 6, 1, 0, 0}), std::invalid_argument);
  EXPECT_THROW(build_program({Schedule::one_f_one_b, 4, 2, 8, 1, 0, 0}), std::invalid_argument);
}

namespace {
std::vector<ProgramOp> compute_ops(const PipelineProgram& prog, int stage) {
  std::vector<ProgramOp> out;
  for (const auto& op : prog.stages[stage].ops)
    if (op.kind == ProgramOpKind::forward || op.kind == ProgramOpKind::backward) out.push_back(op);
  return out;
}
}  // namespace

TEST(Program, OneFOneBWarmupDepth) {
  // PipeDream-Flush: stage s runs pp−s−1 forwards before its first backward and keeps at most pp−s in flight.
  const int pp = 4;
  const auto prog = build_program({Schedule::one_f_one_b, pp, 1, 8, 1, 0, 0});
  for (int s = 0; s < pp; ++s) {
    const auto ops = compute_ops(prog, s);
    int warm = 0;
    while (ops[warm].kind == ProgramOpKind::forward) ++warm;
    EXPECT_EQ(warm, pp - s) << "stage " << s;  // warm-up forwards + the first steady forward
    EXPECT_EQ(prog.stages[s].max_in_flight, pp - s);
  }
}

TEST(Program, InterleavedFollowsMegatronOrder) {
  // pp = 2, v = 2, m = 4: forwards go through chunk 0 for micro-batches 0,1, then chunk 1 for 0,1, then 2,3...
  const auto ops = compute_ops(build_program({Schedule::interleaved, 2, 2, 4, 1, 0, 0}), 0);
  std::vector<std::pair<std::int64_t, int>> fwd;
  for (const auto& op : ops)
    if (op.kind == ProgramOpKind::forward) fwd.push_back({op.micro, op.chunk});
  const std::vector<std::pair<std::int64_t, int>> expect = {{0, 0}, {1, 0}, {0, 1}, {1, 1},
                                                            {2, 0}, {3, 0}, {2, 1}, {3, 1}};
  EXPECT_EQ(fwd, expect);
  // Stage 0 warms up with (pp−1)·2 + (v−1)·pp = 4 forwards, then one more before its first backward, which is
  // chunk 1 (the model's last chunk on stage 0).
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ops[i].kind, ProgramOpKind::forward) << i;
  EXPECT_EQ(ops[5].kind, ProgramOpKind::backward);
  EXPECT_EQ(ops[5].chunk, 1);
}

TEST(Program, OpJsonRoundTrip) {
  const auto prog = build_program({Schedule::two_bw, 3, 1, 4, 2, 1, 2});
  for (const auto& st : prog.stages)
    for (const auto& op : st.ops) EXPECT_EQ(program_op_from_json(to_json(op), {"test", ""}), op);
  EXPECT_THROW(program_op_from_json(nlohmann::json{{"op", "jump"}, {"iteration", 0}}, {"test", ""}), core::InputError);
}
