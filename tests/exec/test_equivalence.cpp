// tests/exec/test_equivalence: every parallel strategy trains exactly like one process — the loss of each of 5
// steps matches single-process training of the same model, data and initial weights to 1e-5 relative (fp32):
// data, tensor (with and without sequence parallelism) and pipeline parallelism (GPipe, 1F1B, interleaved,
// uneven splits), ZeRO-1/2/3, full and selective recompute, and their combinations.
#include "exec_test_util.hpp"

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
// ctest lists the strategy instead of the struct's raw bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.strategy; }

class Equivalence : public ::testing::TestWithParam<Case> {};

TEST_P(Equivalence, LossMatchesSingleProcess) {
  const auto o = tiny(GetParam().strategy);
  const auto& want = reference_losses(o.strategy.global_batch, o.optimizer);
  const RunRecord r = run_local(o);
  EXPECT_EQ(r.world_size, o.strategy.dp * o.strategy.tp * o.strategy.pp);
  expect_close(r.losses, want, kRel, GetParam().strategy);
  // The model learns (the check above would also pass for a broken optimizer that never updates).
  EXPECT_LT(want.back(), want.front());
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, Equivalence,
    ::testing::Values(Case{"dp2", "dp=2,tp=1,pp=1,mbs=2,gbs=8"}, Case{"tp2", "dp=1,tp=2,pp=1,mbs=4,gbs=8"},
                      Case{"tp2_sp", "dp=1,tp=2,pp=1,mbs=4,gbs=8,sp=on"},
                      Case{"pp2_gpipe", "dp=1,tp=1,pp=2,mbs=2,gbs=8,schedule=gpipe"},
                      Case{"pp2_1f1b", "dp=1,tp=1,pp=2,mbs=2,gbs=8,schedule=1f1b"},
                      Case{"pp3_uneven", "dp=1,tp=1,pp=3,mbs=1,gbs=8,schedule=1f1b,split=3+2+1"},
                      Case{"pp2_interleaved", "dp=1,tp=1,pp=2,v=2,mbs=2,gbs=8,schedule=interleaved"},
                      Case{"zero1", "dp=2,tp=1,pp=1,mbs=2,gbs=8,zero=1"},
                      Case{"zero2", "dp=2,tp=1,pp=1,mbs=2,gbs=8,zero=2"},
                      Case{"zero3", "dp=2,tp=1,pp=1,mbs=2,gbs=8,zero=3"},
                      Case{"pp2_full_recompute", "dp=1,tp=1,pp=2,mbs=2,gbs=8,recompute=full"},
                      Case{"tp2_selective_recompute", "dp=1,tp=2,pp=1,mbs=4,gbs=8,recompute=selective"},
                      Case{"dp2_tp2", "dp=2,tp=2,pp=1,mbs=2,gbs=8"},
                      Case{"pp2_dp2", "dp=2,tp=1,pp=2,mbs=1,gbs=8,schedule=1f1b"},
                      Case{"tp2_pp2_sp", "dp=1,tp=2,pp=2,mbs=2,gbs=8,sp=on,schedule=gpipe"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Equivalence, SgdDataParallelWithZero3AndPipeline) {
  // A second optimizer and ZeRO-3 under a pipeline (gathers per chunk before forward and backward).
  const auto o = tiny("dp=2,tp=1,pp=2,mbs=1,gbs=8,zero=3,schedule=1f1b", Optimizer::sgd);
  expect_close(run_local(o).losses, reference_losses(8, Optimizer::sgd), kRel, "zero3 pp2 sgd");
}

TEST(Equivalence, DataParallelBucketsOverlapBackward) {
  // Gradient buckets are all-reduced from the backward hooks as they fill, not after backward (DDP-style).
  auto o = tiny("dp=2,tp=1,pp=1,mbs=2,gbs=8", Optimizer::adam, 2);
  o.bucket_bytes = 16 * 1024;
  const auto r = run_local(o);
  ASSERT_EQ(r.ranks.size(), 2u);
  EXPECT_GT(r.ranks[0].dp_buckets, 2 * 4);
  EXPECT_GT(r.ranks[0].dp_buckets_overlapped, r.ranks[0].dp_buckets / 2);
}

TEST(Equivalence, InProcessRunIsDeterministic) {
  const auto o = tiny("dp=1,tp=1,pp=1,mbs=2,gbs=4");
  EXPECT_EQ(run_in_process(o).losses, run_in_process(o).losses);
}

}  // namespace
}  // namespace strata::exec
