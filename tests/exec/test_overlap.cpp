// tests/exec/test_overlap: Oases' overlapped tensor-parallel schedule (overlap=on, exec/nn_overlap.cpp) trains
// exactly like one process — each micro-batch split into two sub-batches whose TP all-reduces (forward and the
// input-gradient ones of backward) are issued as c10d work handles while the other sub-batch computes; the loss of
// each of 5 steps matches single-process training to 1e-5 relative (fp32), on 2 and 4 local processes.
#include "exec_test_util.hpp"
#include "strata/core/error.hpp"

namespace strata::exec {
namespace {
using testing::expect_close;
using testing::reference_losses;
using testing::tiny;

constexpr double kRel = 1e-5;

struct Case {
  const char* name;
  const char* strategy;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.strategy; }

class OverlapEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(OverlapEquivalence, LossMatchesSingleProcess) {
  const auto o = tiny(GetParam().strategy);
  ASSERT_TRUE(o.strategy.tp_overlap);
  const auto& want = reference_losses(o.strategy.global_batch, o.optimizer);
  const RunRecord r = run_local(o);
  EXPECT_EQ(r.world_size, o.strategy.dp * o.strategy.tp * o.strategy.pp);
  expect_close(r.losses, want, kRel, GetParam().strategy);
  EXPECT_LT(want.back(), want.front());
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, OverlapEquivalence,
    ::testing::Values(Case{"tp2", "dp=1,tp=2,pp=1,mbs=4,gbs=8,overlap=on"},
                      Case{"tp4", "dp=1,tp=4,pp=1,mbs=2,gbs=8,overlap=on"},
                      Case{"dp2_tp2", "dp=2,tp=2,pp=1,mbs=2,gbs=8,overlap=on"},
                      Case{"tp2_pp2_selective", "dp=1,tp=2,pp=2,mbs=2,gbs=8,overlap=on,recompute=selective,"
                                                "schedule=1f1b"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(OverlapOptions, RefusesWhatItDoesNotRun) {
  const auto m = model::zoo_model("tiny-gpt");
  const auto refused = [&](const std::string& s) {
    try {
      make_run_options(m, cost::parse_strategy(s), 0);
    } catch (const core::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused("dp=1,tp=2,pp=1,mbs=4,gbs=8,overlap=on,sp=on").find("sp=on"), std::string::npos);
  EXPECT_NE(refused("dp=1,tp=2,pp=1,mbs=4,gbs=8,overlap=on,recompute=full").find("recompute=full"),
            std::string::npos);
  EXPECT_EQ(refused("dp=1,tp=2,pp=1,mbs=4,gbs=8,overlap=on"), "");
}

}  // namespace
}  // namespace strata::exec
