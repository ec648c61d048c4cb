// tests/hw/test_catalog: every built-in catalog entry loads with positive numbers and a source; the peak-FLOP/s
// fallback rule; lookups and their "valid: ..." errors.
#include <gtest/gtest.h>

#include <set>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::hw {
namespace {

const Catalog& cat() {
  static const Catalog c = builtin_catalog();
  return c;
}

TEST(HwCatalog, EveryGpuHasPositiveNumbersAndASource) {
  ASSERT_GE(cat().gpus.size(), 19u);
  for (const auto& g : cat().gpus) {
    SCOPED_TRACE(g.name);
    EXPECT_GT(g.memory_bytes, 0);
    EXPECT_GT(g.memory_bw_bytes_per_s, 0);
    ASSERT_TRUE(g.supports(Dtype::fp32));
    for (const auto& [d, v] : g.peak_flops) EXPECT_GT(v, 0) << to_string(d);
    for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8}) EXPECT_GT(g.peak(d), 0);
    EXPECT_FALSE(g.source.empty());
    EXPECT_FALSE(g.display_name.empty());
    EXPECT_EQ(g.name, core::to_lower(g.name));
  }
}

TEST(HwCatalog, RequiredGpuTypesArePresent) {
  for (const char* name : {"v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm", "h100-pcie", "h200", "t4",
                           "a10", "a10g", "l4", "rtx-3090", "rtx-4090", "titan-rtx", "k80", "p100", "mi250x",
                           "mi300x", "cpu"}) {
    EXPECT_NE(cat().find_gpu(name), nullptr) << name;
  }
}

TEST(HwCatalog, DatasheetNumbersDense) {
  const auto& a100 = cat().gpu("a100-80gb");
  EXPECT_DOUBLE_EQ(a100.peak(Dtype::bf16), 312e12);
  EXPECT_DOUBLE_EQ(a100.peak(Dtype::tf32), 156e12);
  EXPECT_DOUBLE_EQ(a100.memory_bytes, 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(a100.memory_bw_bytes_per_s, 2039e9);
  const auto& h100 = cat().gpu("H100-SXM");  // case-insensitive
  EXPECT_DOUBLE_EQ(h100.peak(Dtype::bf16), 989.4e12);  // dense, not the 1979 sparse figure
  EXPECT_DOUBLE_EQ(h100.peak(Dtype::fp8), 1978.9e12);
  EXPECT_DOUBLE_EQ(cat().gpu("v100-16gb").peak(Dtype::fp16), 125e12);
  EXPECT_DOUBLE_EQ(cat().gpu("h200").memory_bytes, 141e9);
}

TEST(HwCatalog, PeakFallbackRule) {
  // bf16 on V100 runs on the fp16 tensor-core path; fp8 on A100 on bf16/fp16; tf32 on V100 on fp32.
  EXPECT_DOUBLE_EQ(cat().gpu("v100-16gb").peak(Dtype::bf16), 125e12);
  EXPECT_DOUBLE_EQ(cat().gpu("v100-16gb").peak(Dtype::tf32), 15.7e12);
  EXPECT_DOUBLE_EQ(cat().gpu("v100-16gb").peak(Dtype::fp8), 125e12);
  EXPECT_DOUBLE_EQ(cat().gpu("a100-40gb").peak(Dtype::fp8), 312e12);
  EXPECT_DOUBLE_EQ(cat().gpu("t4").peak(Dtype::bf16), 65e12);
  EXPECT_DOUBLE_EQ(cat().gpu("k80").peak(Dtype::fp16), 4.37e12);
  EXPECT_DOUBLE_EQ(cat().gpu("mi250x").peak(Dtype::tf32), 47.85e12);
  EXPECT_DOUBLE_EQ(cat().gpu("cpu").peak(Dtype::bf16), cat().gpu("cpu").peak(Dtype::fp32));
  // A type with tf32 but no fp16: fp16 falls to tf32, not fp32.
  GpuSpec g;
  g.peak_flops = {{Dtype::fp32, 1.0}, {Dtype::tf32, 2.0}};
  EXPECT_DOUBLE_EQ(g.peak(Dtype::fp16), 2.0);
  EXPECT_DOUBLE_EQ(g.peak(Dtype::fp8), 2.0);
  g.peak_flops[Dtype::fp16] = 3.0;
  g.peak_flops[Dtype::bf16] = 5.0;
  EXPECT_DOUBLE_EQ(g.peak(Dtype::fp8), 5.0);  // max of bf16/fp16
}

TEST(HwCatalog, RunsAsNamesThePathThePeakComesFrom) {
  EXPECT_EQ(cat().gpu("h100-sxm").runs_as(Dtype::fp8), Dtype::fp8);  // native
  EXPECT_EQ(cat().gpu("a100-40gb").runs_as(Dtype::fp8), Dtype::bf16);
  EXPECT_EQ(cat().gpu("v100-16gb").runs_as(Dtype::bf16), Dtype::fp16);
  EXPECT_EQ(cat().gpu("v100-16gb").runs_as(Dtype::tf32), Dtype::fp32);
  EXPECT_EQ(cat().gpu("k80").runs_as(Dtype::fp16), Dtype::fp32);
  GpuSpec g;
  g.peak_flops = {{Dtype::fp32, 1.0}, {Dtype::tf32, 2.0}};
  EXPECT_EQ(g.runs_as(Dtype::fp8), Dtype::tf32);
  g.peak_flops[Dtype::fp16] = 6.0;
  g.peak_flops[Dtype::bf16] = 5.0;
  EXPECT_EQ(g.runs_as(Dtype::fp8), Dtype::fp16);  // the faster of bf16/fp16
  // peak(d) is the rate of runs_as(d) for every catalog type and dtype.
  for (const auto& t : cat().gpus)
    for (Dtype d : {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8})
      EXPECT_DOUBLE_EQ(t.peak(d), t.peak_flops.at(t.runs_as(d))) << t.name;
}

TEST(HwCatalog, EveryLinkHasPositiveNumbersAndASource) {
  for (const char* name : {"nvlink1", "nvlink2", "nvlink3", "nvlink4", "nvswitch3", "nvswitch4", "pcie3", "pcie4",
                           "pcie5", "ib-edr", "ib-hdr", "ib-ndr", "eth-10g", "eth-25g", "eth-50g", "eth-100g",
                           "eth-400g", "loopback"}) {
    EXPECT_NE(cat().find_link(name), nullptr) << name;
  }
  for (const auto& l : cat().links) {
    SCOPED_TRACE(l.name);
    EXPECT_GT(l.bw_bytes_per_s, 0);
    EXPECT_GT(l.latency_s, 0);
    EXPECT_LT(l.latency_s, 1e-3);
    EXPECT_FALSE(l.source.empty());
  }
  EXPECT_DOUBLE_EQ(cat().link("ib-hdr").bw_bytes_per_s, 25e9);    // 200 Gbit/s
  EXPECT_DOUBLE_EQ(cat().link("eth-10g").bw_bytes_per_s, 1.25e9);  // 10 Gbit/s
  EXPECT_DOUBLE_EQ(cat().link("nvlink3").bw_bytes_per_s, 300e9);
}

TEST(HwCatalog, EveryPresetResolvesToAConsistentCluster) {
  std::set<std::string> names;
  for (const auto& n : cat().nodes) names.insert(n.name);
  for (const char* name : {"p3.8xlarge", "p3.16xlarge", "g4dn.12xlarge", "p4d.24xlarge", "p5.48xlarge", "dgx-a100",
                           "dgx-h100", "dgx-h200"}) {
    EXPECT_TRUE(names.count(name)) << name;
  }
  for (const auto& n : cat().nodes) {
    SCOPED_TRACE(n.name);
    EXPECT_FALSE(n.source.empty());
    const Cluster c = resolve_cluster(n.name, cat());
    ASSERT_EQ(c.num_devices(), n.gpus);
    ASSERT_EQ(c.nodes.size(), 1u);
    EXPECT_EQ(c.gpu_of(0).name, n.gpu);
    if (n.intra_bw_matrix) {
      EXPECT_EQ(n.intra_bw_matrix->size(), static_cast<std::size_t>(n.gpus));
    }
    for (int a = 0; a < n.gpus; ++a) {
      for (int b = 0; b < n.gpus; ++b) {
        if (a != b) EXPECT_GT(link_bandwidth(c, a, b), 0);
      }
    }
  }
}

TEST(HwCatalog, PresetsMatchTheirDocumentedShapes) {
  const auto& p3 = cat().node("p3.8xlarge");
  EXPECT_EQ(p3.gpus, 4);
  EXPECT_EQ(p3.gpu, "v100-16gb");
  EXPECT_EQ(p3.intra_link, "nvlink2");   // AMP: NVLink inside p3.8xlarge
  EXPECT_EQ(p3.nic_link, "eth-10g");     // AMP: 10 Gbit/s between nodes
  const auto& g4 = cat().node("g4dn.12xlarge");
  EXPECT_EQ(g4.intra_link, "pcie3");     // AMP: PCIe inside g4dn
  EXPECT_EQ(g4.nic_link, "eth-50g");
  const auto& p5 = cat().node("p5.48xlarge");
  EXPECT_DOUBLE_EQ(p5.nics * cat().link(p5.nic_link).bw_bytes_per_s, 3200e9 / 8);  // 3200 Gbit/s in total
  const auto& p4 = cat().node("p4d.24xlarge");
  EXPECT_DOUBLE_EQ(p4.nics * cat().link(p4.nic_link).bw_bytes_per_s, 400e9 / 8);
  EXPECT_EQ(cat().node("dgx-h100").nic_link, "ib-ndr");
  EXPECT_EQ(cat().node("dgx-a100").gpu, "a100-80gb");
}

TEST(HwCatalog, UnknownNamesListTheValidOnes) {
  try {
    cat().gpu("v200", "model.json: gpu");
    FAIL();
  } catch (const core::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("model.json: gpu: unknown GPU type 'v200'"), std::string::npos) << m;
    EXPECT_NE(m.find("a100-80gb"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos);
  }
  EXPECT_THROW(cat().link("nvlink9"), core::InputError);
  EXPECT_THROW(cat().node("p9"), core::InputError);
  EXPECT_THROW(parse_dtype("fp64", "--dtype"), core::InputError);
  EXPECT_EQ(parse_dtype("BF16", "--dtype"), Dtype::bf16);
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::fp8), 1);
  EXPECT_DOUBLE_EQ(dtype_bytes(Dtype::tf32), 4);
}

}  // namespace
}  // namespace strata::hw
