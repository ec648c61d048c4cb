// tests/exec/test_per_stage_exec: per-stage strategies run for real (issue 14) — a 3-stage pipeline whose first
// stage has two replicas (dp = 2, 1, 1 on 4 processes) trains exactly like one process: each step's loss matches
// single-process training of the same model, data and initial weights to 1e-5 relative (gradients averaged over
// the same global batch; tied embeddings summed across the replicated first and the single last stage).
#include "exec_test_util.hpp"
#include "strata/core/error.hpp"

namespace strata::exec {
namespace {
using testing::expect_close;
using testing::reference_losses;
using testing::tiny;

TEST(PerStageExec, ThreeStagesDp211MatchSingleProcess) {
  for (const char* spec : {"mbs=1,gbs=8,schedule=1f1b,stages=0+1:dp2:tp1:2/2:dp1:tp1:2/3:dp1:tp1:2",
                           "mbs=2,gbs=8,schedule=gpipe,stages=0:dp1:tp1:3/1+2:dp2:tp1:1/3:dp1:tp1:2"}) {
    const auto o = tiny(spec);
    const RunRecord r = run_local(o);
    EXPECT_EQ(r.world_size, 4) << spec;
    expect_close(r.losses, reference_losses(8, Optimizer::adam), 1e-5, spec);
  }
}

TEST(PerStageExec, UnsupportedPerStageFormsNameTheReason) {
  EXPECT_THROW(tiny("mbs=1,gbs=8,schedule=pipedream,stages=0+1:dp2:tp1:3/2:dp1:tp1:3"), core::InputError);
  EXPECT_THROW(tiny("mbs=1,gbs=8,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3"), core::InputError);
}

}  // namespace
}  // namespace strata::exec
