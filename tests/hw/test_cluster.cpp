// tests/hw/test_cluster: link queries on heterogeneous presets (AMP's p3.8xlarge:3+g4dn.12xlarge:1, dgx-a100:2,
// mixed DGX generations), the full-matrix override, rack oversubscription, NIC sharing, and group_links against
// a brute force over all pairs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::hw {
namespace {

const Catalog& cat() {
  static const Catalog c = builtin_catalog();
  return c;
}
constexpr double kGbit = 1e9 / 8;

std::vector<int> range(int a, int b) {
  std::vector<int> v;
  for (int i = a; i < b; ++i) v.push_back(i);
  return v;
}

TEST(HwCluster, AmpHeterogeneousClusterShape) {
  const Cluster c = resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", cat());
  EXPECT_EQ(c.name, "p3.8xlarge:3+g4dn.12xlarge:1");
  ASSERT_EQ(c.num_devices(), 16);
  ASSERT_EQ(c.nodes.size(), 4u);
  ASSERT_EQ(c.gpu_types.size(), 2u);
  EXPECT_EQ(c.gpu_of(0).name, "v100-16gb");
  EXPECT_EQ(c.gpu_of(11).name, "v100-16gb");
  EXPECT_EQ(c.gpu_of(12).name, "t4");
  for (int d = 0; d < 16; ++d) {  // node-major numbering
    EXPECT_EQ(c.devices[d].id, d);
    EXPECT_EQ(c.devices[d].node, d / 4);
    EXPECT_EQ(c.devices[d].local_index, d % 4);
  }
}

TEST(HwCluster, AmpIntraNodePairs) {
  const Cluster c = resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", cat());
  // V100 pairs: NVLink2, one brick (25 GB/s) or two (50 GB/s) per the hybrid cube mesh.
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 1), 25e9);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 3), 50e9);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 3, 0), 50e9);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 5, 6), 50e9);  // node 1, locals 1-2
  EXPECT_DOUBLE_EQ(link_latency(c, 0, 1), cat().link("nvlink2").latency_s);
  // T4 pairs: PCIe 3.0 x16.
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 12, 15), 15.75e9);
  EXPECT_DOUBLE_EQ(link_latency(c, 12, 15), cat().link("pcie3").latency_s);
  EXPECT_TRUE(std::isinf(link_bandwidth(c, 7, 7)));
  EXPECT_DOUBLE_EQ(link_latency(c, 7, 7), 0);
}

TEST(HwCluster, AmpCrossNodePairsLimitedBySlowerNic) {
  const Cluster c = resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", cat());
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 4), 10 * kGbit);   // p3 ↔ p3
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 11, 12), 10 * kGbit); // p3 ↔ g4dn: min(10, 50) Gbit/s
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 12, 11), 10 * kGbit);
  EXPECT_DOUBLE_EQ(nic_bandwidth(c, 12), 50 * kGbit);
  EXPECT_DOUBLE_EQ(link_latency(c, 0, 12), cat().link("eth-10g").latency_s);
}

TEST(HwCluster, AmpGroups) {
  const Cluster c = resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", cat());
  const auto node0 = range(0, 4);
  GroupLinks g = group_links(c, node0);
  EXPECT_TRUE(g.intra_node);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(g.inter_bw_bytes_per_s, 0);
  EXPECT_EQ(g.max_devices_per_node, 4);
  EXPECT_TRUE(same_node(c, node0));

  const std::vector<int> pair03{0, 3};
  EXPECT_DOUBLE_EQ(group_links(c, pair03).bw_bytes_per_s, 50e9);

  const auto all = range(0, 16);
  g = group_links(c, all);
  EXPECT_FALSE(g.intra_node);
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.max_devices_per_node, 4);
  EXPECT_TRUE(g.uniform_per_node);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 10 * kGbit);
  EXPECT_DOUBLE_EQ(g.inter_bw_bytes_per_s, 10 * kGbit);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 15.75e9);  // T4 PCIe is slower than any V100 NVLink pair
  EXPECT_DOUBLE_EQ(g.latency_s, cat().link("eth-10g").latency_s);
  EXPECT_EQ(g.max_devices_per_nic, 4);
  EXPECT_FALSE(same_node(c, all));

  const std::vector<int> dp{0, 4, 8, 12};  // one GPU per node
  g = group_links(c, dp);
  EXPECT_EQ(g.num_nodes, 4);
  EXPECT_EQ(g.max_devices_per_node, 1);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 0);
  EXPECT_DOUBLE_EQ(g.intra_latency_s, 0);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 10 * kGbit);

  const std::vector<int> uneven{0, 1, 2, 12};
  g = group_links(c, uneven);
  EXPECT_FALSE(g.uniform_per_node);
  EXPECT_EQ(g.min_devices_per_node, 1);
  EXPECT_EQ(g.max_devices_per_node, 3);

  const std::vector<int> one{5};
  g = group_links(c, one);
  EXPECT_TRUE(std::isinf(g.bw_bytes_per_s));
  EXPECT_EQ(g.num_nodes, 1);
  EXPECT_DOUBLE_EQ(g.latency_s, 0);
}

TEST(HwCluster, DgxA100TwoNodes) {
  const Cluster c = resolve_cluster("dgx-a100:2", cat());
  ASSERT_EQ(c.num_devices(), 16);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 7), 300e9);  // NVSwitch
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 8), 25e9);   // one HDR port per GPU
  EXPECT_EQ(num_nics(c), 16);
  EXPECT_EQ(nic_of(c, 9), 9);
  EXPECT_EQ(gpus_per_nic(c, 9), 1);
  const auto tp = range(8, 16);
  GroupLinks g = group_links(c, tp);
  EXPECT_TRUE(g.intra_node);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 300e9);
  const auto all = range(0, 16);
  g = group_links(c, all);
  EXPECT_EQ(g.num_nodes, 2);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 300e9);
  EXPECT_EQ(g.max_devices_per_nic, 1);
  const std::vector<int> dp{3, 11};
  EXPECT_DOUBLE_EQ(group_links(c, dp).bw_bytes_per_s, 25e9);
}

TEST(HwCluster, MixedGenerationBottleneck) {
  const Cluster c = resolve_cluster("dgx-a100:1+dgx-h100:1", cat());
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 8), 25e9);  // min(HDR 200, NDR 400) Gbit/s
  EXPECT_DOUBLE_EQ(group_links(c, range(8, 16)).bw_bytes_per_s, 450e9);
  const GroupLinks g = group_links(c, range(0, 16));
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 300e9);
  EXPECT_DOUBLE_EQ(total_memory_bytes(c), 16 * 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(total_peak_flops(c, Dtype::bf16), 8 * 312e12 + 8 * 989.4e12);
  const auto classes = link_classes(c);
  ASSERT_EQ(classes.size(), 4u);
  EXPECT_EQ(classes[0].link, "nvswitch3");
  EXPECT_EQ(classes[1].link, "nvswitch4");
  EXPECT_EQ(classes[2].scope, "inter");
  EXPECT_DOUBLE_EQ(classes[3].bw_bytes_per_s, 50e9);
}

TEST(HwCluster, NicSharing) {
  const Cluster p4 = resolve_cluster("p4d.24xlarge:2", cat());  // 8 GPUs, 4 NICs
  EXPECT_EQ(gpus_per_nic(p4, 0), 2);
  EXPECT_EQ(nic_of(p4, 0), 0);
  EXPECT_EQ(nic_of(p4, 1), 0);
  EXPECT_EQ(nic_of(p4, 3), 1);
  EXPECT_EQ(nic_of(p4, 8), 4);
  EXPECT_DOUBLE_EQ(nic_bandwidth(p4, 3), 100 * kGbit);
  EXPECT_EQ(group_links(p4, range(0, 16)).max_devices_per_nic, 2);
  const std::vector<int> spread{0, 2, 4, 6, 8};
  EXPECT_EQ(group_links(p4, spread).max_devices_per_nic, 1);

  const Cluster p5 = resolve_cluster("p5.48xlarge:2", cat());  // 8 GPUs, 32 NICs: 4 per GPU
  EXPECT_EQ(gpus_per_nic(p5, 5), 1);
  EXPECT_EQ(nic_of(p5, 1), 4);
  EXPECT_EQ(nic_of(p5, 8), 32);
  EXPECT_DOUBLE_EQ(nic_bandwidth(p5, 5), 400 * kGbit);
  EXPECT_DOUBLE_EQ(link_bandwidth(p5, 0, 8), 400 * kGbit);

  const Cluster g4 = resolve_cluster("g4dn.12xlarge:2", cat());
  EXPECT_EQ(gpus_per_nic(g4, 2), 4);
  EXPECT_EQ(nic_of(g4, 3), 0);
  EXPECT_EQ(nic_of(g4, 4), 1);

  // Uneven spread: 8 GPUs over 3 NICs → locals 0-2, 3-5, 6-7.
  NodeSpec odd{"odd", "a100-80gb", 8, "nvswitch3", 3, "ib-hdr", std::nullopt, "test"};
  Cluster c;
  add_nodes(c, odd, 1, cat());
  const int expect_nic[8] = {0, 0, 0, 1, 1, 1, 2, 2};
  const int expect_share[8] = {3, 3, 3, 3, 3, 3, 2, 2};
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(nic_of(c, d), expect_nic[d]) << d;
    EXPECT_EQ(gpus_per_nic(c, d), expect_share[d]) << d;
  }
}

TEST(HwCluster, FullMatrixOverridesEverything) {
  core::Json j = core::Json::parse(R"({"nodes": [{"type": "p3.8xlarge", "count": 1},
                                                  {"type": "g4dn.12xlarge", "count": 1}]})");
  std::vector<std::vector<double>> m(8, std::vector<double>(8, 1e9));
  m[0][1] = m[1][0] = 5e8;
  m[2][3] = 3e9;
  m[3][2] = 2e9;  // asymmetric: a pair sees the slower direction
  j["bw_matrix"] = m;
  const Cluster c = cluster_from_json(j, "test.json", cat());
  ASSERT_TRUE(c.bw_matrix.has_value());
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 1), 5e8);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 2, 3), 2e9);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 3, 2), 2e9);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 4), 1e9);   // not the 10 Gbit/s NIC
  EXPECT_DOUBLE_EQ(link_latency(c, 0, 4), cat().link("eth-10g").latency_s);  // latency stays structural
  GroupLinks g = group_links(c, range(0, 8));
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 5e8);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 5e8);
  EXPECT_DOUBLE_EQ(g.inter_bw_bytes_per_s, 1e9);
  const std::vector<int> pair{3, 2};
  EXPECT_DOUBLE_EQ(group_links(c, pair).bw_bytes_per_s, 2e9);
  const auto classes = link_classes(c);
  ASSERT_FALSE(classes.empty());
  EXPECT_EQ(classes[0].link, "bw_matrix");
}

TEST(HwCluster, AmpMatrixExampleFile) {
  const Cluster c = resolve_cluster(STRATA_SOURCE_DIR "/examples/cluster_amp_matrix.json", cat());
  ASSERT_EQ(c.num_devices(), 16);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 1), 170 * kGbit);   // AMP: ~170 Gbit/s NVLink
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 12, 13), 50 * kGbit);  // AMP: ~50 Gbit/s PCIe in g4dn
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 3, 12), 10 * kGbit);
  EXPECT_DOUBLE_EQ(group_links(c, range(0, 16)).bw_bytes_per_s, 10 * kGbit);
}

TEST(HwCluster, HeterogeneousExampleFileWithRacks) {
  const Cluster c = resolve_cluster(STRATA_SOURCE_DIR "/examples/cluster_heterogeneous.json", cat());
  ASSERT_EQ(c.num_devices(), 32);
  EXPECT_EQ(c.name, "dgx-a100-plus-a10g");
  EXPECT_EQ(c.gpu_of(16).name, "a10g");
  EXPECT_EQ(c.nodes[2].node_type, "a10g-4x");
  EXPECT_EQ(c.nodes[3].rack, 1);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 8), 25e9);                  // same rack: HDR
  // Racks of two nodes: dgx nodes 0-1 in rack 0, a10g nodes 2-3 in rack 1, nodes 4-5 in rack 2.
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 16, 20), 200 * kGbit);          // nodes 2 and 3: same rack
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 16, 24), 200 * kGbit / 2);      // racks 1 and 2: 2:1 oversubscribed
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 16), 200 * kGbit / 2);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 16, 17), 31.5e9);               // PCIe 4.0
  EXPECT_DOUBLE_EQ(link_latency(c, 16, 20), 12e-6);                  // the inline roce-200g link
}

TEST(HwCluster, RackOversubscription) {
  const core::Json j = core::Json::parse(
      R"({"nodes": [{"type": "dgx-a100", "count": 4}], "nodes_per_rack": 2, "rack_oversubscription": 4})");
  const Cluster c = cluster_from_json(j, "racks.json", cat());
  EXPECT_EQ(c.nodes[1].rack, 0);
  EXPECT_EQ(c.nodes[2].rack, 1);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 8), 25e9);        // same rack
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 16), 25e9 / 4);   // across racks
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 1), 300e9);
  const std::vector<int> same_rack{0, 8};
  GroupLinks g = group_links(c, same_rack);
  EXPECT_EQ(g.num_racks, 1);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 25e9);
  const std::vector<int> cross{0, 1, 8, 16};
  g = group_links(c, cross);
  EXPECT_EQ(g.num_racks, 2);
  EXPECT_DOUBLE_EQ(g.inter_bw_bytes_per_s, 25e9 / 4);
  EXPECT_DOUBLE_EQ(g.intra_bw_bytes_per_s, 300e9);
  EXPECT_DOUBLE_EQ(g.bw_bytes_per_s, 25e9 / 4);
}

// group_links must equal the brute force over all pairs (min bandwidth, max latency), for sorted and shuffled
// groups, on clusters with intra matrices, racks, mixed NICs and a full matrix.
TEST(HwCluster, GroupLinksMatchesBruteForce) {
  std::vector<Cluster> clusters;
  clusters.push_back(resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", cat()));
  clusters.push_back(resolve_cluster("p3.16xlarge:2+p4d.24xlarge:1+p5.48xlarge:1", cat()));
  clusters.push_back(cluster_from_json(
      core::Json::parse(R"({"nodes": [{"type": "p3.16xlarge", "count": 2}, {"type": "dgx-h100", "count": 3}],
                            "nodes_per_rack": 2, "rack_oversubscription": 3})"),
      "r.json", cat()));
  clusters.push_back(resolve_cluster(STRATA_SOURCE_DIR "/examples/cluster_amp_matrix.json", cat()));
  std::mt19937 rng(7);
  for (const auto& c : clusters) {
    SCOPED_TRACE(c.name);
    for (int trial = 0; trial < 300; ++trial) {
      std::vector<int> all = range(0, c.num_devices());
      std::shuffle(all.begin(), all.end(), rng);
      const int k = 2 + static_cast<int>(rng() % std::min<unsigned>(12, c.num_devices() - 1));
      std::vector<int> grp(all.begin(), all.begin() + k);
      if (trial % 2 == 0) std::sort(grp.begin(), grp.end());
      double bw = std::numeric_limits<double>::infinity(), lat = 0;
      for (int p = 0; p < k; ++p) {
        for (int q = p + 1; q < k; ++q) {
          bw = std::min(bw, link_bandwidth(c, grp[p], grp[q]));
          lat = std::max(lat, link_latency(c, grp[p], grp[q]));
        }
      }
      const GroupLinks g = group_links(c, grp);
      ASSERT_DOUBLE_EQ(g.bw_bytes_per_s, bw) << "trial " << trial;
      ASSERT_DOUBLE_EQ(g.latency_s, lat) << "trial " << trial;
      ASSERT_EQ(g.intra_node, same_node(c, grp));
    }
  }
}

TEST(HwCluster, CpuLocalProfileShape) {
  const Cluster c = resolve_cluster(STRATA_SOURCE_DIR "/examples/cluster_cpu_local.json", cat());
  ASSERT_EQ(c.num_devices(), 2);
  EXPECT_EQ(c.gpu_of(0).name, "cpu-local");
  EXPECT_DOUBLE_EQ(c.gpu_of(0).peak(Dtype::bf16), 5e10);
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 1), 2e9);
  EXPECT_DOUBLE_EQ(link_latency(c, 0, 1), 2e-5);
  const Cluster local = resolve_cluster("cpu-local", cat());
  EXPECT_EQ(local.gpu_of(0).name, "cpu");
}

}  // namespace
}  // namespace strata::hw
