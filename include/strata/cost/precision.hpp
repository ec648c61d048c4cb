// cost/precision: precision recipes as data (data/precision_recipes.json, each with its source) — the bytes per
// parameter of weights, gradients and optimizer state, the DP message and optimizer-traffic bytes, the bytes of a
// stored activation element and the dtype of the non-GEMM work, per training dtype (fp32, tf32, fp16 and bf16
// mixed with fp32 master + Adam, fp8 with bf16 non-GEMM work and scaling traffic). The strategy's dtype picks one.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/constants.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/layer.hpp"

namespace strata::cost {

struct PrecisionRecipe {
  hw::Dtype dtype = hw::Dtype::bf16;
  double weight_bytes_per_param = 2;
  double grad_bytes_per_param = 4;
  double optimizer_bytes_per_param = 12;
  double grad_comm_bytes_per_param = 2;
  double optimizer_traffic_bytes_per_param = 32;
  double activation_bytes_per_element = 2;
  // Bytes of a stored input of a linear layer's GEMM (kept for its weight gradient): TransformerEngine keeps the
  // fp8 cast it computed with (1); otherwise activation_bytes_per_element (the file's field is optional).
  double gemm_input_activation_bytes_per_element = 2;
  hw::Dtype non_gemm_dtype = hw::Dtype::bf16;            // attention core, norms, element-wise
  double fp8_scaling_bytes_per_gemm_input_element = 0;   // amax + cast traffic per GEMM input element (fp8)
  // The same with a separate amax and cast kernel per GEMM operand, re-cast in backward (torchao float8's dynamic
  // tensorwise scaling: Strategy::fp8_separate_casts); optional in the file, 0 = the fused value.
  double fp8_separate_scaling_bytes_per_gemm_input_element = 0;
  std::string source;
  double state_bytes_per_param() const {
    return weight_bytes_per_param + grad_bytes_per_param + optimizer_bytes_per_param;
  }
};

// Parses {"recipes": [...]}; InputError naming `origin` and the field on anything invalid (unknown dtype,
// duplicate, negative bytes, missing source).
std::vector<PrecisionRecipe> recipes_from_json(const nlohmann::json& j, const std::string& origin);
// The built-in recipe of `d` (parsed once from the embedded data file; immutable).
const PrecisionRecipe& precision_recipe(hw::Dtype d);
// The recipe of the strategy's dtype with its memory knobs applied (cost/precision.cpp): gradbuf=bf16 → 2 B of
// gradient per parameter; lpweights=on → weights in hw::dtype_bytes(dtype) (fp8 1, mxfp8 1 + 1/32, fp4 0.5 + 1/16).
struct Strategy;
PrecisionRecipe effective_recipe(const Strategy& s);
// `k` with its bytes-per-parameter fields replaced by the recipe's; recipe_matches: they are already equal.
CostConstants with_recipe(const CostConstants& k, const PrecisionRecipe& r);
bool recipe_matches(const CostConstants& k, const PrecisionRecipe& r);
// FP8 scaling traffic of one layer's forward GEMMs (one tp rank, one micro-batch): every GEMM input activation
// (m×k per product; weights are cast once per step) read for its amax and written as fp8 —
// fp8_scaling_bytes_per_gemm_input_element · Σ count·m·k (separate_casts: the separate-kernel value). 0 for recipes
// without fp8.
double fp8_scaling_bytes(const model::LayerCost& lc, const PrecisionRecipe& r, bool separate_casts = false);

}  // namespace strata::cost
