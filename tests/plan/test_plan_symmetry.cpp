// tests/plan/test_plan_symmetry: the symmetry-aware planner (stage contexts once per translated-twin stage, layer
// costs once per variant, contexts and layer costs handed to cost::estimate) gives byte-identical plan files to
// the per-device reference path (PlanOptions::symmetry = false) on random clusters of up to 1,024 GPUs: mixed
// node presets, racks with oversubscription, NIC sharing (p4d, g4dn), intra-node bandwidth matrices (p3), and a
// rack-uneven node count, and with an oversubscribed CPU host (full strategies there); plus estimate() with and
// without PrebuiltStages (and in its light form, completed afterwards), bit for bit (issue 22).
#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>

#include "strata/cost/estimate.hpp"
#include "strata/cost/stage.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

using Rng = std::mt19937_64;
int uni(Rng& r, int lo, int hi) { return lo + static_cast<int>(r() % static_cast<std::uint64_t>(hi - lo + 1)); }

// One or two node presets, ≤ 1,024 GPUs, random racks and oversubscription.
hw::Cluster random_cluster(Rng& r, std::string& spec) {
  static const char* presets[] = {"dgx-a100", "dgx-h100", "p4d.24xlarge", "p3.8xlarge", "g4dn.12xlarge",
                                  "p5.48xlarge", "p3.16xlarge"};
  const int kinds = uni(r, 1, 2);
  spec.clear();
  for (int k = 0; k < kinds; ++k) {
    const std::string name = presets[uni(r, 0, 6)];
    const int gpus = name == "p3.8xlarge" || name == "g4dn.12xlarge" ? 4 : 8;
    const int max_nodes = (1024 / kinds) / gpus;
    // Powers of two and a few odd counts (uneven racks, dp not dividing nodes).
    const int count = uni(r, 0, 3) == 0 ? uni(r, 1, 24) : 1 << uni(r, 0, 30 - __builtin_clz(max_nodes));
    spec += (spec.empty() ? "" : "+") + name + ":" + std::to_string(count);
  }
  hw::Cluster c = hw::resolve_cluster(spec, hw::builtin_catalog());
  if (uni(r, 0, 1) == 1) {
    c.nodes_per_rack = uni(r, 1, 6);
    c.rack_oversubscription = uni(r, 0, 1) ? 1.0 : 2.0 + uni(r, 0, 2);
    for (auto& n : c.nodes) n.rack = n.id / c.nodes_per_rack;
  }
  return c;
}

std::string plan_file(const model::Model& m, const hw::Cluster& c, PlanOptions opt) {
  const PlanResult r = plan(m, c, opt);
  nlohmann::ordered_json j = plan_to_json(r, m, c, opt);
  j.erase("search_time_s");
  return j.dump();
}

TEST(PlanSymmetry, ByteIdenticalToPerDevicePathOnRandomClusters) {
  Rng r(22);
  static const char* models[] = {"gpt2-small", "amp-gpt2", "llama2-7b", "megatron-18.4b"};
  int planned = 0;
  for (int i = 0; i < 24; ++i) {
    std::string spec;
    const hw::Cluster c = random_cluster(r, spec);
    const model::Model m = model::zoo_model(models[uni(r, 0, 3)]);
    PlanOptions opt;
    opt.global_batch = std::int64_t{1} << uni(r, 5, 11);
    opt.space = uni(r, 0, 3) == 0 ? Space::three_d : Space::full;
    opt.top_k = uni(r, 1, 4);
    opt.max_pp = 16;  // keeps the reference path fast; symmetry is exercised by dp and tp
    SCOPED_TRACE(spec + " " + m.name + " gbs " + std::to_string(opt.global_batch));
    std::string fast, reference;
    try {
      fast = plan_file(m, c, opt);
    } catch (const std::exception& e) {
      fast = std::string("error: ") + e.what();
    }
    opt.symmetry = false;
    try {
      reference = plan_file(m, c, opt);
    } catch (const std::exception& e) {
      reference = std::string("error: ") + e.what();
    }
    EXPECT_EQ(fast, reference);
    planned += fast.rfind("error", 0) == 0 ? 0 : 1;
  }
  EXPECT_GE(planned, 14);  // most cases produce a plan, not only the same error
}

TEST(PlanSymmetry, ByteIdenticalWithAnOversubscribedCpuHost) {
  // Nodes running more devices than CPU cores: the host-CPU bound reads every stage's devices, so the search costs
  // full strategies there (no light form); the plan file is still the reference path's.
  hw::Cluster c = hw::resolve_cluster("p3.8xlarge:2+g4dn.12xlarge:2", hw::builtin_catalog());
  for (auto& n : c.nodes) n.cpu_cores = 2;
  c.has_oversubscribed_cpu_node = true;
  const model::Model m = model::zoo_model("gpt2-small");
  PlanOptions opt;
  opt.global_batch = 64;
  opt.top_k = 3;
  const std::string fast = plan_file(m, c, opt);
  opt.symmetry = false;
  EXPECT_EQ(fast, plan_file(m, c, opt));
  EXPECT_NE(fast.find("host_cpu_bound"), std::string::npos);  // the bound is in play
}

TEST(PlanSymmetry, EstimateWithPrebuiltStagesIsBitIdentical) {
  // A heterogeneous 2-type cluster with racks: two stage classes, twins among the stages.
  hw::Cluster c = hw::resolve_cluster("dgx-a100:4+dgx-h100:4", hw::builtin_catalog());
  c.nodes_per_rack = 2;
  c.rack_oversubscription = 2;
  for (auto& n : c.nodes) n.rack = n.id / c.nodes_per_rack;
  const model::Model m = model::zoo_model("megatron-18.4b");
  cost::Strategy s;
  s.dp = 2;
  s.tp = 4;
  s.pp = 8;
  s.micro_batch = 2;
  s.global_batch = 64;
  s.zero_stage = 1;
  s.recompute = model::Recompute::selective;
  ASSERT_TRUE(optimal_split(m, c, s));
  // Stage classes and contexts as the planner builds them (distinct context numbers).
  std::vector<cost::StageContext> ctx;
  std::vector<int> cls;
  for (int st = 0; st < s.pp; ++st) {
    std::vector<int> devs(s.placement.begin() + st * s.dp * s.tp, s.placement.begin() + (st + 1) * s.dp * s.tp);
    ctx.push_back(cost::make_stage_context(m, c, s, devs));
    cls.push_back(st);
  }
  std::vector<int> shape_of(m.layers.size());
  std::vector<std::vector<cost::LayerStageCost>> shape(ctx.size());
  for (std::size_t k = 0; k < ctx.size(); ++k)
    for (std::size_t l = 0; l < m.layers.size(); ++l) {
      shape_of[l] = static_cast<int>(l);
      shape[k].push_back(cost::layer_stage_cost(m, m.layers[l], ctx[k], s.recompute));
    }
  cost::PrebuiltStages pre{ctx, cls, shape, shape_of};
  cost::CostOptions with;
  with.prebuilt = &pre;
  const auto a = cost::to_json(cost::estimate(m, c, s)).dump();
  const auto b = cost::to_json(cost::estimate(m, c, s, with)).dump();
  EXPECT_EQ(a, b);
  pre.shape_cost = {};  // contexts only
  EXPECT_EQ(a, cost::to_json(cost::estimate(m, c, s, with)).dump());
  // The planner's light form: memoised cut times, the peak FLOP/s sum given, no placement and no stage device
  // lists (the caller fills them from the placement, plan/unit_memo complete_light): the same once completed.
  const std::size_t per_stage = static_cast<std::size_t>(s.dp) * s.tp;
  auto stage = [&](int st) {
    return std::span<const int>(s.placement).subspan(static_cast<std::size_t>(st) * per_stage, per_stage);
  };
  int cut_queries = 0;
  pre.shape_cost = shape;
  pre.cut_time_s = [&](int st, double bytes) {
    ++cut_queries;
    return cost::p2p_time(c, s, stage(st), stage(st + 1), bytes);
  };
  pre.peak_flops_sum = hw::total_peak_flops(c, s.dtype);
  pre.stage_devices = false;
  cost::Strategy light = s;
  light.placement.clear();
  cost::Estimate e = cost::estimate(m, c, light, with);
  EXPECT_EQ(cut_queries, s.pp - 1);
  for (int st = 0; st < s.pp; ++st) {
    EXPECT_TRUE(e.stages[st].devices.empty());
    e.stages[st].devices.assign(stage(st).begin(), stage(st).end());
  }
  EXPECT_EQ(a, cost::to_json(e).dump());
}

}  // namespace
}  // namespace strata::plan
