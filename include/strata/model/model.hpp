// model/model: a model as a chain of layers (embedding → blocks → head), the built-in zoo, custom model files
// (docs/models.md) and whole-model numbers (parameters, FLOPs per token).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/model/layer.hpp"

namespace strata::model {

struct Model {
  std::string name;
  std::string family;               // "gpt", "llama", "mpt", "bert", "t5", "vit", "swin", "resnet", "vgg", "custom"
  std::vector<LayerSpec> layers;    // the chain, in order
  std::int64_t seq = 0;             // default sequence length (tokens, or patches for vision models)
  std::int64_t hidden = 0;          // main width (0 for CNNs)
  std::int64_t heads = 0;           // attention heads of the main blocks (0 for CNNs)
  std::int64_t vocab = 0;           // 0 for vision models
  // Number of transformer-type blocks (what "l" means in the PTD-P formulas).
  int num_blocks() const;
};

// A decoder-only transformer (GPT / LLaMA / MPT style) described by its hyper-parameters: the "transformer
// config" form of a custom model file, and what most zoo entries are built from.
struct TransformerConfig {
  std::string name;
  std::string family = "custom";
  std::int64_t layers = 0, hidden = 0, heads = 0;
  std::int64_t kv_heads = 0;        // 0 = heads (MHA)
  std::int64_t ffn = 0;             // 0 = 4·hidden (GELU/ReLU only; SwiGLU needs it given)
  std::int64_t vocab = 0, seq = 0;
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool tied_embeddings = true;
  bool learned_positions = true;
  bool bias = true;
  bool dropout = true;
  bool causal = true;               // causal self-attention (decoder-only LM); false for BERT-style encoders
  std::int64_t experts = 0, top_k = 0;  // MoE MLP in every block when experts > 0
};
// Upper bound on the layers of one model (a typo in `layers`/`repeat` must not allocate gigabytes).
inline constexpr std::int64_t kMaxModelLayers = 100000;
// Builds embedding → `layers` transformer blocks → final norm + LM head. InputError (naming `origin`) when a
// size is not positive, heads do not divide hidden, kv_heads do not divide heads, top_k > experts...
Model build_transformer(const TransformerConfig& cfg, const std::string& origin = "model");

// Names of the built-in models, sorted.
std::vector<std::string> zoo_names();
// A built-in model; InputError "unknown model 'x' (valid: ...)".
Model zoo_model(std::string_view name);
// A built-in name, or the path of a JSON model file.
Model resolve_model(std::string_view name_or_path);
// `strata models --json` (and the Python API's strata.models()): one object per built-in model, sorted by name
// (name, family, num_layers, num_blocks, hidden, heads, seq, vocab, params). model/zoo_json.cpp.
nlohmann::ordered_json zoo_listing_json();
// One entry of that listing for any model (the Python API's Model.to_dict()).
nlohmann::ordered_json model_summary_json(const Model& m);
Model load_model_file(const std::string& path);
Model model_from_json(const nlohmann::json& j, const std::string& origin);
// Copy of the model with another sequence length (transformer models only; InputError otherwise).
Model with_seq(const Model& m, std::int64_t seq);

// Total parameters (tied embeddings counted once).
double total_params(const Model& m);
// The model FLOP counts, all sums of layer_cost (the one FLOPs source; cost::estimate's MFU and TFLOP/s and
// `strata describe` read these):
// Training FLOPs of one sample (forward + backward, no recompute) at the model's seq: the MFU numerator
// (Korthikanti et al. 2022 §6, PaLM). For a GPT it equals 72·s·l·h²·(1 + s/(6h) + V/(12·l·h)).
double train_flops_per_sample(const Model& m);
// The same per token (÷ seq; per sample when seq is 0).
double train_flops_per_token(const Model& m);
// The PTD-P convention (Narayanan et al. 2021, eq. 3) used for TFLOP/s per GPU: train_flops_per_sample plus one
// more forward of every transformer-type block (the recompute forward, whether or not a strategy recomputes).
// For a GPT it equals 96·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
double ptdp_flops_per_sample(const Model& m);
// Both in one pass (one layer_cost per run of identical layers).
struct SampleFlops {
  double train = 0;   // train_flops_per_sample
  double ptdp = 0;    // ptdp_flops_per_sample
};
SampleFlops sample_flops(const Model& m);

// Empty when every layer of the model can be split over `tp` tensor-parallel ranks, else the first reason.
std::string tensor_parallel_problem(const Model& m, int tp);

}  // namespace strata::model
