// model/zoo: the built-in models — a C++ table (not data/ JSON) because most entries are a handful of
// hyper-parameters fed to the same builders as custom files, and the non-transformer ones (ResNet, VGG, Swin,
// TransGAN) are easier to state as code. Shapes and their sources are listed in docs/models.md.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/model/model.hpp"
#include "zoo_builders.hpp"

namespace strata::model {
namespace {

// GPT-2 / GPT-3 / Megatron style: GELU, LayerNorm, learned positions, tied embeddings, biases, dropout.
TransformerConfig gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t vocab,
                      std::int64_t seq) {
  TransformerConfig c;
  c.family = "gpt";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.vocab = vocab;
  c.seq = seq;
  return c;
}

// LLaMA 2/3: SwiGLU, RMSNorm, RoPE (no position table), GQA, untied head, no biases, no dropout.
TransformerConfig llama(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t kv_heads,
                        std::int64_t ffn, std::int64_t vocab, std::int64_t seq) {
  TransformerConfig c;
  c.family = "llama";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.ffn = ffn;
  c.vocab = vocab;
  c.seq = seq;
  c.activation = Activation::swiglu;
  c.norm = Norm::rmsnorm;
  c.tied_embeddings = false;
  c.learned_positions = false;
  c.bias = false;
  c.dropout = false;
  return c;
}

// MPT (llm-foundry): ALiBi (no position table), tied, no biases (LayerNorm weight only), no dropout, 4h GELU MLP.
// Shapes: shared/calibration/mosaicml_fsdp.json model_shapes; seq 2048 as in its benchmark rows.
TransformerConfig mpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  TransformerConfig c;
  c.family = "mpt";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.ffn = 4 * hidden;
  c.vocab = 50368;
  c.seq = 2048;
  c.learned_positions = false;
  c.bias = false;
  c.dropout = false;
  return c;
}

using Builder = std::function<Model()>;

Builder from(TransformerConfig c) {
  return [c]() { return build_transformer(c, "zoo"); };
}

const std::map<std::string, Builder>& zoo() {
  // PTD-P weak-scaling shapes (notes_003 §3.9): V = 51200, s = 2048.
  constexpr std::int64_t kMegatronVocab = 51200, kMegatronSeq = 2048;
  static const std::map<std::string, Builder> table = {
      {"gpt2-small", from(gpt(12, 768, 12, 50257, 1024))},
      {"gpt2-medium", from(gpt(24, 1024, 16, 50257, 1024))},
      {"gpt2-large", from(gpt(36, 1280, 20, 50257, 1024))},
      {"gpt2-xl", from(gpt(48, 1600, 25, 50257, 1024))},
      {"gpt3-175b", from(gpt(96, 12288, 96, kMegatronVocab, kMegatronSeq))},
      {"megatron-1.7b", from(gpt(24, 2304, 24, kMegatronVocab, kMegatronSeq))},
      {"megatron-3.6b", from(gpt(30, 3072, 32, kMegatronVocab, kMegatronSeq))},
      {"megatron-7.5b", from(gpt(36, 4096, 32, kMegatronVocab, kMegatronSeq))},
      {"megatron-18.4b", from(gpt(40, 6144, 48, kMegatronVocab, kMegatronSeq))},
      {"megatron-39.1b", from(gpt(48, 8192, 64, kMegatronVocab, kMegatronSeq))},
      {"megatron-76.1b", from(gpt(60, 10240, 80, kMegatronVocab, kMegatronSeq))},
      {"megatron-145.6b", from(gpt(80, 12288, 96, kMegatronVocab, kMegatronSeq))},
      {"megatron-310.1b", from(gpt(96, 16384, 128, kMegatronVocab, kMegatronSeq))},
      {"megatron-529.6b", from(gpt(105, 20480, 128, kMegatronVocab, kMegatronSeq))},
      {"megatron-1t", from(gpt(128, 25600, 160, kMegatronVocab, kMegatronSeq))},
      // AMP (seed_000 §6.5.1): 24-layer GPT-2, h = 1024, s = 1024, V = 52256.
      {"amp-gpt2", from(gpt(24, 1024, 16, 52256, 1024))},
      // OPT-350M-like (Zhang et al. 2022, Table 1: 24 layers, h = 1024, 16 heads; V = 50272, s = 2048), as a
      // GPT block chain (OPT's 512-wide embedding projection left out): issue 14's mixed-cluster example.
      {"opt-350m", from(gpt(24, 1024, 16, 50272, 2048))},
      // Small models for the CPU executor.
      {"tiny-gpt", from(gpt(4, 64, 4, 256, 32))},
      {"small-gpt", from(gpt(8, 256, 8, 1024, 128))},
      // LLaMA 2 (Touvron et al. 2023): V = 32000, s = 4096; LLaMA 3 (Meta 2024): V = 128256, s = 8192.
      {"llama2-7b", from(llama(32, 4096, 32, 32, 11008, 32000, 4096))},
      {"llama2-13b", from(llama(40, 5120, 40, 40, 13824, 32000, 4096))},
      {"llama2-70b", from(llama(80, 8192, 64, 8, 28672, 32000, 4096))},
      {"llama3-8b", from(llama(32, 4096, 32, 8, 14336, 128256, 8192))},
      {"llama3-70b", from(llama(80, 8192, 64, 8, 28672, 128256, 8192))},
      {"llama3-405b", from(llama(126, 16384, 128, 8, 53248, 128256, 8192))},
      {"mpt-7b", from(mpt(32, 4096, 32))},
      {"mpt-13b", from(mpt(40, 5120, 40))},
      {"mpt-70b", from(mpt(80, 8192, 64))},
      {"bert-large", [] { return detail::build_bert("bert-large", 24, 1024, 16); }},
      {"bert-huge-32", [] { return detail::build_bert("bert-huge-32", 32, 1280, 16); }},
      {"bert-huge-48", [] { return detail::build_bert("bert-huge-48", 48, 1280, 16); }},
      {"t5-large-32", [] { return detail::build_t5("t5-large-32", 16); }},
      {"t5-large-48", [] { return detail::build_t5("t5-large-48", 24); }},
      {"vit-huge-32", [] { return detail::build_vit("vit-huge-32", 32); }},
      {"vit-huge-48", [] { return detail::build_vit("vit-huge-48", 48); }},
      {"swin-huge-32", [] { return detail::build_swin("swin-huge-32", 26); }},
      {"swin-huge-48", [] { return detail::build_swin("swin-huge-48", 42); }},
      {"resnet50", [] { return detail::build_resnet50(); }},
      {"vgg16", [] { return detail::build_vgg16(); }},
      {"amp-transgan", [] { return detail::build_transgan(); }},
  };
  return table;
}

}  // namespace

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const auto& [name, builder] : zoo()) names.push_back(name);
  return names;  // std::map keeps them sorted
}

Model zoo_model(std::string_view name) {
  const auto& table = zoo();
  const auto it = table.find(core::to_lower(name));
  if (it == table.end())
    throw core::InputError(fmt::format("unknown model '{}' (valid: {})", name, core::join(zoo_names())));
  Model m = it->second();
  m.name = it->first;
  return m;
}

}  // namespace strata::model
