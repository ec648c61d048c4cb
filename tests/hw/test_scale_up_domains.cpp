// tests/hw/test_scale_up_domains: the 2025-26 catalog (Blackwell, GB200/GB300 NVL72, MI3xx, L40S, H800), the
// block-scaled dtypes (mxfp8, fp4) and their no-fallback rule, and NVLink domains larger than a host: an NVL72 rack
// is one node of 72 GPUs on 18 hosts of 4 (gpus_per_host), so every GPU pair of the rack has the NVLink 5 rate.
#include <gtest/gtest.h>

#include "../error_of.hpp"
#include "strata/core/error.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::hw {
namespace {

const Catalog& cat() {
  static const Catalog c = builtin_catalog();
  return c;
}

using strata_test::error_of;

TEST(ScaleUpCatalog, NewGpusArePresentWithDenseNumbers) {
  for (const char* name : {"b200", "b300", "gb200", "gb300", "mi325x", "mi350x", "mi355x", "l40s", "h100-nvl",
                           "h200-nvl", "h800"}) {
    SCOPED_TRACE(name);
    const GpuSpec* g = cat().find_gpu(name);
    ASSERT_NE(g, nullptr);
    EXPECT_GT(g->memory_bytes, 40e9);
    EXPECT_FALSE(g->source.empty());
  }
  // Blackwell runs MXFP8 at the FP8 rate and NVFP4 above it; Hopper has neither.
  const GpuSpec& b200 = cat().gpu("b200");
  ASSERT_TRUE(b200.supports(Dtype::mxfp8));
  ASSERT_TRUE(b200.supports(Dtype::fp4));
  EXPECT_DOUBLE_EQ(b200.peak(Dtype::mxfp8), b200.peak(Dtype::fp8));
  EXPECT_GT(b200.peak(Dtype::fp4), b200.peak(Dtype::fp8));
  EXPECT_GT(b200.peak(Dtype::bf16), cat().gpu("h100-sxm").peak(Dtype::bf16));
  EXPECT_FALSE(cat().gpu("h100-sxm").supports(Dtype::mxfp8));
  EXPECT_FALSE(cat().gpu("h100-sxm").supports(Dtype::fp4));
  EXPECT_TRUE(cat().gpu("mi355x").supports(Dtype::fp4));
  // H800: H100 compute with the NVLink cut (the export-control part DeepSeek-V3 trained on).
  EXPECT_DOUBLE_EQ(cat().gpu("h800").peak(Dtype::bf16), cat().gpu("h100-sxm").peak(Dtype::bf16));
}

TEST(ScaleUpCatalog, BlockScaledDtypesParseAndCountTheirScales) {
  EXPECT_EQ(parse_dtype("MXFP8", "t"), Dtype::mxfp8);
  EXPECT_EQ(parse_dtype("nvfp4", "t"), Dtype::fp4);
  EXPECT_EQ(parse_dtype("fp4", "t"), Dtype::fp4);
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::mxfp8), 1.0 + 1.0 / 32);  // one E8M0 scale per 32 elements
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::fp4), 0.5 + 1.0 / 16);    // one E4M3 scale per 16 elements
  EXPECT_TRUE(needs_native_support(Dtype::fp4));
  EXPECT_FALSE(needs_native_support(Dtype::fp8));
  const std::string e = error_of([] { parse_dtype("fp2", "plan: --dtype"); });
  EXPECT_NE(e.find("mxfp8"), std::string::npos) << e;  // the valid names are listed
  EXPECT_NE(e.find("fp4"), std::string::npos) << e;
}

TEST(ScaleUpDomains, Nvl72IsOneNodeOf72GpusOn18Hosts) {
  const Cluster c = resolve_cluster("gb200-nvl72:2", cat());
  ASSERT_EQ(c.num_devices(), 144);
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[0].num_devices, 72);
  EXPECT_EQ(c.nodes[0].gpus_per_host, 4);
  // GPUs 0 and 71 sit on different trays of one rack: NVLink 5, not the network.
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 71), cat().link("nvlink5").bw_bytes_per_s);
  EXPECT_LT(link_bandwidth(c, 0, 72), link_bandwidth(c, 0, 71));  // the next rack is over the NICs
  const auto tiers = tier_rows(c);
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].nodes, 2);
  EXPECT_EQ(tiers[0].hosts, 18);
  EXPECT_EQ(tiers[0].gpus_per_host, 4);
  EXPECT_EQ(tiers[0].domain_gpus, 72);
  EXPECT_EQ(tiers[0].domain_link, "nvlink5");
  EXPECT_GT(tiers[0].nic_bw_per_gpu_bytes_per_s, 0);
  // An HGX node: one host of 8.
  const auto hgx = tier_rows(resolve_cluster("b200:2", cat()));
  ASSERT_EQ(hgx.size(), 1u);
  EXPECT_EQ(hgx[0].hosts, 1);
  EXPECT_EQ(hgx[0].domain_gpus, 8);
  // A tp group of 16 inside the rack stays on NVLink; across two HGX nodes it does not.
  std::vector<int> sixteen(16);
  for (int i = 0; i < 16; ++i) sixteen[i] = i;
  EXPECT_TRUE(group_links(c, sixteen).intra_node);
  EXPECT_FALSE(group_links(resolve_cluster("b200:2", cat()), sixteen).intra_node);
}

TEST(ScaleUpDomains, NodesWithABandwidthMatrixShareOneTierRow) {
  // p3.16xlarge has an 8×8 NVLink2 matrix: its tier row names the matrix and its slowest pair, once for both nodes.
  const auto tiers = tier_rows(resolve_cluster("p3.16xlarge:2", cat()));
  ASSERT_EQ(tiers.size(), 1u);
  EXPECT_EQ(tiers[0].nodes, 2);
  EXPECT_EQ(tiers[0].domain_link, "custom matrix");
  EXPECT_DOUBLE_EQ(tiers[0].domain_bw_bytes_per_s, 15.75e9);
}

TEST(ScaleUpDomains, HostSizeMustDivideTheDomain) {
  const std::string e = error_of([] {
    cluster_from_json(nlohmann::json::parse(R"({"nodes": [{"count": 1, "name": "rack", "gpu": "gb200",
        "gpus": 72, "gpus_per_host": 5, "intra_link": "nvlink5", "nics": 72, "nic_link": "ib-ndr"}]})"),
                      "c.json", cat());
  });
  EXPECT_NE(e.find("gpus_per_host"), std::string::npos) << e;
  EXPECT_NE(e.find("does not divide"), std::string::npos) << e;
  EXPECT_NE(e.find("valid: 1, 2, 3, 4, 6, 8, 9, 12, 18, 24, 36, 72"), std::string::npos) << e;
}

TEST(ScaleUpDomains, UnknownGpuNamesTheChoices) {
  const std::string e = error_of([] { resolve_cluster("b201:4", cat()); });
  EXPECT_NE(e.find("b200"), std::string::npos) << e;
}

}  // namespace
}  // namespace strata::hw
