// tests/export/test_export_async_tp: overlap=async (the chunked collective matmul) in the engine configs —
// Megatron's --tp-comm-overlap and torchtitan's [parallelism] enable_async_tensor_parallel (with [compile]
// enable, which torchtitan's async TP needs), each read back; DeepSpeed has no form of it. Also the recompute
// early stop (earlystop=on): torchtitan's full activation checkpointing has it, Megatron and DeepSpeed do not.
#include <gtest/gtest.h>

#include <string>

#include "strata/cost/strategy.hpp"
#include "strata/export/export.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

// zero=3 throughout: torchtitan (TOML era) refuses DDP with TP and trains fp32 without FSDP (data/engines).
namespace strata {
namespace {

TEST(AsyncExport, MegatronAndTorchtitanCarryItAndReadItBack) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:2", hw::builtin_catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,overlap=async"), m, c);
  using exporter::Engine;
  const std::string meg = exporter::export_strategy(Engine::megatron, m, c, s).text;
  EXPECT_NE(meg.find("--tp-comm-overlap"), std::string::npos) << meg;
  EXPECT_TRUE(exporter::import_megatron_args(meg, "t").strategy.tp_async);
  const std::string tt = exporter::export_strategy(Engine::torchtitan, m, c, s).text;
  EXPECT_NE(tt.find("enable_async_tensor_parallel = true"), std::string::npos) << tt;
  EXPECT_NE(tt.find("[compile]\nenable = true"), std::string::npos) << tt;
  EXPECT_TRUE(exporter::import_torchtitan_toml(tt, "t").strategy.tp_async);
  EXPECT_NE(exporter::unexpressible_feature(Engine::deepspeed, m, c, s).find("overlap=async"), std::string::npos);
  EXPECT_EQ(exporter::unexpressible_feature(Engine::megatron, m, c, s), "");
}

TEST(ElementwiseExport, TorchtitanCompilesFusedKernelsAndMegatronRefusesEager) {
  // Fused element-wise kernels (the default) are torchtitan's torch.compile; eager is its default (no [compile]).
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:2", hw::builtin_catalog());
  using exporter::Engine;
  const auto fused = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3"), m, c);
  const auto eager = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,elementwise=eager"), m, c);
  const std::string tf = exporter::export_strategy(Engine::torchtitan, m, c, fused).text;
  const std::string te = exporter::export_strategy(Engine::torchtitan, m, c, eager).text;
  EXPECT_NE(tf.find("[compile]\nenable = true"), std::string::npos) << tf;
  EXPECT_EQ(te.find("[compile]"), std::string::npos) << te;
  EXPECT_FALSE(exporter::import_torchtitan_toml(tf, "t").strategy.eager_elementwise);
  EXPECT_TRUE(exporter::import_torchtitan_toml(te, "t").strategy.eager_elementwise);
  EXPECT_NE(exporter::unexpressible_feature(Engine::megatron, m, c, eager).find("elementwise=eager"), std::string::npos);
  EXPECT_FALSE(exporter::closest_expressible(Engine::megatron, m, c, eager).eager_elementwise);
  EXPECT_FALSE(exporter::import_megatron_args(exporter::export_strategy(Engine::megatron, m, c, fused).text, "t")
                   .strategy.eager_elementwise);
  // Async TP is compiled: eager with it has no torchtitan form, and the closest plan is fused.
  const auto both = cost::complete_strategy(
      cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,overlap=async,elementwise=eager"), m, c);
  EXPECT_NE(exporter::unexpressible_feature(Engine::torchtitan, m, c, both).find("elementwise=eager"), std::string::npos);
  EXPECT_FALSE(exporter::closest_expressible(Engine::torchtitan, m, c, both).eager_elementwise);
}

TEST(EarlyStopExport, TorchtitanFullCheckpointingStopsEarlyMegatronAndDeepSpeedDoNot) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:2", hw::builtin_catalog());
  using exporter::Engine;
  const auto whole = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,recompute=full"), m, c);
  const auto early = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,recompute=full,earlystop=on"), m, c);
  // torchtitan: mode "full" is the non-reentrant checkpoint, read back with early stop; without it is not its form.
  const std::string tt = exporter::export_strategy(Engine::torchtitan, m, c, early).text;
  EXPECT_NE(tt.find("mode = \"full\""), std::string::npos) << tt;
  EXPECT_TRUE(exporter::import_torchtitan_toml(tt, "t").strategy.recompute_early_stop);
  EXPECT_NE(exporter::unexpressible_feature(Engine::torchtitan, m, c, whole).find("early stop"), std::string::npos);
  EXPECT_TRUE(exporter::closest_expressible(Engine::torchtitan, m, c, whole).recompute_early_stop);
  const auto none = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3"), m, c);
  EXPECT_FALSE(exporter::import_torchtitan_toml(exporter::export_strategy(Engine::torchtitan, m, c, none).text, "t")
                   .strategy.recompute_early_stop);
  // Megatron and DeepSpeed re-run the whole forward.
  for (Engine e : {Engine::megatron, Engine::deepspeed}) {
    EXPECT_NE(exporter::unexpressible_feature(e, m, c, early).find("earlystop=on"), std::string::npos);
    EXPECT_FALSE(exporter::closest_expressible(e, m, c, early).recompute_early_stop);
    EXPECT_EQ(exporter::unexpressible_feature(e, m, c, whole).find("early"), std::string::npos);
  }
}

TEST(Fp8CastExport, TorchtitanFloat8IsSeparateCastsMegatronsIsFused) {
  const auto m = model::zoo_model("llama3-8b");
  const auto c = hw::resolve_cluster("dgx-h100:2", hw::builtin_catalog());
  using exporter::Engine;
  const auto fused = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,dtype=fp8"), m, c);
  const auto sep = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,mbs=1,gbs=16,sp=on,zero=3,dtype=fp8,fp8cast=separate"), m, c);
  const std::string tt = exporter::export_strategy(Engine::torchtitan, m, c, sep).text;
  EXPECT_NE(tt.find("quantize.linear.float8"), std::string::npos) << tt;
  EXPECT_TRUE(exporter::import_torchtitan_toml(tt, "t").strategy.fp8_separate_casts);
  EXPECT_NE(exporter::unexpressible_feature(Engine::torchtitan, m, c, fused).find("fp8cast=separate"), std::string::npos);
  EXPECT_TRUE(exporter::closest_expressible(Engine::torchtitan, m, c, fused).fp8_separate_casts);
  EXPECT_NE(exporter::unexpressible_feature(Engine::megatron, m, c, sep).find("fp8cast=separate"), std::string::npos);
  EXPECT_FALSE(exporter::closest_expressible(Engine::megatron, m, c, sep).fp8_separate_casts);
  EXPECT_FALSE(exporter::import_megatron_args(exporter::export_strategy(Engine::megatron, m, c, fused).text, "t")
                   .strategy.fp8_separate_casts);
}

}  // namespace
}  // namespace strata
