// export/shape: the decoder-only transformer shape of a model — what Megatron-LM's pretrain_gpt.py flags and the
// engines' model sections can describe. Recovered from the layer chain and checked by rebuilding the model with
// model::build_transformer and comparing every layer's cost shape (so no field is silently lost).
#include <fmt/format.h>

#include "strata/export/export.hpp"

namespace strata::exporter {

std::optional<model::TransformerConfig> transformer_shape(const model::Model& m, std::string* problem) {
  auto fail = [&](const std::string& why) -> std::optional<model::TransformerConfig> {
    if (problem) *problem = why;
    return std::nullopt;
  };
  const auto& L = m.layers;
  if (L.size() < 3 || L.front().kind != model::LayerKind::embedding || L.back().kind != model::LayerKind::lm_head)
    return fail(fmt::format("model '{}' (family {}) is not a decoder-only transformer (embedding, blocks, LM head)",
                            m.name, m.family));
  const auto& block = L[1];
  if (block.kind != model::LayerKind::transformer)
    return fail(fmt::format("model '{}' (family {}) has non-transformer blocks", m.name, m.family));
  model::TransformerConfig cfg;
  cfg.name = m.name;
  cfg.family = m.family;
  cfg.layers = static_cast<std::int64_t>(L.size()) - 2;
  cfg.hidden = block.hidden;
  cfg.heads = block.heads;
  cfg.kv_heads = block.kv_heads == block.heads ? 0 : block.kv_heads;
  cfg.ffn = block.ffn;
  cfg.vocab = L.front().vocab;
  cfg.seq = m.seq;
  cfg.activation = block.activation;
  cfg.norm = block.norm;
  cfg.tied_embeddings = L.back().tied_embeddings;
  cfg.learned_positions = L.front().learned_positions;
  cfg.bias = block.bias;
  cfg.dropout = block.dropout;
  cfg.experts = block.experts;
  cfg.top_k = block.top_k;
  model::Model rebuilt;
  try {
    rebuilt = model::build_transformer(cfg, m.name);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (rebuilt.layers.size() != L.size()) return fail(fmt::format("model '{}' has an irregular chain", m.name));
  for (std::size_t i = 0; i < L.size(); ++i)
    if (!model::same_cost_shape(rebuilt.layers[i], L[i]))
      return fail(fmt::format("model '{}': layer {} ('{}') differs from a uniform decoder-only transformer", m.name,
                              i, L[i].name));
  return cfg;
}

}  // namespace strata::exporter
