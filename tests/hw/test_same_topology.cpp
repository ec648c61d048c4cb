// tests/hw/test_same_topology: hw::same_topology, the symmetry test of the planner and estimate (issue 22) —
// translations by whole nodes (and racks) are twins and give equal group_links for every sub-group; shifts by part
// of a node, across node kinds, across a rack boundary, or on a full bandwidth matrix are not.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "strata/hw/cluster.hpp"

namespace strata::hw {
namespace {

std::vector<int> range(int first, int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

bool same_links(const GroupLinks& a, const GroupLinks& b) {
  return a.bw_bytes_per_s == b.bw_bytes_per_s && a.latency_s == b.latency_s && a.num_nodes == b.num_nodes &&
         a.max_devices_per_nic == b.max_devices_per_nic && a.num_racks == b.num_racks &&
         a.inter_bw_bytes_per_s == b.inter_bw_bytes_per_s && a.intra_bw_bytes_per_s == b.intra_bw_bytes_per_s;
}

Cluster racked(const char* spec, int nodes_per_rack, double over) {
  Cluster c = resolve_cluster(spec, builtin_catalog());
  c.nodes_per_rack = nodes_per_rack;
  c.rack_oversubscription = over;
  for (auto& n : c.nodes) n.rack = n.id / nodes_per_rack;
  return c;
}

TEST(SameTopology, WholeNodeTranslationsAreTwinsWithEqualGroups) {
  const Cluster c = racked("p4d.24xlarge:8", 2, 2.0);  // 2 GPUs per NIC, racks of 2 nodes
  const auto a = range(0, 32), b = range(32, 32);       // 4 nodes each, starting at a rack boundary
  ASSERT_TRUE(same_topology(c, a, b));
  // Every strided sub-group (the tp and dp groups of any dp·tp split) has the same links.
  for (int tp : {1, 2, 4, 8, 16}) {
    const int dp = 32 / tp;
    for (int g = 0; g < dp; ++g) {
      std::vector<int> ga, gb;
      for (int j = 0; j < tp; ++j) ga.push_back(a[g * tp + j]), gb.push_back(b[g * tp + j]);
      EXPECT_TRUE(same_links(group_links(c, ga), group_links(c, gb))) << "tp " << tp << " group " << g;
    }
    for (int j = 0; j < tp; ++j) {
      std::vector<int> ga, gb;
      for (int g = 0; g < dp; ++g) ga.push_back(a[g * tp + j]), gb.push_back(b[g * tp + j]);
      EXPECT_TRUE(same_links(group_links(c, ga), group_links(c, gb))) << "dp group " << j;
    }
  }
}

TEST(SameTopology, RejectsShiftsKindsRacksAndMatrices) {
  const Cluster c = racked("dgx-a100:4+dgx-h100:4", 3, 2.0);
  EXPECT_FALSE(same_topology(c, range(0, 8), range(4, 8)));    // half a node: other local indices
  EXPECT_FALSE(same_topology(c, range(0, 16), range(32, 16)));  // A100 nodes vs H100 nodes
  EXPECT_TRUE(same_topology(c, range(0, 16), range(8, 16)));    // nodes 0-1 and 1-2: both inside rack 0
  EXPECT_FALSE(same_topology(c, range(0, 16), range(16, 16)));  // nodes 2-3 straddle racks 0 | 1
  EXPECT_TRUE(same_topology(c, range(0, 8), range(8, 8)));      // one node each, same kind
  EXPECT_FALSE(same_topology(c, range(0, 8), range(8, 7)));     // lengths differ
  Cluster m = resolve_cluster("dgx-a100:2", builtin_catalog());
  m.bw_matrix = std::vector<std::vector<double>>(16, std::vector<double>(16, 1e11));
  EXPECT_FALSE(same_topology(m, range(0, 8), range(8, 8)));
}

TEST(SameTopology, BoundaryTwinsNeedTwinEndsAtTheSameNodeAndRackDistance) {
  const Cluster c = racked("dgx-h100:8", 2, 2.0);  // racks of 2 nodes
  // Stage boundaries node 0 → 1 and node 2 → 3: both inside one rack, one node apart.
  EXPECT_TRUE(same_boundary_topology(c, range(0, 8), range(8, 8), range(16, 8), range(24, 8)));
  // Node 1 → 2 crosses a rack boundary: the same node distance, another rack distance.
  EXPECT_FALSE(same_boundary_topology(c, range(0, 8), range(8, 8), range(8, 8), range(16, 8)));
  // Node 0 → 2 is two nodes away (and in another rack).
  EXPECT_FALSE(same_boundary_topology(c, range(0, 8), range(8, 8), range(0, 8), range(16, 8)));
  // Every rank pair of twin boundaries has the same pair links.
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(link_bandwidth(c, r, 8 + r), link_bandwidth(c, 16 + r, 24 + r));
    EXPECT_EQ(link_latency(c, r, 8 + r), link_latency(c, 16 + r, 24 + r));
  }
}

}  // namespace
}  // namespace strata::hw
