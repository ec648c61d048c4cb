// tests/export/test_export_facts: every flag/key strata emits exists in ../shared/engines with a valid value,
// and the engines' consistency rules (as those files state them) hold for the emitted configurations.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine_facts.hpp"
#include "strata/core/error.hpp"
#include "strata/export/export.hpp"
#include "strata/export/toml.hpp"
#include "../../src/export/internal.hpp"

namespace ex = strata::exporter;
namespace cost = strata::cost;
namespace model = strata::model;
namespace hw = strata::hw;

namespace {

struct Plan {
  const char* model;
  const char* cluster;
  const char* strategy;
};
// Covers: even split, first/last form, layout, interleaving, recompute modes, ZeRO 0-3, dtypes, GQA, MoE-free.
const Plan kPlans[] = {
    {"gpt3-175b", "dgx-a100:16", "tp=8,pp=8,mbs=1,gbs=64,v=3,recompute=selective,sp=on,zero=1"},
    {"gpt3-175b", "dgx-a100:16", "tp=8,pp=4,mbs=1,gbs=64,recompute=full,split=25+24+24+25"},
    {"gpt3-175b", "dgx-a100:16", "tp=8,pp=4,mbs=1,gbs=64,recompute=full,rlayers=3+3+3+3,split=21+28+28+21"},
    {"llama2-70b", "dgx-h100:4", "tp=4,pp=2,mbs=2,gbs=64,zero=3,dtype=fp16,split=40+42"},
    {"llama3-8b", "dgx-a100:2", "tp=2,pp=1,mbs=1,gbs=32,zero=2,sp=on"},
    {"small-gpt", "dgx-a100:1", "tp=1,pp=4,mbs=1,gbs=8,v=2,split=1+1+1+1+1+1+1+3"},
    {"llama3-8b", "dgx-h100:2", "tp=8,pp=2,mbs=1,gbs=32,sp=on,zero=0,dtype=fp8"},
    // torchtitan's forms of fp8 (torchao's separate casts) and full recompute (early stop).
    {"llama3-8b", "dgx-h100:2", "tp=8,pp=2,mbs=1,gbs=32,sp=on,zero=0,dtype=fp8,fp8cast=separate"},
    {"llama3-8b", "dgx-h100:2", "tp=4,pp=2,mbs=1,gbs=32,sp=on,zero=2,recompute=full,earlystop=on"},
};

struct Built {
  model::Model m;
  hw::Cluster c;
  cost::Strategy s;
};
Built build(const Plan& p) {
  Built b{model::zoo_model(p.model), hw::resolve_cluster(p.cluster, hw::builtin_catalog()), {}};
  b.s = cost::complete_strategy(cost::parse_strategy(p.strategy), b.m, b.c);
  return b;
}

TEST(ExportFacts, MegatronFlagsExistWithValidValuesAndRulesHold) {
  SKIP_WITHOUT_ENGINE_FACTS();
  const auto& opts = strata_test::megatron_options();
  for (const auto& p : kPlans) {
    const auto b = build(p);
    const auto e = ex::Engine::megatron;
    if (!ex::unexpressible_feature(e, b.m, b.c, b.s).empty()) continue;
    const auto args = ex::detail::megatron_arg_list(b.m, b.s);
    std::map<std::string, std::string> given;
    for (std::size_t i = 0; i < args.size(); ++i) {
      ASSERT_TRUE(opts.count(args[i])) << "unknown Megatron flag " << args[i];
      const auto& entry = opts.at(args[i]);
      const bool takes_value = entry.at("action") == "store";
      if (takes_value) {
        ASSERT_LT(i + 1, args.size());
        EXPECT_EQ(strata_test::check_value(entry, args[i + 1]), "") << args[i];
        given[args[i]] = args[i + 1];
        ++i;
      } else {
        given[args[i]] = "";
      }
    }
    const int L = std::stoi(given["--num-layers"]), pp = std::stoi(given["--pipeline-model-parallel-size"]);
    const int tp = std::stoi(given["--tensor-model-parallel-size"]);
    // rules heads_tp, seq_vs_pos, gbs_divisible, fp16_bf16_exclusive, recompute_full, selective_no_method
    EXPECT_EQ(std::stoi(given["--num-attention-heads"]) % tp, 0);
    EXPECT_GE(std::stoi(given["--max-position-embeddings"]), std::stoi(given["--seq-length"]));
    const int dp = b.c.num_devices() / (tp * pp);
    EXPECT_EQ(std::stoll(given["--global-batch-size"]) % (std::stoll(given["--micro-batch-size"]) * dp), 0);
    EXPECT_FALSE(given.count("--fp16") && given.count("--bf16"));
    if (given["--recompute-granularity"] == "full") EXPECT_TRUE(given.count("--recompute-method") && given.count("--recompute-num-layers"));
    if (given["--recompute-granularity"] == "selective") EXPECT_FALSE(given.count("--recompute-method"));
    // split rules: layout excludes the others; first/last rule; else even
    const bool layout = given.count("--pipeline-model-parallel-layout"), first = given.count("--decoder-first-pipeline-num-layers");
    const int v = given.count("--num-virtual-stages-per-pipeline-rank") ? std::stoi(given["--num-virtual-stages-per-pipeline-rank"]) : 1;
    if (layout) {
      EXPECT_FALSE(first || given.count("--num-virtual-stages-per-pipeline-rank") || given.count("--account-for-embedding-in-pipeline-split"));
      const std::string lay = given["--pipeline-model-parallel-layout"];
      EXPECT_EQ(lay.front(), 'E');
      EXPECT_EQ(lay.back(), 'L');
      EXPECT_EQ(std::count(lay.begin(), lay.end(), 't'), L);
      EXPECT_EQ((std::count(lay.begin(), lay.end(), '|') + 1) % pp, 0);
    } else if (first) {
      const int f = std::stoi(given["--decoder-first-pipeline-num-layers"]), l = std::stoi(given["--decoder-last-pipeline-num-layers"]);
      EXPECT_TRUE(f > 0 && l > 0 && f % v == 0 && l % v == 0);
      if (pp > 2) {
        EXPECT_EQ((L - f - l) % (pp - 2), 0);
        EXPECT_EQ((L - f - l) / (pp - 2) % v, 0);
      } else {
        EXPECT_EQ(L - f - l, 0);
      }
    } else {
      EXPECT_EQ(L % (pp * v), 0) << p.strategy;  // rule even_pp_divisible
    }
  }
}

TEST(ExportFacts, TorchtitanKeysExistInTheTomlSnapshotAndDegreesMultiply) {
  SKIP_WITHOUT_ENGINE_FACTS();
  const auto& fields = strata_test::torchtitan_fields();
  int checked = 0;
  for (const auto& p : kPlans) {
    const auto b = build(p);
    if (!ex::unexpressible_feature(ex::Engine::torchtitan, b.m, b.c, b.s).empty()) continue;
    const auto doc = ex::parse_toml(ex::export_strategy(ex::Engine::torchtitan, b.m, b.c, b.s).text, "t");
    for (const auto& [section, keys] : doc.items())
      for (const auto& [key, value] : keys.items()) {
        const std::string name = section + "." + key;
        ASSERT_TRUE(fields.count(name)) << "unknown torchtitan key " << name;
        if (value.is_string()) EXPECT_EQ(strata_test::check_value(fields.at(name), value.get<std::string>()), "") << name;
        if (value.is_number_integer()) EXPECT_NE(fields.at(name).at("type").get<std::string>().find("int"), std::string::npos) << name;
        ++checked;
      }
    const auto& par = doc["parallelism"];
    const auto world = par["data_parallel_replicate_degree"].get<int>() * par["data_parallel_shard_degree"].get<int>() *
                       par["tensor_parallel_degree"].get<int>() * par["pipeline_parallel_degree"].get<int>();
    EXPECT_EQ(world, b.c.num_devices());  // parallel_dims.py: the product is the world size
    const auto local = doc["training"]["local_batch_size"].get<long long>();
    const auto dp = par["data_parallel_replicate_degree"].get<int>() * par["data_parallel_shard_degree"].get<int>();
    EXPECT_EQ(doc["training"]["global_batch_size"].get<long long>() % (local * dp), 0);
    if (par.contains("pipeline_parallel_microbatch_size")) EXPECT_EQ(local % par["pipeline_parallel_microbatch_size"].get<long long>(), 0);
  }
  EXPECT_GT(checked, 20);
}

TEST(ExportFacts, DeepSpeedKeysExistAndBatchIdentityHolds) {
  SKIP_WITHOUT_ENGINE_FACTS();
  const auto& keys = strata_test::deepspeed_keys();
  int checked = 0;
  for (const auto& p : kPlans) {
    auto b = build(p);
    b.s = ex::closest_expressible(ex::Engine::deepspeed, b.m, b.c, b.s);
    const auto j = nlohmann::json::parse(ex::export_strategy(ex::Engine::deepspeed, b.m, b.c, b.s).text);
    for (const auto& [k, v] : j.items()) {
      ASSERT_TRUE(keys.at("").count(k)) << "unknown DeepSpeed key " << k;
      if (!v.is_object()) continue;
      const std::string sec = k == "tensor_parallel" ? "tensor_parallel" : k;
      for (const auto& [k2, v2] : v.items()) {
        ASSERT_TRUE(keys.count(sec) && keys.at(sec).count(k2)) << "unknown DeepSpeed key " << k << "." << k2;
        const auto& f = keys.at(sec).at(k2);
        if (f.contains("choices")) EXPECT_NE(std::find(f["choices"].begin(), f["choices"].end(), v2), f["choices"].end());
        if (f.contains("ge")) EXPECT_GE(v2.get<double>(), f["ge"].get<double>());
        ++checked;
      }
    }
    // config.py:937 — train_batch_size = micro × grad_accum × dp, dp = world / (pp·tp)
    const int dp = b.c.num_devices() / (b.s.tp * b.s.pp);
    EXPECT_EQ(j["train_batch_size"].get<long long>(),
              j["train_micro_batch_size_per_gpu"].get<long long>() * j["gradient_accumulation_steps"].get<long long>() * dp);
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
