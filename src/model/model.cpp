// model/model: whole-model numbers (block count, total parameters, training FLOPs per token), the sequence
// override, the tensor-parallel check over a chain, and the decoder-only transformer builder used by the zoo and
// by "transformer config" model files.
#include "strata/model/model.hpp"

#include <fmt/format.h>

#include "strata/core/error.hpp"

namespace strata::model {
namespace {

[[noreturn]] void bad(const std::string& origin, const std::string& field, const std::string& problem) {
  throw core::InputError(fmt::format("{}: {}: {}", origin, field, problem));
}

void check_positive(const std::string& origin, const char* field, std::int64_t v) {
  if (v <= 0) bad(origin, field, fmt::format("must be > 0, got {}", v));
}

// Micro-batch 1 at the layer's own seq (the model's when the layer gives none).
LayerQuery one_sample(const Model& m, const LayerSpec& l) {
  LayerQuery q;
  q.seq = l.seq > 0 ? 0 : m.seq;
  return q;
}

}  // namespace

int Model::num_blocks() const {
  int n = 0;
  for (const LayerSpec& l : layers) n += is_attention_block(l.kind) ? 1 : 0;
  return n;
}

double total_params(const Model& m) {
  double p = 0;
  for (const LayerSpec& l : m.layers) p += layer_cost(l, LayerQuery{}).params;
  return p;
}

SampleFlops sample_flops(const Model& m) {
  SampleFlops out;
  const LayerSpec* prev = nullptr;
  double fwd = 0, bwd = 0;
  for (const LayerSpec& l : m.layers) {
    // Consecutive identical blocks cost the same: one layer_cost per run of them (the estimate reads this on the
    // planner's hot path).
    if (!prev || !same_cost_shape(*prev, l)) {
      const LayerCost lc = layer_cost(l, one_sample(m, l));
      fwd = lc.fwd_flops;
      bwd = lc.bwd_flops;
      prev = &l;
    }
    out.train += fwd + bwd;
    if (is_attention_block(l.kind)) out.ptdp += fwd;
  }
  out.ptdp += out.train;
  return out;
}

double train_flops_per_sample(const Model& m) { return sample_flops(m).train; }

double train_flops_per_token(const Model& m) {
  const double flops = train_flops_per_sample(m);
  return m.seq > 0 ? flops / static_cast<double>(m.seq) : flops;
}

double ptdp_flops_per_sample(const Model& m) { return sample_flops(m).ptdp; }

std::string tensor_parallel_problem(const Model& m, int tp) {
  for (const LayerSpec& l : m.layers)
    if (std::string p = tensor_parallel_problem(l, tp); !p.empty()) return p;
  return {};
}

Model with_seq(const Model& m, std::int64_t seq) {
  if (seq <= 0) throw core::InputError(fmt::format("--seq: must be > 0, got {}", seq));
  for (const LayerSpec& l : m.layers) {
    const bool sequence_layer =
        l.kind == LayerKind::embedding || l.kind == LayerKind::lm_head || is_attention_block(l.kind);
    if (!sequence_layer || l.attention_window > 0 || l.pooled)
      throw core::InputError(fmt::format(
          "--seq: model '{}' has a fixed input size (layer '{}' is a {} layer); only text transformer models "
          "take another sequence length",
          m.name, l.name, to_string(l.kind)));
  }
  Model out = m;
  // Every layer that ran at the model's sequence length now runs at `seq` (T5: both encoder and decoder
  // lengths when they were equal; learned position tables grow with it).
  for (LayerSpec& l : out.layers) {
    if (l.seq == m.seq || l.seq == 0) l.seq = seq;
    if (l.encoder_seq == m.seq) l.encoder_seq = seq;
  }
  out.seq = seq;
  return out;
}

Model build_transformer(const TransformerConfig& cfg, const std::string& origin) {
  check_positive(origin, "layers", cfg.layers);
  check_positive(origin, "hidden", cfg.hidden);
  check_positive(origin, "heads", cfg.heads);
  check_positive(origin, "vocab", cfg.vocab);
  check_positive(origin, "seq", cfg.seq);
  if (cfg.layers > kMaxModelLayers) bad(origin, "layers", fmt::format("must be <= {}, got {}", kMaxModelLayers, cfg.layers));
  const std::int64_t kv = cfg.kv_heads == 0 ? cfg.heads : cfg.kv_heads;
  check_positive(origin, "kv_heads", kv);
  if (cfg.hidden % cfg.heads != 0)
    bad(origin, "heads", fmt::format("{} heads do not divide hidden {}", cfg.heads, cfg.hidden));
  if (cfg.heads % kv != 0) bad(origin, "kv_heads", fmt::format("{} kv heads do not divide {} heads", kv, cfg.heads));
  std::int64_t ffn = cfg.ffn;
  if (ffn == 0) {
    if (cfg.activation == Activation::swiglu)
      bad(origin, "ffn", "required with activation 'swiglu' (e.g. LLaMA's 8h/3 rounded up)");
    ffn = 4 * cfg.hidden;
  }
  check_positive(origin, "ffn", ffn);
  if (cfg.experts < 0) bad(origin, "experts", fmt::format("must be >= 0, got {}", cfg.experts));
  if (cfg.experts > 0 && (cfg.top_k <= 0 || cfg.top_k > cfg.experts))
    bad(origin, "top_k", fmt::format("must be in 1..experts ({}), got {}", cfg.experts, cfg.top_k));

  Model m;
  m.name = cfg.name;
  m.family = cfg.family;
  m.seq = cfg.seq;
  m.hidden = cfg.hidden;
  m.heads = cfg.heads;
  m.vocab = cfg.vocab;

  LayerSpec emb;
  emb.kind = LayerKind::embedding;
  emb.name = "embedding";
  emb.hidden = cfg.hidden;
  emb.vocab = cfg.vocab;
  emb.seq = cfg.seq;
  emb.learned_positions = cfg.learned_positions;
  emb.dropout = cfg.dropout;
  m.layers.push_back(emb);

  LayerSpec block;
  block.kind = LayerKind::transformer;
  block.hidden = cfg.hidden;
  block.heads = cfg.heads;
  block.kv_heads = kv;
  block.ffn = ffn;
  block.seq = cfg.seq;
  block.activation = cfg.activation;
  block.norm = cfg.norm;
  block.bias = cfg.bias;
  block.dropout = cfg.dropout;
  block.causal = cfg.causal;
  block.experts = cfg.experts;
  block.top_k = cfg.experts > 0 ? cfg.top_k : 0;
  for (std::int64_t i = 0; i < cfg.layers; ++i) {
    block.name = fmt::format("block.{}", i);
    m.layers.push_back(block);
  }

  LayerSpec head;
  head.kind = LayerKind::lm_head;
  head.name = "lm_head";
  head.hidden = cfg.hidden;
  head.vocab = cfg.vocab;
  head.seq = cfg.seq;
  head.norm = cfg.norm;
  head.tied_embeddings = cfg.tied_embeddings;
  head.bias = false;  // GPT/LLaMA/MPT heads carry no output bias
  m.layers.push_back(head);
  return m;
}

}  // namespace strata::model
