// tests/exec/test_layerwise_exec: per-layer strategies run (issue 16, Galvatron-BMW) — 4 processes whose layers
// mix SDP (ZeRO-3) and plain DP and mix full / selective / no recompute train exactly like one process: every
// step's loss matches single-process training to 1e-5 relative (fp32). Plus what the runtime refuses (a layer tp
// other than its stage's) and the layout it builds (SDP layers' weights sharded, DP layers' replicated).
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
  Optimizer optimizer;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.strategy; }

class LayerwiseEquivalence : public ::testing::TestWithParam<Case> {};

TEST_P(LayerwiseEquivalence, LossMatchesSingleProcess) {
  const auto& c = GetParam();
  const auto o = tiny(c.strategy, c.optimizer);
  ASSERT_EQ(o.layer_choices.size(), 6u) << "the strategy stayed per-layer";
  const auto& want = reference_losses(o.strategy.global_batch, o.optimizer);
  const RunRecord r = run_local(o);
  EXPECT_EQ(r.world_size, 4);
  expect_close(r.losses, want, kRel, c.strategy);
  EXPECT_LT(want.back(), want.front());
}

// tiny-gpt's chain: embedding, 4 blocks, head (tied embeddings: the head's copy and the embedding may sit in
// different regions). Layers list: data parallel (dp/sdp) and recompute (none/selective/full) per entry.
INSTANTIATE_TEST_SUITE_P(
    FourProcesses, LayerwiseEquivalence,
    ::testing::Values(
        Case{"dp4_mixed", "mbs=1,gbs=8,stages=0+1+2+3:dp4:tp1:6,layers=sdp+full+sdp.selective*2+sdp.full+dp",
             Optimizer::adam},
        Case{"dp4_mixed_zero2_sgd",
             "mbs=2,gbs=8,zero=2,stages=0+1+2+3:dp4:tp1:6,layers=dp+sdp.full+dp.selective+sdp+dp.full+sdp",
             Optimizer::sgd},
        Case{"dp2_pp2_mixed", "mbs=1,gbs=8,schedule=1f1b,zero=1,stages=0+1:dp2:tp1:3/2+3:dp2:tp1:3,"
                              "layers=sdp+full+sdp.selective/dp.full+sdp+sdp",
             Optimizer::adam},
        Case{"dp2_tp2_mixed", "mbs=2,gbs=8,stages=0+1+2+3:dp2:tp2:6,layers=tp2.sdp+tp2.full+tp2+tp2.sdp.selective+"
                              "tp2.sdp.full+tp2",
             Optimizer::adam}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(LayerwiseExec, StandInIsUniformWithPerEntryChoices) {
  const auto o = tiny("mbs=1,gbs=8,zero=3,stages=0+1+2+3:dp4:tp1:6,layers=sdp+full+sdp*2+sdp.full+dp");
  EXPECT_TRUE(cost::is_uniform(o.strategy));
  EXPECT_EQ(o.strategy.dp, 4);
  EXPECT_EQ(o.strategy.zero_stage, 2);                   // DP layers: zero capped at 2
  EXPECT_EQ(o.strategy.recompute, model::Recompute::full);  // least-memory mode (host-memory lower bound)
  ASSERT_EQ(o.layer_choices.size(), 6u);
  EXPECT_EQ(o.layer_choices[1].data_parallel, cost::LayerDataParallel::dp);
  EXPECT_EQ(o.layer_choices[1].recompute, model::Recompute::full);
  EXPECT_EQ(o.layer_choices[5].data_parallel, cost::LayerDataParallel::dp);
  EXPECT_EQ(o.layer_choices[4].data_parallel, cost::LayerDataParallel::sdp);
  // The worker config carries them.
  const auto back = run_options_from_json(to_json(o), "config");
  EXPECT_EQ(back.layer_choices, o.layer_choices);
}

TEST(LayerwiseExec, LayerTpOtherThanTheStagesIsRefusedInOneLine) {
  try {
    tiny("mbs=2,gbs=8,stages=0+1+2+3:dp2:tp2:6,layers=tp2*2+tp1+tp2*3");
    FAIL() << "per-layer tp accepted";
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("stage 0 layer 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("layer tp (1) different from its stage's tp (2)"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_THROW(tiny("mbs=2,gbs=8,schedule=pipedream,stages=0+1+2+3:dp4:tp1:6,layers=sdp*3+dp*3"), core::InputError);
}

}  // namespace
}  // namespace strata::exec
