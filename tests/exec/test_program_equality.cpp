// tests/exec/test_program_equality: the executor runs exactly the pipeline program the simulator replays. For
// every schedule and random (pp, m, v) (plus dp and ZeRO stages), each rank records the program ops it executed
// (RunOptions::record_ops); the sequence must equal cost::build_program's ops for that rank's stage, and the
// simulator's compute-stream tasks must follow the same program. The losses must still match single-process
// training (the program changed the executor's loop, not its arithmetic).
#include <fmt/format.h>

#include <cctype>
#include <random>

#include "exec_test_util.hpp"
#include "strata/cost/program.hpp"
#include "strata/sim/pipeline.hpp"

namespace strata::exec {
namespace {
using testing::tiny;

struct Case {
  std::string strategy;
};

// Random shapes per schedule on ≤ 4 ranks (tiny-gpt has 2 blocks: 4 chain entries).
std::vector<Case> cases() {
  std::mt19937 rng(2026);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<Case> out;
  for (const char* sched : {"gpipe", "1f1b", "pipedream", "2bw"}) {
    const int pp = pick(2, 3), m = pick(pp, 5);
    out.push_back({fmt::format("dp=1,tp=1,pp={},mbs=1,gbs={},schedule={}", pp, m, sched)});
  }
  out.push_back({fmt::format("dp=1,tp=1,pp=2,mbs=1,gbs={},v=2,schedule=interleaved", 2 * pick(1, 2))});
  out.push_back({"dp=2,tp=1,pp=2,mbs=1,gbs=6,schedule=1f1b,zero=1"});
  out.push_back({"dp=2,tp=1,pp=2,mbs=1,gbs=4,schedule=gpipe,zero=3"});
  return out;
}

class ProgramEquality : public ::testing::TestWithParam<Case> {};

TEST_P(ProgramEquality, ExecutorRunsTheProgramTheSimulatorReplays) {
  auto o = tiny(GetParam().strategy, Optimizer::sgd, 3);
  o.record_ops = true;
  const auto rec = run_local(o);
  const auto& s = o.strategy;
  const auto prog = cost::build_program(cost::program_shape(s, o.steps));
  ASSERT_EQ(cost::check_program(prog), "");
  ASSERT_EQ(rec.ranks.size(), static_cast<std::size_t>(s.dp * s.tp * s.pp));
  for (const auto& r : rec.ranks) {
    const auto& want = prog.stages.at(r.stage).ops;
    ASSERT_EQ(r.executed_ops.size(), want.size()) << "rank " << r.rank;
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(r.executed_ops[i], want[i]) << "rank " << r.rank << " op " << i << ": ran "
                                            << cost::to_json(r.executed_ops[i]).dump() << ", program "
                                            << cost::to_json(want[i]).dump();
  }
  // The simulator's compute stream of each stage: the program's forwards, backwards and optimizer steps in order.
  const std::int64_t m = s.num_micro_batches();
  auto in = sim::uniform_pipeline(s.schedule, s.pp, m, s.virtual_stages, 1.0, 2.0, o.steps, 1);
  const auto res = sim::simulate_pipeline(in, {true, false});
  for (int st = 0; st < s.pp; ++st) {
    std::vector<std::pair<sim::TaskTag, std::int64_t>> got, want;
    for (int t = 0; t < static_cast<int>(res.info.size()); ++t) {
      const auto& inf = res.info[t];
      if (inf.worker == st && (inf.tag == sim::TaskTag::forward || inf.tag == sim::TaskTag::backward))
        got.push_back({inf.tag, inf.micro});
    }
    for (const auto& op : prog.stages[st].ops) {
      if (op.kind == cost::ProgramOpKind::forward) want.push_back({sim::TaskTag::forward, op.micro});
      if (op.kind == cost::ProgramOpKind::backward) want.push_back({sim::TaskTag::backward, op.micro});
    }
    EXPECT_EQ(got, want) << "stage " << st;
  }
  EXPECT_EQ(rec.losses.size(), static_cast<std::size_t>(o.steps));
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string n = info.param.strategy;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(AllSchedules, ProgramEquality, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace strata::exec
