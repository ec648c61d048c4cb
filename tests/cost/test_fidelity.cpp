// tests/cost/test_fidelity: NCCL-style collectives across nodes against hand-derived times — an inter-node ring
// all-gather takes (n−1)·α plus the bytes each node receives over its NICs' bandwidth — ZeRO-3's per-micro-batch
// gathers and reduce-scatters, and the issue-13 case (gpt3-175b on 192 DGX A100, zero=3) against the NIC bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "helpers.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/zero.hpp"
#include "strata/model/model.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

CommOptions ideal(const CostConstants& k) {
  CommOptions o;
  o.constants = &k;
  return o;
}

}  // namespace

TEST(NcclCollectives, InterNodeRingAllGatherOneGpuPerNode) {
  const auto c = cost_test::cluster("dgx-a100:4");
  const auto k = cost_test::ideal_links();
  const double alpha = 9.6e-6, nic = 200e9 / 8;  // ib-hdr: NCCL NET latency, 200 Gb/s
  const double M = 1e9;
  // Four ranks, one per node: 3 steps, each node receives 3/4 of the buffer through its one NIC.
  const std::vector<int> g = {0, 8, 16, 24};
  EXPECT_NEAR(allgather_time(c, g, M, ideal(k)), 3 * alpha + 0.75 * M / nic, 1e-12);
  EXPECT_NEAR(reduce_scatter_time(c, g, M, ideal(k)), 3 * alpha + 0.75 * M / nic, 1e-12);
  // Two groups sharing each NIC: half the bandwidth each.
  CommOptions shared = ideal(k);
  shared.concurrent_groups_per_nic = 2;
  EXPECT_NEAR(allgather_time(c, g, M, shared), 3 * alpha + 0.75 * M / (nic / 2), 1e-12);
}

TEST(NcclCollectives, InterNodeRingAllGatherSeveralGpusPerNode) {
  const auto c = cost_test::cluster("dgx-a100:4");
  const auto k = cost_test::ideal_links();
  const double a_intra = 3.4e-6, a_inter = 9.6e-6, nic = 25e9, nvlink = 300e9;
  const double M = 8e8;
  // Two GPUs on each of 4 nodes (each with its own NIC): 7 steps, 3 of them inter-node; each node takes 7/8 M
  // through its 2 NICs (50 GB/s), which is slower than NVLink.
  const std::vector<int> g = {0, 1, 8, 9, 16, 17, 24, 25};
  EXPECT_NEAR(allgather_time(c, g, M, ideal(k)), 4 * a_intra + 3 * a_inter + 7.0 / 8 * M / (2 * nic), 1e-12);
  // All 32 GPUs: 28 intra + 3 inter steps; 8 NICs (200 GB/s) per node, still below NVLink (300 GB/s).
  std::vector<int> all(32);
  for (int i = 0; i < 32; ++i) all[i] = i;
  const double want = 28 * a_intra + 3 * a_inter + std::max(31.0 / 32 * M / (8 * nic), 31.0 / 32 * M / nvlink);
  EXPECT_NEAR(allgather_time(c, all, M, ideal(k)), want, 1e-12);
}

TEST(NcclCollectives, TreeBeatsRingAtScaleForAllReduce) {
  NcclGroupShape g;
  g.ranks = 1536;
  g.nodes = 192;
  g.intra_latency_s = 3.4e-6;
  g.inter_latency_s = 9.6e-6;
  g.intra_bw_bytes_per_s = 220e9;
  g.node_nic_bw_bytes_per_s = 180e9;
  const double M = 1e6;  // latency-bound: 2·(1344·3.4 + 191·9.6) µs for the ring, 2·(8·9.6 + 7·3.4) µs for the tree
  EXPECT_NEAR(nccl_ring_time(g, M, 2), 2 * (1344 * 3.4e-6 + 191 * 9.6e-6) + 2 * M * 1535 / 1536 / 180e9, 1e-12);
  EXPECT_NEAR(nccl_tree_allreduce_time(g, M), 2 * (8 * 9.6e-6 + 7 * 3.4e-6) + 2 * M / 180e9, 1e-12);
  EXPECT_LT(nccl_tree_allreduce_time(g, M), nccl_ring_time(g, M, 2));
}

TEST(Zero3, GathersAndReduceScattersPerMicroBatch) {
  const auto z = zero3_layer_comm(2.0, 3.0, 10.0, 20.0, 1.3);
  EXPECT_EQ(z.gathers, 2);          // forward and backward
  EXPECT_EQ(z.reduce_scatters, 1);  // backward
  EXPECT_DOUBLE_EQ(z.busy_s, 2 * 2.0 + 3.0);
  EXPECT_NEAR(z.fwd_exposed_s, 0.3 * 2.0, 1e-12);        // hidden behind the neighbour, slowed by γ
  EXPECT_NEAR(z.bwd_exposed_s, 0.3 * 5.0, 1e-12);
  const auto slow = zero3_layer_comm(30.0, 30.0, 10.0, 20.0, 1.0);
  EXPECT_NEAR(slow.fwd_exposed_s, 20.0, 1e-12);          // longer than the neighbour's compute: the rest shows
  EXPECT_NEAR(slow.bwd_exposed_s, 40.0, 1e-12);
}

TEST(Zero3, EstimateCountsTwoGathersAndOneReduceScatterPerLayerPerMicroBatch) {
  const auto m = cost_test::gpt(4, 1024, 16, 512);
  const auto c = cost_test::cluster("dgx-a100:2");
  const auto s = complete_strategy(parse_strategy("dp=16,mbs=1,gbs=64,zero=3"), m, c);  // 4 micro-batches
  const auto e = estimate(m, c, s);
  std::vector<int> group(16);
  for (int i = 0; i < 16; ++i) group[i] = i;
  const auto& k = builtin_constants();
  double per_micro_batch = 0;
  for (const auto& l : m.layers) {
    model::LayerQuery q;
    q.seq = m.seq;
    const double params = model::layer_cost(l, q).params_per_tp_rank;
    // AG forward, AG backward in bf16, RS backward in fp32 (FSDP's reduce dtype, cost/zero), the same ring.
    per_micro_batch += 2 * allgather_time(c, group, params * k.grad_comm_bytes_per_param) +
                       allgather_time(c, group, params * 4.0);
  }
  ASSERT_EQ(e.stages.size(), 1u);
  EXPECT_NEAR(e.stages[0].zero3_busy_s, 4 * per_micro_batch, 1e-6 * per_micro_batch);
}

TEST(Zero3, Gpt3OnDgxA100NoLessThanTheNicBound) {
  // Issue 13: 2 × 350 GB of bf16 gathers + 700 GB of fp32 reduce-scatter per iteration (issue 38: FSDP reduces
  // in fp32), of which each node must take (n−1)/n through its 8 × 200 Gb/s NICs.
  const auto m = model::resolve_model("gpt3-175b");
  const auto c = cost_test::cluster("dgx-a100:192");
  const auto s = complete_strategy(parse_strategy("dp=1536,mbs=1,gbs=1536,zero=3,recompute=full"), m, c);
  const auto e = estimate(m, c, s);
  const double bytes = model::total_params(m) * 2;
  const double nic_bound = 4 * bytes * 1535 / 1536 / (8 * 25e9);
  EXPECT_GE(e.stages[0].zero3_busy_s, nic_bound);
  EXPECT_LT(e.stages[0].zero3_busy_s, 1.6 * nic_bound);  // NVLink and latency add little on top
}

TEST(AttentionKey, ParsesPrintsAndDefaultsPerGpu) {
  const auto s = parse_strategy("dp=8,tp=1,pp=1,gbs=8,attention=eager");
  ASSERT_TRUE(s.attention.has_value());
  EXPECT_EQ(*s.attention, model::AttentionKernel::eager);
  EXPECT_NE(to_cli_string(s).find("attention=eager"), std::string::npos);
  EXPECT_EQ(strategy_from_json(to_json(s), "s.json").attention, s.attention);
  EXPECT_FALSE(parse_strategy("dp=8,gbs=8,attention=auto").attention.has_value());
  EXPECT_EQ(to_cli_string(parse_strategy("dp=8,gbs=8")).find("attention"), std::string::npos);
  // Default: flash on GPUs with bf16 tensor cores, eager elsewhere.
  const auto catalog = hw::builtin_catalog();
  const Strategy unset = parse_strategy("dp=8,gbs=8");
  EXPECT_EQ(attention_kernel_for(unset, catalog.gpu("a100-80gb")), model::AttentionKernel::flash);
  EXPECT_EQ(attention_kernel_for(unset, catalog.gpu("v100-16gb")), model::AttentionKernel::eager);
  EXPECT_EQ(attention_kernel_for(s, catalog.gpu("h100-sxm")), model::AttentionKernel::eager);
  // flash on a GPU without a flash kernel is a rule error.
  const auto m = cost_test::gpt(2, 1024, 16, 512);
  const auto v100 = cost_test::cluster("p3.16xlarge:1");
  EXPECT_NE(cost_test::error_of([&] { complete_strategy(parse_strategy("dp=8,gbs=8,attention=flash"), m, v100); })
                .find("attention=flash"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([&] { parse_strategy("dp=8,gbs=8,attention=sdpa"); }), "");
}

TEST(AttentionKey, FlashFitsTheIssueLlama405bLayout) {
  // Issue 13: 302 GiB per GPU with the eager 5as/h term; flash keeps no scores and the layout fits 80 GB.
  const auto m = model::with_seq(model::resolve_model("llama3-405b"), 8192);
  const auto c = cost_test::cluster("dgx-h100:1024");
  const std::string layout = "dp=64,tp=8,pp=16,mbs=1,gbs=2048,sp=on,zero=2";
  const auto flash = cost_test::run(m, c, layout);
  const auto eager = cost_test::run(m, c, layout + ",attention=eager");
  EXPECT_TRUE(flash.fits);
  EXPECT_LT(flash.peak_memory_bytes, 80e9);
  EXPECT_FALSE(eager.fits);
  EXPECT_GT(eager.peak_memory_bytes, 3 * flash.peak_memory_bytes);
}
