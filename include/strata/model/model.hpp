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

// Names of the built-in models, sorted.
std::vector<std::string> zoo_names();
// A built-in model; InputError "unknown model 'x' (valid: ...)".
Model zoo_model(std::string_view name);
// A built-in name, or the path of a JSON model file.
Model resolve_model(std::string_view name_or_path);
Model load_model_file(const std::string& path);
Model model_from_json(const nlohmann::json& j, const std::string& origin);
// Copy of the model with another sequence length (transformer models only; InputError otherwise).
Model with_seq(const Model& m, std::int64_t seq);

// Total parameters (tied embeddings counted once).
double total_params(const Model& m);
// Training FLOPs per token (forward + backward, no recompute) at the model's seq.
double train_flops_per_token(const Model& m);

}  // namespace strata::model
