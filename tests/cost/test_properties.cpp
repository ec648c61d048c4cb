// Monotonicity property tests of the cost model: more bandwidth is never slower, more GPUs of the same kind at
// fixed per-GPU work never give less aggregate throughput, recompute never stores more activations.
#include <gtest/gtest.h>

#include <random>

#include "helpers.hpp"

using namespace strata;
using namespace strata::cost;

namespace {
std::vector<std::string> strategies_for_16() {
  return {"dp=16,gbs=64",
          "dp=2,tp=8,gbs=16",
          "dp=2,tp=2,pp=4,gbs=32,mbs=2",
          "dp=4,tp=2,pp=2,gbs=64,zero=1",
          "dp=8,tp=2,gbs=32,zero=3",
          "dp=1,tp=4,pp=4,gbs=16,v=2",
          "dp=2,tp=4,pp=2,gbs=32,schedule=gpipe",
          "dp=4,pp=4,gbs=32,schedule=2bw",
          "dp=2,tp=2,pp=4,gbs=32,schedule=pipedream,recompute=full"};
}
}  // namespace

TEST(CostProperties, MoreBandwidthIsNeverSlower) {
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = cost_test::cluster("dgx-a100:2");
  for (const auto& text : strategies_for_16()) {
    double previous = std::numeric_limits<double>::infinity();
    for (double eff : {0.1, 0.3, 0.6, 1.0}) {
      auto k = builtin_constants();
      k.intra_node_bw_efficiency = eff;
      k.inter_node_bw_efficiency = eff;
      CostOptions opt;
      opt.constants = &k;
      const double t = cost_test::run(m, c, text, opt).iteration_time_s;
      EXPECT_LE(t, previous * (1 + 1e-12)) << text << " eff " << eff;
      previous = t;
    }
  }
  // Faster NICs in the catalog: 10 → 25 → 100 Gb/s Ethernet between the same GPUs.
  const auto catalog = hw::builtin_catalog();
  double previous = std::numeric_limits<double>::infinity();
  for (const char* nic : {"eth-10g", "eth-25g", "eth-100g"}) {
    hw::NodeSpec node = catalog.node("p3.8xlarge");
    node.nic_link = nic;
    node.intra_bw_matrix.reset();
    hw::Cluster c2;
    c2.name = "custom";
    hw::add_nodes(c2, node, 4, catalog);
    const double t = cost_test::run(model::zoo_model("gpt2-medium"), c2, "dp=4,tp=2,pp=2,gbs=32").iteration_time_s;
    EXPECT_LE(t, previous) << nic;
    previous = t;
  }
}

TEST(CostProperties, MoreGpusAtFixedPerGpuWorkNeverLessThroughput) {
  // Data parallel scale-out: dp doubles with gbs, per-GPU work fixed.
  for (const char* model_name : {"gpt2-medium", "megatron-1.7b", "llama2-7b"}) {
    const auto m = model::zoo_model(model_name);
    double previous = 0;
    for (int nodes : {1, 2, 4, 8}) {
      const auto c = cost_test::cluster(fmt::format("dgx-a100:{}", nodes));
      for (int zero : {0, 1, 3}) {
        const auto e = cost_test::run(m, c, fmt::format("tp=8,dp={},gbs={},zero={}", nodes, 8 * nodes, zero));
        if (zero == 0) {
          EXPECT_GE(e.samples_per_s, previous * (1 - 1e-12)) << model_name << " nodes " << nodes;
          previous = e.samples_per_s;
        }
      }
    }
  }
}

TEST(CostProperties, RecomputeNeverStoresMoreActivations) {
  std::mt19937 rng(7);
  const auto c = cost_test::cluster("dgx-a100:2");
  for (const char* model_name : {"megatron-1.7b", "llama2-7b", "t5-large-32", "vit-huge-32", "bert-large"}) {
    const auto m = model::zoo_model(model_name);
    for (const char* base : {"dp=2,tp=2,pp=4,gbs=32", "dp=16,gbs=32", "dp=1,tp=4,pp=4,gbs=16,schedule=gpipe"}) {
      for (const char* sp : {"off", "on"}) {
        double last = std::numeric_limits<double>::infinity();
        for (const char* rc : {"none", "selective", "full"}) {
          const auto text = fmt::format("{},recompute={},sp={}", base, rc, sp);
          const auto s = complete_strategy(parse_strategy(text), m, c);
          const auto e = estimate(m, c, s);
          double act = 0;
          for (const auto& st : e.stages) act = std::max(act, st.memory.activations_bytes);
          EXPECT_LE(act, last * (1 + 1e-12)) << model_name << " " << text;
          last = act;
        }
      }
    }
  }
}
