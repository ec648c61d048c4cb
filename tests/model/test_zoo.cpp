// tests/model/test_zoo: the built-in models — the issue's exact name list, parameter counts against PTD-P eq. 4.3
// (GPT family, 0.1 %), published LLaMA-3 sizes (1 %), MosaicML's num_params (1 %), torchvision CNN counts, and
// whole-model properties (FLOPs per token, recompute never increases activations, with_seq).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "strata/core/error.hpp"
#include "strata/model/model.hpp"

namespace strata::model {
namespace {

double ptdp_params(const Model& m) {  // notes_003 §3.7, eq. 4.3
  const double l = m.num_blocks(), h = static_cast<double>(m.hidden), V = static_cast<double>(m.vocab),
               s = static_cast<double>(m.seq);
  return 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
}

TEST(Zoo, ExactlyTheIssueList) {
  const std::vector<std::string> expected = {
      "amp-gpt2", "amp-transgan", "bert-huge-32", "bert-huge-48", "bert-large", "gpt2-large", "gpt2-medium",
      "gpt2-small", "gpt2-xl", "gpt3-175b", "llama2-13b", "llama2-70b", "llama2-7b", "llama3-405b", "llama3-70b",
      "llama3-8b", "megatron-1.7b", "megatron-145.6b", "megatron-18.4b", "megatron-1t", "megatron-3.6b",
      "megatron-310.1b", "megatron-39.1b", "megatron-529.6b", "megatron-7.5b", "megatron-76.1b", "mpt-13b",
      "mpt-70b", "mpt-7b", "opt-350m", "resnet50", "small-gpt", "swin-huge-32", "swin-huge-48", "t5-large-32", "t5-large-48",
      "tiny-gpt", "vgg16", "vit-huge-32", "vit-huge-48"};
  EXPECT_EQ(zoo_names(), expected);
  for (const std::string& n : zoo_names()) {
    const Model m = zoo_model(n);
    EXPECT_EQ(m.name, n);
    EXPECT_FALSE(m.layers.empty());
    EXPECT_GT(total_params(m), 0) << n;
    EXPECT_GT(train_flops_per_token(m), 0) << n;
  }
}

TEST(Zoo, GptFamilyMatchesPtdpEquation) {
  int checked = 0;
  for (const std::string& n : zoo_names()) {
    const Model m = zoo_model(n);
    if (m.family != "gpt") continue;
    ++checked;
    EXPECT_NEAR(total_params(m) / ptdp_params(m), 1.0, 1e-3) << n;
  }
  EXPECT_EQ(checked, 19);  // 4 gpt2 + gpt3 + 10 megatron + amp-gpt2 + tiny + small + opt-350m
  EXPECT_NEAR(total_params(zoo_model("gpt3-175b")) / 1e9, 174.6, 0.05);
  EXPECT_NEAR(total_params(zoo_model("megatron-1t")) / 1e9, 1008.0, 0.5);
  EXPECT_NEAR(total_params(zoo_model("megatron-529.6b")) / 1e9, 529.6, 0.05);
  EXPECT_NEAR(total_params(zoo_model("gpt2-small")) / 1e6, 124.4, 0.1);  // GPT-2 small: 124.4 M (HF count)
}

TEST(Zoo, Llama3PublishedSizes) {
  const std::map<std::string, double> published = {{"llama3-8b", 8.03e9}, {"llama3-70b", 70.6e9},
                                                   {"llama3-405b", 405.9e9}};
  for (const auto& [n, p] : published) EXPECT_NEAR(total_params(zoo_model(n)) / p, 1.0, 0.01) << n;
  EXPECT_NEAR(total_params(zoo_model("llama2-7b")) / 6.74e9, 1.0, 0.01);
  EXPECT_NEAR(total_params(zoo_model("llama2-70b")) / 68.98e9, 1.0, 0.01);
}

TEST(Zoo, MptMatchesMosaicCalibration) {
  // num_params column of shared/calibration/mosaicml_fsdp.json (llm-foundry benchmark README).
  const std::map<std::string, double> calib = {
      {"mpt-7b", 6658859008.0}, {"mpt-13b", 12853954560.0}, {"mpt-70b", 64862437376.0}};
  for (const auto& [n, p] : calib) EXPECT_NEAR(total_params(zoo_model(n)) / p, 1.0, 0.01) << n;
}

TEST(Zoo, OtherFamiliesMatchReferences) {
  // torchvision counts; Galvatron Table I (notes_001 §8.1) for the Huge models.
  EXPECT_DOUBLE_EQ(total_params(zoo_model("resnet50")), 25557032.0);
  EXPECT_DOUBLE_EQ(total_params(zoo_model("vgg16")), 138357544.0);
  const std::map<std::string, double> galvatron = {
      {"bert-huge-32", 672e6}, {"bert-huge-48", 987e6}, {"vit-huge-32", 632e6}, {"vit-huge-48", 947e6},
      {"t5-large-32", 502e6},  {"t5-large-48", 737e6},  {"swin-huge-32", 701e6}, {"swin-huge-48", 1016e6}};
  for (const auto& [n, p] : galvatron) EXPECT_NEAR(total_params(zoo_model(n)) / p, 1.0, 0.01) << n;
  EXPECT_NEAR(total_params(zoo_model("bert-large")) / 335e6, 1.0, 0.01);
}

TEST(Zoo, FlopsPerTokenIsSixTimesParamsPlusAttention) {
  // Forward+backward = 6·(matmul params) + 12·l·s·h per token for a GPT (Kaplan/PTD-P); logits use the tied matrix.
  const Model m = zoo_model("gpt3-175b");
  const double l = 96, h = 12288, s = 2048, V = 51200;
  const double want = 6 * (12 * l * h * h + V * h) + 12 * l * s * h;
  EXPECT_NEAR(train_flops_per_token(m) / want, 1.0, 1e-9);
}

TEST(Zoo, TransganIsHeterogeneous) {
  const Model m = zoo_model("amp-transgan");
  EXPECT_EQ(m.num_blocks(), 24);
  int wide = 0, narrow = 0;
  for (const LayerSpec& l : m.layers) {
    if (l.kind != LayerKind::transformer) continue;
    (l.hidden == 1024 ? wide : narrow) += 1;
    if (l.hidden == 16) EXPECT_EQ(l.seq, 72 * 72);
  }
  EXPECT_EQ(wide, 12);
  EXPECT_EQ(narrow, 12);
}

TEST(Zoo, RecomputeNeverIncreasesActivations) {
  for (const std::string& n : zoo_names()) {
    const Model m = zoo_model(n);
    for (int t : {1, 2}) {
      if (!tensor_parallel_problem(m, t).empty()) continue;
      for (bool sp : {false, true}) {
        for (const LayerSpec& l : m.layers) {
          LayerQuery q;
          q.micro_batch = 2;
          q.tp = t;
          q.sequence_parallel = sp;
          const double none = layer_cost(l, q).act_total_bytes();
          q.recompute = Recompute::selective;
          const double sel = layer_cost(l, q).act_total_bytes();
          q.recompute = Recompute::full;
          const double full = layer_cost(l, q).act_total_bytes();
          EXPECT_LE(sel, none) << n << " " << l.name;
          EXPECT_LE(full, sel) << n << " " << l.name;
          EXPECT_GE(full, 0) << n << " " << l.name;
        }
      }
    }
  }
}

TEST(Zoo, TensorParallelSupport) {
  EXPECT_TRUE(tensor_parallel_problem(zoo_model("gpt3-175b"), 8).empty());
  EXPECT_FALSE(tensor_parallel_problem(zoo_model("resnet50"), 2).empty());
  EXPECT_FALSE(tensor_parallel_problem(zoo_model("gpt2-xl"), 2).empty());  // 25 heads
}

TEST(Zoo, WithSeq) {
  const Model m = with_seq(zoo_model("gpt2-small"), 2048);
  EXPECT_EQ(m.seq, 2048);
  for (const LayerSpec& l : m.layers) EXPECT_EQ(l.seq, 2048);
  EXPECT_DOUBLE_EQ(total_params(m) - total_params(zoo_model("gpt2-small")), 1024.0 * 768);  // longer position table
  const Model t5 = with_seq(zoo_model("t5-large-32"), 128);
  for (const LayerSpec& l : t5.layers)
    if (l.kind == LayerKind::decoder) EXPECT_EQ(l.encoder_seq, 128);
  EXPECT_THROW(with_seq(zoo_model("vit-huge-32"), 512), core::InputError);
  EXPECT_THROW(with_seq(zoo_model("resnet50"), 512), core::InputError);
  EXPECT_THROW(with_seq(zoo_model("gpt2-small"), 0), core::InputError);
}

TEST(Zoo, UnknownNameListsValidOnes) {
  try {
    zoo_model("gpt5");
    FAIL();
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("unknown model 'gpt5'"), std::string::npos);
    EXPECT_NE(msg.find("gpt3-175b"), std::string::npos);
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
  EXPECT_EQ(zoo_model("GPT3-175B").name, "gpt3-175b");
}

}  // namespace
}  // namespace strata::model

// same_cost_shape: identical blocks match whatever their names; any field layer_cost reads breaks the match.
TEST(ModelSameCostShape, BlocksMatchAndFieldsBreakTheMatch) {
  const auto m = strata::model::zoo_model("gpt3-175b");
  const auto& b1 = m.layers[1];
  const auto& b2 = m.layers[2];
  EXPECT_NE(b1.name, b2.name);
  EXPECT_TRUE(strata::model::same_cost_shape(b1, b2));
  EXPECT_FALSE(strata::model::same_cost_shape(m.layers.front(), b1));
  auto wider = b1;
  wider.ffn += 1;
  EXPECT_FALSE(strata::model::same_cost_shape(b1, wider));
  auto gqa = b1;
  gqa.kv_heads = 8;
  EXPECT_FALSE(strata::model::same_cost_shape(b1, gqa));
}
