// tests/export/test_export_import: Megatron, torchtitan and DeepSpeed configs written by hand (the forms users
// have, not only what strata writes) read back into the strategy their engine would run — closed forms.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "strata/core/error.hpp"
#include "strata/export/export.hpp"
#include "strata/plan/search.hpp"

namespace ex = strata::exporter;
namespace cost = strata::cost;
namespace model = strata::model;
namespace hw = strata::hw;

namespace {

const char* kShape = "--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 "
                     "--max-position-embeddings 2048 --vocab-size 51200 --micro-batch-size 1 --global-batch-size 1536 ";

cost::Strategy complete(const ex::Imported& im, const char* cluster = "dgx-a100:16") {
  const auto c = hw::resolve_cluster(cluster, hw::builtin_catalog());
  return cost::complete_strategy(im.strategy, model::build_transformer(*im.shape, "t"), c);
}

TEST(ExportImport, MegatronSplitForms) {
  // account-for-embedding/loss: 96 + 2 slots over pp 2 = 49 each, minus the embedding/loss -> 48 / 48 blocks.
  auto s = complete(ex::import_megatron_args(std::string(kShape) + "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 "
                                             "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split", "t"));
  EXPECT_EQ(s.split, (std::vector<int>{49, 49}));
  // first/last: 92 + 4 = 96, middle (96-10-6)/2 = 40 each.
  s = complete(ex::import_megatron_args(std::string(kShape) + "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 "
                                        "--decoder-first-pipeline-num-layers 10 --decoder-last-pipeline-num-layers 6", "t"), "dgx-a100:4");
  EXPECT_EQ(s.split, (std::vector<int>{11, 40, 40, 7}));
  // the layout string with repeats: E + 2 t | (t*47 |)*2 ... = 4 stages over pp 2 -> v 2.
  s = complete(ex::import_megatron_args(std::string(kShape) + "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 "
                                        "--pipeline-model-parallel-layout 'Et*2|(t*46|)*2t*2L'", "t"));
  EXPECT_EQ(s.virtual_stages, 2);
  EXPECT_EQ(s.schedule, cost::Schedule::interleaved);
  EXPECT_EQ(s.split, (std::vector<int>{3, 46, 46, 3}));
  // num-layers-per-virtual-pipeline-stage 8: 96 / pp 4 = 24 per stage -> v 3.
  s = complete(ex::import_megatron_args(std::string(kShape) + "--tensor-model-parallel-size 4 --pipeline-model-parallel-size 4 "
                                        "--num-layers-per-virtual-pipeline-stage 8", "t"), "dgx-a100:4");
  EXPECT_EQ(s.virtual_stages, 3);
  EXPECT_EQ(s.dp, 2);
}

TEST(ExportImport, MegatronRejectsWhatStrataCannotModelNamingTheFlag) {
  for (const char* bad : {"--expert-model-parallel-size 2", "--recompute-granularity full --recompute-method uniform --recompute-num-layers 4",
                          "--recompute-granularity full", "--decoder-first-pipeline-num-layers 7 --pipeline-model-parallel-size 4",
                          "--pipeline-model-parallel-layout 'Ettt|tL'", "--fp16 --bf16"}) {
    try {
      ex::import_megatron_args(std::string(kShape) + bad, "args.sh");
      FAIL() << bad;
    } catch (const strata::core::InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("args.sh: --", 0), 0u) << e.what();
    }
  }
}

TEST(ExportImport, MegatronShapeDefaults) {
  const auto im = ex::import_megatron_args("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --swiglu "
                                           "--group-query-attention --num-query-groups 8 --micro-batch-size 1 --global-batch-size 8", "t");
  ASSERT_TRUE(im.shape);
  EXPECT_EQ(im.shape->ffn, (4 * 4096 * 2 / 3) / 64 * 64);  // Megatron rule ffn_default: 10880
  EXPECT_EQ(im.shape->kv_heads, 8);
  EXPECT_EQ(im.strategy.dtype, hw::Dtype::fp32);
}

TEST(ExportImport, DeepSpeedBatchIdentityGivesDp) {
  const auto im = ex::import_deepspeed_json(R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 2,
      "gradient_accumulation_steps": 8, "zero_optimization": {"stage": 2}, "bf16": {"enabled": true}})", "ds.json");
  EXPECT_EQ(im.strategy.dp, 16);  // 256 = 2 · 8 · dp
  EXPECT_EQ(im.strategy.zero_stage, 2);
  EXPECT_THROW(ex::import_deepspeed_json(R"({"train_batch_size": 10, "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 1})", "d"),
               strata::core::InputError);
}

TEST(ExportImport, TorchtitanDefaultsAndHsdp) {
  const auto im = ex::import_torchtitan_toml("[parallelism]\ntensor_parallel_degree = 8\n[training]\nlocal_batch_size = 2\nglobal_batch_size = 64\n", "j.toml");
  EXPECT_EQ(im.strategy.dp, 0);           // dp_shard -1: the rest of the world
  EXPECT_EQ(im.strategy.zero_stage, 3);   // FSDP
  EXPECT_EQ(im.strategy.recompute, model::Recompute::selective);  // the TOML default mode
  EXPECT_TRUE(im.strategy.sequence_parallel);
  EXPECT_THROW(ex::import_torchtitan_toml("[parallelism]\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n", "j.toml"),
               strata::core::InputError);
}

// The demo plan (README): strata plan --model gpt3-175b --cluster dgx-a100:16+dgx-h100:16 --gbs 1536.
TEST(ExportImport, DemoPlanRoundTripsThroughEveryEngineThatExpressesIt) {
  const auto m = model::zoo_model("gpt3-175b");
  const auto c = hw::resolve_cluster("dgx-a100:16+dgx-h100:16", hw::builtin_catalog());
  strata::plan::PlanOptions opt;
  opt.global_batch = 1536;
  opt.top_k = 1;
  opt.threads = 2;
  const auto best = strata::plan::plan(m, c, opt).top.front().strategy;
  int exported = 0;
  // GPT-3 (learned positions, LayerNorm, GELU) is no torchtitan model: refused naming it, never exported.
  EXPECT_NE(ex::unexpressible_feature(ex::Engine::torchtitan, m, c, best).find("gpt3-175b"), std::string::npos);
  for (ex::Engine e : {ex::Engine::megatron, ex::Engine::deepspeed, ex::Engine::torchrun, ex::Engine::slurm}) {
    const auto s = ex::closest_expressible(e, m, c, best);
    if (ex::unexpressible_feature(e, m, c, best).empty()) EXPECT_EQ(cost::to_json(s).dump(), cost::to_json(best).dump());
    const auto text = ex::export_strategy(e, m, c, s).text;
    ex::Imported im = e == ex::Engine::megatron     ? ex::import_megatron_args(text, "t")
                      : e == ex::Engine::torchtitan ? ex::import_torchtitan_toml(text, "t")
                      : e == ex::Engine::deepspeed  ? ex::import_deepspeed_json(text, "t")
                                                    : ex::import_launch_script(text, "t", c);
    if (e != ex::Engine::torchrun && e != ex::Engine::slurm) im.strategy.placement = s.placement;
    EXPECT_EQ(cost::to_json(cost::complete_strategy(im.strategy, m, c)).dump(), cost::to_json(s).dump()) << ex::to_string(e);
    ++exported;
  }
  EXPECT_EQ(exported, 4);
  EXPECT_EQ(ex::unexpressible_feature(ex::Engine::megatron, m, c, best), "") << cost::to_cli_string(best);
}

}  // namespace

namespace {

// Mutated configs (byte flips, truncations) must be read or rejected with an InputError, never anything else.
TEST(ExportImport, MutatedConfigsOnlyEverThrowInputError) {
  const auto gpt = model::zoo_model("small-gpt"), llama = model::zoo_model("llama3-8b");  // torchtitan: a flavor
  const auto c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  std::mt19937 rng(7);
  const char alphabet[] = "[]{}\"'=,.|*()#\\\n -0123456789tELabcxyz";
  for (ex::Engine e : {ex::Engine::megatron, ex::Engine::torchtitan, ex::Engine::deepspeed, ex::Engine::torchrun}) {
    const auto& m = e == ex::Engine::torchtitan ? llama : gpt;
    const auto s = cost::complete_strategy(cost::parse_strategy("tp=2,pp=2,v=2,mbs=1,gbs=16,zero=1,sp=on,recompute=full"), m, c);
    const auto near = ex::closest_expressible(e, m, c, s);
    const std::string base = ex::export_strategy(e, m, c, near).text;
    for (int i = 0; i < 400; ++i) {
      std::string t = base;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 4); ++k) t[rng() % t.size()] = alphabet[rng() % (sizeof(alphabet) - 1)];
      if (rng() % 5 == 0) t.resize(rng() % t.size());
      try {
        const auto im = e == ex::Engine::megatron     ? ex::import_megatron_args(t, "t")
                        : e == ex::Engine::torchtitan ? ex::import_torchtitan_toml(t, "t")
                        : e == ex::Engine::deepspeed  ? ex::import_deepspeed_json(t, "t")
                                                      : ex::import_launch_script(t, "t", c);
        (void)cost::complete_strategy(im.strategy, m, c);
      } catch (const strata::core::InputError&) {
      }
    }
  }
}

}  // namespace

namespace {

// The torchrun script runs under bash with a stub `torchrun` that prints what it got: node 1 (the first node
// of the placement) gets node_rank 0 and its GPUs in the placement's local order, and the Megatron arguments
// pass through intact (the layout's '|' quoted).
TEST(ExportLaunch, TorchrunScriptRunsUnderBashWithThePlacementsDevices) {
  if (std::system("bash -c true >/dev/null 2>&1") != 0) GTEST_SKIP() << "no bash";
  const auto m = model::zoo_model("small-gpt");
  const auto c = hw::resolve_cluster("dgx-a100:2", hw::builtin_catalog());
  const auto s = cost::complete_strategy(
      cost::parse_strategy("tp=2,pp=4,mbs=1,gbs=16,split=2+2+5+1,place=9+8+11+10+13+12+15+14+0+1+2+3+4+5+6+7"), m, c);
  const std::string dir = "/tmp/strata_export_launch_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/launch.sh") << ex::export_strategy(ex::Engine::torchrun, m, c, s).text;
  std::ofstream(dir + "/torchrun") << "#!/usr/bin/env bash\necho \"CVD=$CUDA_VISIBLE_DEVICES\" \"$@\"\n";
  std::filesystem::permissions(dir + "/torchrun", std::filesystem::perms::owner_all);
  const std::string cmd = "cd " + dir + " && NODE=1 MASTER_ADDR=h0 PATH=" + dir + ":$PATH bash launch.sh > out.txt 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::stringstream out;
  out << std::ifstream(dir + "/out.txt").rdbuf();
  EXPECT_NE(out.str().find("CVD=1,0,3,2,5,4,7,6 --nnodes=2 --nproc-per-node=8 --node-rank=0"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("--pipeline-model-parallel-layout Et|tt|ttttt|L"), std::string::npos) << out.str();
  std::filesystem::remove_all(dir);
}

}  // namespace

namespace {

TEST(ExportClosest, MegatronRlayersBecomeTheLargestCountOrEveryLayer) {
  const auto m = model::zoo_model("small-gpt");  // 8 blocks
  const auto c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  auto s = cost::complete_strategy(cost::parse_strategy("tp=2,pp=2,gbs=8,recompute=full,rlayers=1+3,split=5+5"), m, c);
  EXPECT_EQ(ex::closest_expressible(ex::Engine::megatron, m, c, s).recompute_layers, (std::vector<int>{3, 3}));
  s = cost::complete_strategy(cost::parse_strategy("tp=2,pp=2,gbs=8,recompute=full,rlayers=1+6,split=3+7"), m, c);
  EXPECT_TRUE(ex::closest_expressible(ex::Engine::megatron, m, c, s).recompute_layers.empty());  // stage 0 holds 2
}

}  // namespace
