// model/model_json: custom model files (docs/models.md) — either a transformer config (`"layers": <number>`)
// or an explicit layer list (`"layers": [ … ]`) — read through core/json.hpp so every error names the file, the
// field and the problem; plus resolve_model (zoo name or file path).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/model/model.hpp"

namespace strata::model {
namespace {

using core::Json;
using core::JsonWhere;

// Rejects keys not in `allowed` (a typo must not silently fall back to a default).
void check_keys(const Json& obj, const std::vector<std::string>& allowed, const JsonWhere& where) {
  core::expect_object(obj, where);
  for (const auto& [key, value] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      core::fail(where.field(key), fmt::format("unknown field (valid here: {})", core::join(allowed)));
  }
}

std::int64_t opt_pos(const Json& o, const char* key, const JsonWhere& w, std::int64_t fallback) {
  return core::opt_positive_int(o, key, w).value_or(fallback);
}
std::int64_t opt_nonneg(const Json& o, const char* key, const JsonWhere& w) {
  if (!core::has_field(o, key)) return 0;
  const std::int64_t v = core::get_int(o, key, w);
  if (v < 0) core::fail(w.field(key), fmt::format("must be >= 0, got {}", v));
  return v;
}
bool opt_flag(const Json& o, const char* key, const JsonWhere& w, bool fallback) {
  return core::opt_bool(o, key, w).value_or(fallback);
}
double opt_nonneg_number(const Json& o, const char* key, const JsonWhere& w) {
  return core::has_field(o, key) ? core::get_nonnegative_number(o, key, w) : 0.0;
}
Activation opt_activation(const Json& o, const JsonWhere& w, Activation fallback) {
  const auto s = core::opt_string(o, "activation", w);
  return s ? parse_activation(*s, w.field("activation").str()) : fallback;
}
Norm opt_norm(const Json& o, const JsonWhere& w, Norm fallback) {
  const auto s = core::opt_string(o, "norm", w);
  return s ? parse_norm(*s, w.field("norm").str()) : fallback;
}

const std::vector<std::string> kConfigKeys = {
    "name", "family", "description", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "activation",
    "norm", "tied_embeddings", "learned_positions", "bias", "dropout", "causal", "experts", "top_k"};

Model from_config(const Json& j, const JsonWhere& root, const std::string& default_name) {
  check_keys(j, kConfigKeys, root);
  TransformerConfig c;
  c.name = core::opt_string(j, "name", root).value_or(default_name);
  core::check_name(c.name, root.field("name").str());
  c.family = core::opt_string(j, "family", root).value_or("custom");
  c.layers = core::get_positive_int(j, "layers", root);
  c.hidden = core::get_positive_int(j, "hidden", root);
  c.heads = core::get_positive_int(j, "heads", root);
  c.kv_heads = opt_pos(j, "kv_heads", root, 0);
  c.ffn = opt_pos(j, "ffn", root, 0);
  c.vocab = core::get_positive_int(j, "vocab", root);
  c.seq = core::get_positive_int(j, "seq", root);
  c.activation = opt_activation(j, root, Activation::gelu);
  c.norm = opt_norm(j, root, Norm::layernorm);
  c.tied_embeddings = opt_flag(j, "tied_embeddings", root, true);
  c.learned_positions = opt_flag(j, "learned_positions", root, true);
  c.bias = opt_flag(j, "bias", root, true);
  c.dropout = opt_flag(j, "dropout", root, true);
  c.causal = opt_flag(j, "causal", root, true);
  c.experts = opt_nonneg(j, "experts", root);
  c.top_k = opt_nonneg(j, "top_k", root);
  if (c.experts == 0 && c.top_k > 0) core::fail(root.field("top_k"), "needs experts > 0");
  return build_transformer(c, root.origin);
}

// ---- explicit layer list -------------------------------------------------------------------------------------

const std::vector<std::string> kCommonLayerKeys = {"kind", "name", "repeat", "seq"};

std::vector<std::string> keys_for(LayerKind k) {
  std::vector<std::string> keys = kCommonLayerKeys;
  auto add = [&](std::initializer_list<const char*> more) { keys.insert(keys.end(), more.begin(), more.end()); };
  switch (k) {
    case LayerKind::embedding: add({"hidden", "vocab", "learned_positions", "dropout"}); break;
    case LayerKind::transformer:
    case LayerKind::encoder:
    case LayerKind::decoder:
      add({"hidden", "heads", "kv_heads", "ffn", "activation", "norm", "bias", "dropout", "causal", "attention_window",
           "experts", "top_k"});
      if (k == LayerKind::decoder) add({"encoder_seq"});
      break;
    case LayerKind::lm_head: add({"hidden", "vocab", "norm", "tied_embeddings", "bias", "pooled"}); break;
    case LayerKind::patch_embedding:
      add({"hidden", "patch", "channels", "learned_positions", "cls_token", "pre_norm", "bias", "dropout"});
      break;
    case LayerKind::conv:
      add({"in_channels", "out_channels", "kernel", "height", "width", "convs", "out_height", "out_width",
           "mid_channels", "stride", "bottleneck", "batch_norm", "bias"});
      break;
    case LayerKind::generic:
      add({"params", "fwd_flops_per_sample", "bwd_flops_per_sample", "activation_bytes_per_sample",
           "output_bytes_per_sample", "input_bytes_per_sample"});
      break;
  }
  return keys;
}

void read_block(LayerSpec& l, const Json& o, const JsonWhere& w) {
  l.hidden = core::get_positive_int(o, "hidden", w);
  l.heads = core::get_positive_int(o, "heads", w);
  l.kv_heads = opt_pos(o, "kv_heads", w, l.heads);
  if (l.hidden % l.heads != 0)
    core::fail(w.field("heads"), fmt::format("{} heads do not divide hidden {}", l.heads, l.hidden));
  if (l.heads % l.kv_heads != 0)
    core::fail(w.field("kv_heads"), fmt::format("{} kv heads do not divide {} heads", l.kv_heads, l.heads));
  l.activation = opt_activation(o, w, Activation::gelu);
  l.norm = opt_norm(o, w, Norm::layernorm);
  if (core::has_field(o, "ffn")) {
    l.ffn = core::get_positive_int(o, "ffn", w);
  } else if (l.activation == Activation::swiglu) {
    core::fail(w.field("ffn"), "required with activation 'swiglu'");
  } else {
    l.ffn = 4 * l.hidden;
  }
  l.bias = opt_flag(o, "bias", w, true);
  l.dropout = opt_flag(o, "dropout", w, true);
  // Default: an encoder block attends both ways; a decoder-only (transformer) block and the T5 decoder are causal.
  l.causal = opt_flag(o, "causal", w, l.kind != LayerKind::encoder);
  l.attention_window = opt_nonneg(o, "attention_window", w);
  l.experts = opt_nonneg(o, "experts", w);
  l.top_k = opt_nonneg(o, "top_k", w);
  if (l.experts > 0 && (l.top_k < 1 || l.top_k > l.experts))
    core::fail(w.field("top_k"), fmt::format("must be in 1..experts ({}), got {}", l.experts, l.top_k));
  if (l.experts == 0 && l.top_k > 0) core::fail(w.field("top_k"), "needs experts > 0");
  if (l.kind == LayerKind::decoder) l.encoder_seq = opt_pos(o, "encoder_seq", w, l.seq);
}

void read_conv(LayerSpec& l, const Json& o, const JsonWhere& w) {
  ConvShape& c = l.conv;
  c.in_channels = core::get_positive_int(o, "in_channels", w);
  c.out_channels = core::get_positive_int(o, "out_channels", w);
  c.height = core::get_positive_int(o, "height", w);
  c.width = core::get_positive_int(o, "width", w);
  c.kernel = opt_pos(o, "kernel", w, 3);
  c.convs = opt_pos(o, "convs", w, 1);
  c.stride = opt_pos(o, "stride", w, 1);
  c.bottleneck = opt_flag(o, "bottleneck", w, false);
  c.batch_norm = opt_flag(o, "batch_norm", w, false);
  c.mid_channels = opt_pos(o, "mid_channels", w, 0);
  if (c.bottleneck && c.mid_channels == 0) core::fail(w.field("mid_channels"), "required when bottleneck is true");
  if (c.stride > c.height || c.stride > c.width)
    core::fail(w.field("stride"), fmt::format("{} exceeds the {}x{} input", c.stride, c.height, c.width));
  c.out_height = opt_pos(o, "out_height", w, c.height / c.stride);
  c.out_width = opt_pos(o, "out_width", w, c.width / c.stride);
  if (c.out_height > c.height / c.stride || c.out_width > c.width / c.stride)
    core::fail(w.field("out_height"), fmt::format("output {}x{} is larger than the conv output {}x{}", c.out_height,
                                                  c.out_width, c.height / c.stride, c.width / c.stride));
  l.bias = opt_flag(o, "bias", w, !c.batch_norm);
}

void read_generic(LayerSpec& l, const Json& o, const JsonWhere& w) {
  GenericNumbers& g = l.generic;
  g.params = opt_nonneg_number(o, "params", w);
  g.fwd_flops_per_sample = opt_nonneg_number(o, "fwd_flops_per_sample", w);
  g.bwd_flops_per_sample = opt_nonneg_number(o, "bwd_flops_per_sample", w);
  if (g.bwd_flops_per_sample == 0) g.bwd_flops_per_sample = 2 * g.fwd_flops_per_sample;  // documented default
  g.activation_bytes_per_sample = opt_nonneg_number(o, "activation_bytes_per_sample", w);
  g.output_bytes_per_sample = opt_nonneg_number(o, "output_bytes_per_sample", w);
  g.input_bytes_per_sample = opt_nonneg_number(o, "input_bytes_per_sample", w);
  if (g.input_bytes_per_sample > g.activation_bytes_per_sample)
    core::fail(w.field("input_bytes_per_sample"), "must not exceed activation_bytes_per_sample (it is part of it)");
}

LayerSpec read_layer(const Json& o, const JsonWhere& w, std::int64_t model_seq) {
  core::expect_object(o, w);
  LayerSpec l;
  l.kind = parse_layer_kind(core::get_string(o, "kind", w), w.field("kind").str());
  check_keys(o, keys_for(l.kind), w);
  l.seq = opt_pos(o, "seq", w, model_seq);
  switch (l.kind) {
    case LayerKind::embedding:
      l.hidden = core::get_positive_int(o, "hidden", w);
      l.vocab = core::get_positive_int(o, "vocab", w);
      l.learned_positions = opt_flag(o, "learned_positions", w, true);
      l.dropout = opt_flag(o, "dropout", w, true);
      break;
    case LayerKind::transformer:
    case LayerKind::encoder:
    case LayerKind::decoder: read_block(l, o, w); break;
    case LayerKind::lm_head:
      l.hidden = core::get_positive_int(o, "hidden", w);
      l.vocab = core::get_positive_int(o, "vocab", w);
      l.norm = opt_norm(o, w, Norm::layernorm);
      l.tied_embeddings = opt_flag(o, "tied_embeddings", w, false);
      l.bias = opt_flag(o, "bias", w, false);
      l.pooled = opt_flag(o, "pooled", w, false);
      break;
    case LayerKind::patch_embedding:
      l.hidden = core::get_positive_int(o, "hidden", w);
      l.patch = core::get_positive_int(o, "patch", w);
      l.channels = core::get_positive_int(o, "channels", w);
      l.learned_positions = opt_flag(o, "learned_positions", w, true);
      l.cls_token = opt_flag(o, "cls_token", w, false);
      l.pre_norm = opt_flag(o, "pre_norm", w, false);
      l.bias = opt_flag(o, "bias", w, true);
      l.dropout = opt_flag(o, "dropout", w, true);
      if (l.cls_token && l.seq < 2) core::fail(w.field("seq"), "must be >= 2 with a [CLS] token");
      break;
    case LayerKind::conv: read_conv(l, o, w); break;
    case LayerKind::generic: read_generic(l, o, w); break;
  }
  return l;
}

const std::vector<std::string> kListKeys = {"name", "family", "description", "seq", "layers"};

Model from_layer_list(const Json& j, const JsonWhere& root, const std::string& default_name) {
  check_keys(j, kListKeys, root);
  Model m;
  m.name = core::opt_string(j, "name", root).value_or(default_name);
  core::check_name(m.name, root.field("name").str());
  m.family = core::opt_string(j, "family", root).value_or("custom");
  m.seq = core::get_positive_int(j, "seq", root);
  const JsonWhere lw = root.field("layers");
  const Json& layers = j.at("layers");
  if (layers.empty()) core::fail(lw, "must list at least one layer");
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const JsonWhere w = lw.index(i);
    const LayerSpec l = read_layer(layers[i], w, m.seq);
    const std::int64_t repeat = opt_pos(layers[i], "repeat", w, 1);
    if (static_cast<std::int64_t>(m.layers.size()) + repeat > kMaxModelLayers)
      core::fail(w.field("repeat"), fmt::format("the model would exceed {} layers", kMaxModelLayers));
    const std::string base = core::opt_string(layers[i], "name", w).value_or(
        fmt::format("{}.{}", to_string(l.kind), i));
    core::check_name(base, w.field("name").str());
    if (l.kind == LayerKind::lm_head && l.tied_embeddings) {
      const bool found = std::any_of(m.layers.begin(), m.layers.end(), [&](const LayerSpec& e) {
        return e.kind == LayerKind::embedding && e.vocab == l.vocab && e.hidden == l.hidden;
      });
      if (!found)
        core::fail(w.field("tied_embeddings"), "needs an earlier embedding layer with the same vocab and hidden to tie to");
    }
    for (std::int64_t r = 0; r < repeat; ++r) {
      LayerSpec copy = l;
      copy.name = repeat > 1 ? fmt::format("{}.{}", base, r) : base;
      m.layers.push_back(std::move(copy));
    }
  }
  // Model-level summary: the first block's width and heads, the embedding's vocabulary.
  for (const LayerSpec& l : m.layers) {
    const bool block = l.kind == LayerKind::transformer || l.kind == LayerKind::encoder || l.kind == LayerKind::decoder;
    if (block && m.hidden == 0) {
      m.hidden = l.hidden;
      m.heads = l.heads;
    }
    if (l.kind == LayerKind::embedding && m.vocab == 0) m.vocab = l.vocab;
  }
  return m;
}

std::string stem_of(const std::string& origin) {
  const std::string stem = std::filesystem::path(origin).stem().string();
  return stem.empty() ? std::string("custom") : stem;
}

}  // namespace

Model model_from_json(const nlohmann::json& j, const std::string& origin) {
  const JsonWhere root{origin, ""};
  core::expect_object(j, root);
  const Json& layers = core::require_field(j, "layers", root);
  if (layers.is_array()) return from_layer_list(j, root, stem_of(origin));
  if (layers.is_number()) return from_config(j, root, stem_of(origin));
  core::fail(root.field("layers"),
             fmt::format("expected a number (transformer config) or an array (layer list), got {}", layers.type_name()));
}

Model load_model_file(const std::string& path) { return model_from_json(core::load_json_file(path), path); }

Model resolve_model(std::string_view name_or_path) {
  const std::vector<std::string> names = zoo_names();
  const std::string lower = core::to_lower(name_or_path);
  if (std::find(names.begin(), names.end(), lower) != names.end()) return zoo_model(lower);
  const std::string path(name_or_path);
  std::error_code ec;
  const bool looks_like_path = path.find('/') != std::string::npos || path.ends_with(".json") ||
                               std::filesystem::exists(path, ec);
  if (looks_like_path) return load_model_file(path);
  throw core::InputError(fmt::format("unknown model '{}' (valid: {}; or the path of a model JSON file)", name_or_path,
                                     core::join(names)));
}

}  // namespace strata::model
