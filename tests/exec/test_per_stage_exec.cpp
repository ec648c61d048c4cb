// tests/exec/test_per_stage_exec: per-stage strategies run for real (issues 14, 41) — pipelines whose stages have
// their own dp and tp (the boundary activations and gradients re-sharded between them) and any ZeRO stage train
// exactly like one process: each step's loss matches single-process training of the same model, data and initial
// weights to 1e-5 relative (gradients averaged over the same global batch; tied embeddings summed across the
// first and the last stage whatever their widths).
#include "exec_test_util.hpp"
#include "strata/core/error.hpp"

namespace strata::exec {
namespace {
using testing::expect_close;
using testing::reference_losses;
using testing::tiny;

void expect_single_process_losses(const char* spec, int world) {
  const auto o = tiny(spec);
  const RunRecord r = run_local(o);
  EXPECT_EQ(r.world_size, world) << spec;
  expect_close(r.losses, reference_losses(8, Optimizer::adam), 1e-5, spec);
  for (std::size_t i = 0; i < r.losses.size(); ++i) std::printf("  %s step %zu loss %.7f\n", spec, i, r.losses[i]);
}

TEST(PerStageExec, ThreeStagesDp211MatchSingleProcess) {
  for (const char* spec : {"mbs=1,gbs=8,schedule=1f1b,stages=0+1:dp2:tp1:2/2:dp1:tp1:2/3:dp1:tp1:2",
                           "mbs=2,gbs=8,schedule=gpipe,stages=0:dp1:tp1:3/1+2:dp2:tp1:1/3:dp1:tp1:2"})
    expect_single_process_losses(spec, 4);
}

// Issue 41: stage 0 two replicas at tp 1, stage 1 one replica at tp 2 — each micro-batch's activation goes from
// the replica that holds it to both tp ranks of stage 1, and its gradient back — with ZeRO-1 sharding stage 0's
// optimizer state (which holds the tied embedding).
TEST(PerStageExec, DifferentTpAndDpWithZero1OneFOneB) {
  expect_single_process_losses("mbs=1,gbs=8,schedule=1f1b,zero=1,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3", 4);
}

// The mirror image under GPipe: tp 2 first, then two replicas at tp 1 holding the head (ZeRO-1 on the last stage).
TEST(PerStageExec, DifferentTpAndDpWithZero1GPipe) {
  expect_single_process_losses("mbs=2,gbs=8,schedule=gpipe,zero=1,stages=0+1:dp1:tp2:3/2+3:dp2:tp1:3", 4);
}

// tp differs, dp equal (1), three stages; and the reduce-scatter ZeRO stages, whose tied-embedding copies are still
// per-replica partial sums when the first and the last stage exchange them.
TEST(PerStageExec, DifferentTpZero2And3) {
  expect_single_process_losses("mbs=2,gbs=8,schedule=1f1b,stages=0+1:dp1:tp2:2/2:dp1:tp1:2/3:dp1:tp1:2", 4);
  expect_single_process_losses("mbs=1,gbs=8,schedule=1f1b,zero=2,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3", 4);
  expect_single_process_losses("mbs=2,gbs=8,schedule=gpipe,zero=3,stages=0+1:dp1:tp2:3/2+3:dp2:tp1:3", 4);
}

TEST(PerStageExec, UnsupportedPerStageFormsNameTheReason) {
  const auto message = [](const std::string& spec) {
    try {
      tiny(spec);
    } catch (const core::InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  const auto pipedream = message("mbs=1,gbs=8,schedule=pipedream,stages=0+1:dp2:tp1:3/2:dp1:tp1:3");
  EXPECT_NE(pipedream.find("per-stage strategies run gpipe or 1f1b"), std::string::npos) << pipedream;
  EXPECT_EQ(pipedream.find('\n'), std::string::npos);
  const auto layers = message("mbs=1,gbs=8,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3,layers=-/tp2.full*3");
  EXPECT_NE(layers.find("per-layer choices (layers=) in a per-stage strategy"), std::string::npos) << layers;
  EXPECT_NO_THROW(tiny("mbs=1,gbs=8,zero=1,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3"));
}

}  // namespace
}  // namespace strata::exec
