// tests/sim/test_overlap_sim: Oases' overlapped TP in the simulator — the two-sub-batch chain on a compute
// stream and a TP stream reproduces the cost model's closed form (cost::overlapped_chain_time) exactly on one
// worker, and a whole overlap=on plan stays within a few per cent of cost::estimate (the per-layer form drops
// only the chain's boundary term min(c_0, d) per chunk and pass).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "strata/cost/constants.hpp"
#include "strata/cost/overlap.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/from_cost.hpp"
#include "strata/sim/pipeline.hpp"

using namespace strata;

namespace {

sim::PipelineInput one_worker(int blocks, double c, double d, double cb, double db, double rec) {
  sim::PipelineInput in = sim::uniform_pipeline(cost::Schedule::one_f_one_b, 1, 1, 1, 0, 0);
  auto& ch = in.workers[0].chunks[0];
  ch.fwd_s = 2 * blocks * c;  // both sub-batches
  ch.bwd_s = 2 * blocks * cb;
  ch.recompute_s = 2 * blocks * rec;
  ch.tp_blocks_fwd = ch.tp_blocks_bwd = blocks;
  ch.tp_sub_fwd_s = blocks * d;  // one sub-batch
  ch.tp_sub_bwd_s = blocks * db;
  return in;
}

}  // namespace

TEST(SimOverlap, ChainMatchesTheClosedForm) {
  struct Case {
    int blocks;
    double c, d, cb, db, rec;
  };
  for (const Case k : {Case{4, 2, 1, 4, 1, 0}, Case{3, 1, 3, 2, 3, 0}, Case{2, 1, 1, 2, 1, 1}, Case{1, 5, 0.5, 9, 7, 0}}) {
    const auto res = sim::simulate_pipeline(one_worker(k.blocks, k.c, k.d, k.cb, k.db, k.rec));
    const std::vector<double> cf(k.blocks, k.c), df(k.blocks, k.d), cb(k.blocks, k.cb + k.rec), db(k.blocks, k.db);
    const double expect = cost::overlapped_chain_time(cf, df, 1.0) + cost::overlapped_chain_time(cb, db, 1.0);
    EXPECT_NEAR(res.iteration_time_s, expect, 1e-9 * expect) << k.blocks << " " << k.c << " " << k.d;
  }
}

TEST(SimOverlap, NoCommunicationIsTheComputeAlone) {
  const auto res = sim::simulate_pipeline(one_worker(3, 2, 0, 4, 0, 0));
  EXPECT_NEAR(res.iteration_time_s, 2 * 3 * (2 + 4), 1e-9);
}

TEST(SimOverlap, OverlapPlanAgreesWithTheCostModelAsWellAsBlockingTp) {
  // The simulator and the estimate differ for reasons the overlap does not change (DP bucket timing, ...): with
  // overlap=on they must agree within 8 % and within 2 points of the same plan's blocking-TP agreement. The
  // contention slowdown is set to 1: the simulator slows only compute while a collective runs (docs/simulator.md),
  // the cost model both sides, which differs when the chain is communication-bound.
  cost::CostConstants k = cost::builtin_constants();
  k.overlap_slowdown = k.tp_overlap_slowdown = 1.0;
  sim::CostSimOptions so;
  so.cost.constants = &k;
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster("g4dn.12xlarge:2", hw::builtin_catalog());
  for (const std::string text : {"dp=1,tp=4,pp=2,mbs=4,gbs=32,recompute=oases,dtype=fp16",
                                 "dp=2,tp=4,pp=1,mbs=2,gbs=16,dtype=fp16", "dp=1,tp=8,pp=1,mbs=2,gbs=8,dtype=fp16"}) {
    double gap[2] = {0, 0};
    for (int on = 0; on < 2; ++on) {
      const auto s = cost::complete_strategy(cost::parse_strategy(text + (on ? ",overlap=on" : "")), m, c);
      const auto sim = sim::simulate(m, c, s, so);
      gap[on] = (sim.result.iteration_time_s - sim.estimate.iteration_time_s) / sim.estimate.iteration_time_s;
      EXPECT_LT(std::abs(gap[on]), 0.08) << text << " overlap " << on;
    }
    EXPECT_LT(std::abs(gap[1] - gap[0]), 0.02) << text << ": " << gap[1] << " vs blocking " << gap[0];
  }
}
