// tests/exec/test_host_memory: the executor's host-memory need against what it allocates — the Adam states are
// exactly 8 bytes per parameter the rank holds (counted here from the runtime's own init_entry), sharded by ZeRO,
// summed over ranks — and the refusal of a run this host cannot hold.
#include <gtest/gtest.h>

#include "../../src/exec/rt.hpp"
#include "strata/core/error.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/exec/run.hpp"
#include "strata/model/model.hpp"

namespace strata::exec {
namespace {

RunOptions options(const std::string& strategy, Optimizer opt) {
  RunOptions o = make_run_options(model::zoo_model("tiny-gpt"), cost::parse_strategy(strategy), 0);
  o.optimizer = opt;
  return o;
}

// Parameters tensor-parallel rank 0 holds for chain entries [first, last), from the runtime's initialiser.
double runtime_params(const GptDims& d, int first, int last, int tp) {
  double n = 0;
  for (int e = first; e < last; ++e)
    for (const auto& p : rt::init_entry(d, e, tp, 0, false, 1)) n += static_cast<double>(p.value.numel());
  return n;
}

TEST(HostMemory, AdamStatesAreEightBytesPerParameterOfTheRank) {
  for (const std::string s : {"dp=1,tp=1,pp=1,gbs=2", "dp=1,tp=2,pp=1,gbs=2"}) {
    const auto adam = options(s, Optimizer::adam), sgd = options(s, Optimizer::sgd);
    const double params = runtime_params(adam.model, 0, adam.model.chain_length(), adam.strategy.tp);
    EXPECT_DOUBLE_EQ(host_memory_need(adam).largest_rank_bytes - host_memory_need(sgd).largest_rank_bytes,
                     8 * params)
        << s;
  }
}

TEST(HostMemory, ZeroShardsTheOptimizerStatesOverDp) {
  const auto adam = options("dp=2,tp=1,pp=1,gbs=4,zero=1", Optimizer::adam);
  const auto sgd = options("dp=2,tp=1,pp=1,gbs=4,zero=1", Optimizer::sgd);
  const double params = runtime_params(adam.model, 0, adam.model.chain_length(), 1);
  EXPECT_DOUBLE_EQ(host_memory_need(adam).largest_rank_bytes - host_memory_need(sgd).largest_rank_bytes,
                   8 * params / 2);
}

TEST(HostMemory, AllRanksSumTheStagesAndReplicas) {
  // Without ZeRO every term is per chain entry: splitting into stages moves bytes between ranks without changing
  // the sum, and each data-parallel replica holds a full copy.
  const auto one = host_memory_need(options("dp=1,tp=1,pp=1,mbs=1,gbs=2", Optimizer::adam));
  const auto pp2 = host_memory_need(options("dp=1,tp=1,pp=2,mbs=1,gbs=2", Optimizer::adam));
  const auto dp2pp2 = host_memory_need(options("dp=2,tp=1,pp=2,mbs=1,gbs=4", Optimizer::adam));
  EXPECT_NEAR(pp2.all_ranks_bytes, one.all_ranks_bytes, 1e-9 * one.all_ranks_bytes);
  EXPECT_NEAR(dp2pp2.all_ranks_bytes, 2 * pp2.all_ranks_bytes, 1e-9 * one.all_ranks_bytes);
  EXPECT_LT(pp2.largest_rank_bytes, one.largest_rank_bytes);
  EXPECT_GE(pp2.largest_rank_bytes, pp2.all_ranks_bytes / 2);
}

TEST(HostMemory, PerStageCountsEachStageAtItsOwnDpAndTp) {
  // Stage 0 (entries 0-2) on two replicas at tp 1, stage 1 (entries 3-5) on one replica at tp 2: Adam's states are
  // 8 bytes per parameter each rank holds (no ZeRO), summed over the four ranks.
  const std::string s = "mbs=1,gbs=4,stages=0+1:dp2:tp1:3/2+3:dp1:tp2:3";
  const auto adam = options(s, Optimizer::adam), sgd = options(s, Optimizer::sgd);
  const double p0 = runtime_params(adam.model, 0, 3, 1), p1 = runtime_params(adam.model, 3, 6, 2);
  EXPECT_NEAR(host_memory_need(adam).all_ranks_bytes - host_memory_need(sgd).all_ranks_bytes, 8 * (2 * p0 + 2 * p1),
              1e-6 * p0);
  EXPECT_GT(host_memory_need(adam).largest_rank_bytes, 4 * 2 * std::max(p0, p1));  // weights + gradients at least
}

TEST(HostMemory, RefusesWhatTheHostCannotHold) {
  const double available = available_host_memory_bytes();
  if (available < 0) GTEST_SKIP() << "no MemAvailable in /proc/meminfo";
  auto o = make_run_options(model::zoo_model("gpt3-175b"), cost::parse_strategy("dp=1,tp=1,pp=1,gbs=1"), 0);
  ASSERT_GT(host_memory_need(o).all_ranks_bytes, 175e9 * 16);  // fp32 weights, grads, Adam: 16 B a parameter
  if (host_memory_need(o).all_ranks_bytes <= available) GTEST_SKIP() << "this host could hold gpt3-175b";
  try {
    check_host_memory(o, 1);
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("MemAvailable"), std::string::npos) << msg;
    EXPECT_NE(msg.find("gpt3-175b"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_NO_THROW(check_host_memory(options("dp=1,tp=1,pp=1,gbs=2", Optimizer::adam), 1));
}

}  // namespace
}  // namespace strata::exec
