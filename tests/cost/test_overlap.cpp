// tests/cost/test_overlap: Oases' overlapped TP schedule in the cost model — the chain formula's closed forms
// (full overlap = max per pair, no communication = two half-batches, no overlap = Megatron), the overlap=on
// strategy key and its rules, recompute=oases memory/FLOPs, and the per-layer hook in layer_stage_cost.
#include <gtest/gtest.h>

#include <vector>

#include "strata/core/error.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/overlap.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {
namespace {

TEST(OverlapChain, FullOverlapIsMaxPerPair) {
  // Comm shorter than compute everywhere, no slowdown: every pair costs its compute; T = c_0 + 2Σc − c_0... =
  // c_0 + Σ_v (c_v + c_{v+1}) with c_V = 0 → 2Σc, except the last pair, which exposes d_{V−1}.
  const std::vector<double> c{4, 5, 6}, d{1, 2, 3};
  // a.c0 | max(b.c0,a.d0)=4 | max(a.c1,b.d0)=5 | max(b.c1,a.d1)=5 | max(a.c2,b.d1)=6 | max(b.c2,a.d2)=6 | b.d2=3
  EXPECT_DOUBLE_EQ(overlapped_chain_time(c, d, 1.0), 4 + 4 + 5 + 5 + 6 + 6 + 3);
}

TEST(OverlapChain, CommBoundIsMaxPerPair) {
  const std::vector<double> c{1, 1}, d{3, 3};
  // c0 + max(1,3) + max(1,3) + max(1,3) + max(0,3)
  EXPECT_DOUBLE_EQ(overlapped_chain_time(c, d, 1.0), 1 + 3 + 3 + 3 + 3);
}

TEST(OverlapChain, NoCommIsTwoHalfBatches) {
  const std::vector<double> c{2, 3, 7}, d{0, 0, 0};
  EXPECT_DOUBLE_EQ(overlapped_chain_time(c, d, 1.0), 2 * (2 + 3 + 7));
}

TEST(OverlapChain, SlowdownChargesTheOverlappedShorterSide) {
  const std::vector<double> c{4}, d{1};
  // c0 + ov(4,1) + ov(0,1) = 4 + (4 + 0.5·1) + 1
  EXPECT_DOUBLE_EQ(overlapped_chain_time(c, d, 1.5), 4 + 4.5 + 1);
  EXPECT_DOUBLE_EQ(overlapped_pair_time(2, 3, 1.2), 3 + 0.2 * 2);
  EXPECT_DOUBLE_EQ(overlapped_block_time(2, 3, 1.0), 6);
}

TEST(OverlapChain, BlockingIsMegatron) {
  const std::vector<double> c{4, 5}, d{1, 2};
  EXPECT_DOUBLE_EQ(blocking_chain_time(c, d), 12);
  EXPECT_THROW(overlapped_chain_time(std::vector<double>{}, std::vector<double>{}, 1.0), std::invalid_argument);
}

TEST(OverlapChain, IdenticalBlocksDifferFromPerBlockFormByMinCD) {
  // V identical blocks: c + (2V−1)·max + d = 2V·max(c, d) + min(c, d) (γ = 1): the per-layer form
  // (overlapped_block_time) drops only the chain's boundary term.
  for (double cc : {1.0, 3.0}) {
    const double dd = 2.0;
    const std::vector<double> c(6, cc), d(6, dd);
    EXPECT_DOUBLE_EQ(overlapped_chain_time(c, d, 1.0), 6 * overlapped_block_time(cc, dd, 1.0) + std::min(cc, dd));
  }
}

TEST(OverlapStrategy, KeyParsesPrintsAndChecksRules) {
  auto s = parse_strategy("dp=1,tp=4,pp=1,mbs=2,gbs=8,overlap=on");
  EXPECT_TRUE(s.tp_overlap);
  EXPECT_NE(to_cli_string(s).find("overlap=on"), std::string::npos);
  EXPECT_EQ(strategy_from_json(to_json(s), "t").tp_overlap, true);
  EXPECT_EQ(to_cli_string(parse_strategy("dp=1,tp=4,gbs=8")).find("overlap"), std::string::npos);
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster("dgx-a100", hw::builtin_catalog());
  EXPECT_NO_THROW(complete_strategy(parse_strategy("dp=2,tp=4,pp=1,mbs=2,gbs=8,overlap=on"), m, c));
  EXPECT_THROW(complete_strategy(parse_strategy("dp=2,tp=4,pp=1,mbs=1,gbs=8,overlap=on"), m, c), core::InputError);
  EXPECT_THROW(complete_strategy(parse_strategy("dp=8,tp=1,pp=1,mbs=2,gbs=16,overlap=on"), m, c), core::InputError);
  EXPECT_THROW(parse_strategy("tp=2,overlap=maybe"), core::InputError);
}

TEST(OasesRecompute, StoresFourTensorsAndRecomputesTheForward) {
  const auto m = model::zoo_model("megatron-1.7b");
  const model::LayerSpec* block = nullptr;
  for (const auto& l : m.layers)
    if (l.kind == model::LayerKind::transformer) block = &l;
  ASSERT_NE(block, nullptr);
  model::LayerQuery q;
  q.micro_batch = 4;
  q.seq = m.seq;
  q.tp = 4;
  q.recompute = model::Recompute::full;
  const auto full = model::layer_cost(*block, q);
  q.recompute = model::Recompute::oases;
  const auto oases = model::layer_cost(*block, q);
  EXPECT_DOUBLE_EQ(oases.act_total_bytes(), 4.0 * full.act_total_bytes());  // 4 [s,b,h] vs the block input
  EXPECT_DOUBLE_EQ(oases.recompute_flops, full.recompute_flops);
  EXPECT_EQ(model::parse_recompute("oases", "t"), model::Recompute::oases);
}

// One block on a PCIe node costed with and without overlap.
struct Costs {
  LayerStageCost off, on;
};
Costs block_costs(const std::string& cluster, model::Recompute rc) {
  static const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster(cluster, hw::builtin_catalog());
  const model::LayerSpec& block = m.layers[1];
  Costs out;
  for (bool ov : {false, true}) {
    auto s = complete_strategy(parse_strategy("tp=4,pp=1,mbs=8,gbs=16,dtype=fp16,overlap=" + std::string(ov ? "on" : "off") +
                                                  ",recompute=" + std::string(model::to_string(rc))),
                               m, c);
    const auto ctx = make_stage_context(m, c, s, std::vector<int>(s.placement.begin(), s.placement.begin() + 4));
    (ov ? out.on : out.off) = layer_stage_cost(m, block, ctx, rc);
  }
  return out;
}

TEST(OverlapLayer, HidesCommunicationAndNeverBeatsHalfTheParts) {
  const auto [off, on] = block_costs("g4dn.12xlarge", model::Recompute::oases);
  EXPECT_GT(off.tp_comm_fwd_s, 0);
  EXPECT_LT(on.time_s(), off.time_s());
  // Two sub-batches: compute ≥ the whole batch's (GEMM efficiency at the smaller size), and the overlapped time
  // ≥ max(compute, comm of the two halves) per pass.
  EXPECT_GE(on.fwd_compute_s, off.fwd_compute_s * 0.999);
  EXPECT_GE(on.fwd_s, on.fwd_compute_s);
  EXPECT_DOUBLE_EQ(on.fwd_s, on.fwd_compute_s + on.tp_comm_fwd_s);
  // oases recompute re-runs no collective: backward comm = forward comm (one per block each way).
  EXPECT_DOUBLE_EQ(off.tp_comm_bwd_s, off.tp_comm_fwd_s);
  const auto full = block_costs("g4dn.12xlarge", model::Recompute::full).off;
  EXPECT_DOUBLE_EQ(full.tp_comm_bwd_s, 2 * full.tp_comm_fwd_s);
}

}  // namespace
}  // namespace strata::cost
