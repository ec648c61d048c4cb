// Tests for cost/comm: the ring all-reduce of AMP eq. 3 on a uniform group, the bottleneck link on a mixed group,
// hierarchical groups, NIC sharing and the closed forms.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "helpers.hpp"
#include "strata/cost/comm.hpp"

using namespace strata;
using namespace strata::cost;

TEST(CostComm, RingAllReduceOnUniformGroupIsAmpEq3) {
  const auto c = cost_test::cluster("dgx-a100:1");
  const auto k = cost_test::ideal_links();
  CommOptions o;
  o.constants = &k;
  const std::vector<int> g = {0, 1, 2, 3, 4, 5, 6, 7};
  const double M = 1e9, B = hw::link_bandwidth(c, 0, 1), a = hw::link_latency(c, 0, 1);
  const int n = 8;
  // T = 2(n−1)·M/(n·B) plus α per ring step.
  EXPECT_NEAR(allreduce_time(c, g, M, o), 2.0 * (n - 1) * M / (n * B) + 2.0 * (n - 1) * a, 1e-12);
  EXPECT_NEAR(ring_allreduce_closed(n, M, B), 2.0 * (n - 1) * M / (n * B), 1e-15);
  // All-gather and reduce-scatter: half of an all-reduce.
  EXPECT_NEAR(allgather_time(c, g, M, o), (n - 1) * (a + M / (n * B)), 1e-12);
  EXPECT_NEAR(reduce_scatter_time(c, g, M, o), allgather_time(c, g, M, o), 1e-15);
  EXPECT_EQ(allreduce_time(c, std::vector<int>{3}, M, o), 0.0);
}

TEST(CostComm, MixedGroupRunsAtTheBottleneck) {
  // A V100 node (NVLink) and a T4 node (PCIe), 10/50 Gb/s Ethernet between them.
  const auto c = cost_test::cluster("p3.8xlarge:1+g4dn.12xlarge:1");
  const auto k = cost_test::ideal_links();
  CommOptions o;
  o.constants = &k;
  const double M = 4e8;
  const std::vector<int> fast = {0, 1};          // NVLink pair inside the V100 node
  const std::vector<int> mixed = {0, 1, 4};      // + one T4 across the network: uneven per node → flat ring
  const auto links = hw::group_links(c, mixed);
  const double bottleneck = links.bw_bytes_per_s;
  EXPECT_LT(bottleneck, hw::link_bandwidth(c, 0, 1));
  EXPECT_NEAR(allreduce_time(c, mixed, M, o), ring_allreduce_closed(3, M, bottleneck, links.latency_s), 1e-9);
  EXPECT_GT(allreduce_time(c, mixed, M, o), allreduce_time(c, fast, M, o));
}

TEST(CostComm, HierarchicalAcrossNodesAndNicSharing) {
  const auto c = cost_test::cluster("dgx-a100:2");
  const auto k = cost_test::ideal_links();
  CommOptions o;
  o.constants = &k;
  std::vector<int> all(16);
  for (int i = 0; i < 16; ++i) all[i] = i;
  const double M = 1e9;
  const double bi = hw::link_bandwidth(c, 0, 1), li = hw::link_latency(c, 0, 1);
  const double be = hw::link_bandwidth(c, 0, 8), le = hw::link_latency(c, 0, 8);
  // NCCL: the faster of a ring through all 16 GPUs (14 intra + 1 inter step per pass; each node takes 15/16 M
  // through its 8 HDR NICs per pass) and a tree (chain of 8 in the node, 2-node tree).
  const double ring = 2.0 * ((14 * li + le) + std::max(M * 15 / 16 / (8 * be), M * 15 / 16 / bi));
  const double tree = 2.0 * (le + 7 * li) + std::max(2 * M / (8 * be), 2 * M / bi);
  EXPECT_NEAR(allreduce_time(c, all, M, o), std::min(ring, tree), 1e-9);
  EXPECT_NEAR(allreduce_tree_time(c, all, M, o), tree, 1e-9);
  // One GPU per node: a flat inter-node ring; two such groups sharing each NIC take longer.
  const std::vector<int> pair = {0, 8};
  EXPECT_NEAR(allreduce_time(c, pair, M, o), ring_allreduce_closed(2, M, be, le), 1e-9);
  CommOptions shared = o;
  shared.concurrent_groups_per_nic = 2;
  EXPECT_NEAR(allreduce_time(c, pair, M, shared), ring_allreduce_closed(2, M, be / 2, le), 1e-9);
}

TEST(CostComm, ClosedFormsAndDispatch) {
  EXPECT_NEAR(tree_allreduce_closed(8, 8e6, 1e9, 1e-6), 2 * 3 * 1e-6 + 2 * 8e-3, 1e-12);
  EXPECT_NEAR(all_to_all_closed(4, 4e6, 1e9, 0), 3e-3, 1e-12);
  EXPECT_NEAR(broadcast_closed(4, 4e6, 1e9, 1e-6), 3e-6 + 4e-3, 1e-12);
  const auto c = cost_test::cluster("dgx-a100:1");
  const std::vector<int> g = {0, 1, 2, 3};
  for (auto kind : {Collective::allreduce, Collective::allreduce_tree, Collective::allgather,
                    Collective::reduce_scatter, Collective::all_to_all, Collective::broadcast, Collective::p2p}) {
    EXPECT_EQ(parse_collective(to_string(kind), "x"), kind);
    const double t1 = collective_time(kind, c, g, 1e6), t2 = collective_time(kind, c, g, 2e6);
    EXPECT_GT(t1, 0.0);
    EXPECT_GT(t2, t1);  // more bytes, more time
  }
  EXPECT_NEAR(p2p_device_time(c, 0, 1, 0.0), 0.0, 0.0);
}
