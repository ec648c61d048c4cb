// tests/plan/test_scale_up_plans: planning on 2025-26 hardware — the same GPUs and NICs in one 72-GPU NVLink domain
// (GB200 NVL72) or in 8-GPU nodes pick different degrees because only the domain differs, and on the rack every
// group stays on NVLink; block-scaled dtypes plan where the GPUs have them and are refused where they do not; a
// mixed H100 + GB200 cluster plans per-stage.
#include <gtest/gtest.h>

#include "strata/core/error.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/placement.hpp"
#include "strata/plan/search.hpp"
#include "strata/plan/stage_search.hpp"

namespace strata::plan {
namespace {

const hw::Catalog& cat() {
  static const hw::Catalog c = hw::builtin_catalog();
  return c;
}

// 72 GB200 GPUs in 8-GPU nodes with the rack's per-GPU NIC (one 400 Gb/s ConnectX-7 each): the NVL72 rack but
// with the NVLink domain cut at the node.
hw::Cluster gb200_in_8gpu_nodes() {
  hw::NodeSpec node = cat().node("gb200-nvl72");
  node.name = "gb200-8";
  node.gpus = 8;
  node.nics = 8;
  node.gpus_per_host = 0;
  hw::Cluster c;
  c.name = "gb200-8:9";
  hw::add_nodes(c, node, 9, cat());
  return c;
}

PlanOptions options(std::int64_t gbs) {
  PlanOptions opt;
  opt.global_batch = gbs;
  opt.baselines = false;
  return opt;
}

TEST(ScaleUpPlans, TheRackPicksOtherDegreesThanEightGpuNodesOfTheSameGpus) {
  const auto m = model::zoo_model("gpt3-175b");
  const auto rack = hw::resolve_cluster("gb200-nvl72:1", cat());
  const auto nodes = gb200_in_8gpu_nodes();
  ASSERT_EQ(rack.num_devices(), nodes.num_devices());
  const auto on_rack = plan(m, rack, options(72));
  const auto on_nodes = plan(m, nodes, options(72));
  ASSERT_FALSE(on_rack.top.empty());
  ASSERT_FALSE(on_nodes.top.empty());
  const auto& a = on_rack.top.front().strategy;
  const auto& b = on_nodes.top.front().strategy;
  EXPECT_TRUE(a.dp != b.dp || a.tp != b.tp || a.pp != b.pp || a.cp != b.cp)
      << cost::to_cli_string(a) << " vs " << cost::to_cli_string(b);
  // The reason: on the rack no group leaves the NVLink domain; in 8-GPU nodes the pipeline crosses the NICs.
  const std::string where = group_tiers_summary(rack, a);
  EXPECT_EQ(where.find("across"), std::string::npos) << where;
  EXPECT_NE(where.find("nvlink5 domain (72 GPUs)"), std::string::npos) << where;
  EXPECT_NE(group_tiers_summary(nodes, b).find("across"), std::string::npos);
  // And it is faster: the same GPUs with more NVLink.
  EXPECT_LT(on_rack.top.front().estimate.iteration_time_s, on_nodes.top.front().estimate.iteration_time_s);
}

TEST(ScaleUpPlans, BlockScaledDtypesPlanOnBlackwellAndAreRefusedOnHopper) {
  const auto m = model::zoo_model("llama3-8b");
  auto opt = options(64);
  opt.dtype = hw::Dtype::mxfp8;
  const auto r = plan(m, hw::resolve_cluster("b200:1", cat()), opt);
  ASSERT_FALSE(r.top.empty());
  EXPECT_EQ(r.top.front().strategy.dtype, hw::Dtype::mxfp8);
  opt.dtype = hw::Dtype::fp4;
  const auto f = plan(m, hw::resolve_cluster("b200:1", cat()), opt);
  ASSERT_FALSE(f.top.empty());
  // NVFP4 GEMMs run at twice the MXFP8 rate: the step is faster (not twice: attention and the rest stay bf16).
  EXPECT_LT(f.top.front().estimate.iteration_time_s, r.top.front().estimate.iteration_time_s);
  try {
    plan(m, hw::resolve_cluster("dgx-h100:1", cat()), opt);
    FAIL() << "fp4 on H100 must be refused";
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("h100-sxm has no fp4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("b200"), std::string::npos) << msg;  // names the GPUs that have it
  }
}

TEST(ScaleUpPlans, MixedH100AndGb200PlansPerStage) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:1+gb200-nvl36:1", cat());
  StageSearchOptions opt;
  opt.global_batch = 64;
  const auto r = search_per_stage(m, c, opt);
  ASSERT_TRUE(r.found);
  bool gb200 = false;
  for (const auto& v : cost::stage_views(r.strategy, c))
    for (int d : v.devices) gb200 |= c.gpu_of(d).name == "gb200";
  EXPECT_TRUE(gb200);  // the search may leave the slower type idle; that it costs the mix is what is tested
  EXPECT_GT(r.estimate.samples_per_s, 0);
  EXPECT_TRUE(r.estimate.fits);
}

}  // namespace
}  // namespace strata::plan
