// cost/precision: parses data/precision_recipes.json and applies a recipe's bytes to the cost constants.
#include "strata/cost/precision.hpp"

#include <fmt/format.h>

#include <array>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/strategy.hpp"

namespace strata::cost {
namespace {

double bytes_field(const core::Json& r, std::string_view key, const core::JsonWhere& where) {
  const double v = core::get_number(r, key, where);
  if (!(v >= 0 && v <= 64)) core::fail(where.field(key), fmt::format("{} is outside [0, 64] bytes", v));
  return v;
}

// The training dtypes; fp6 is a catalog peak only (cost::dtype_unsupported refuses it before any recipe is read).
constexpr std::array<hw::Dtype, 7> kDtypes{hw::Dtype::fp32, hw::Dtype::tf32, hw::Dtype::fp16, hw::Dtype::bf16,
                                           hw::Dtype::fp8,  hw::Dtype::mxfp8, hw::Dtype::fp4};

std::size_t index_of(hw::Dtype d) {
  for (std::size_t i = 0; i < kDtypes.size(); ++i)
    if (kDtypes[i] == d) return i;
  throw core::InputError(fmt::format("dtype {} has no precision recipe (it is not a training dtype)", hw::to_string(d)));
}

}  // namespace

std::vector<PrecisionRecipe> recipes_from_json(const nlohmann::json& j, const std::string& origin) {
  const core::JsonWhere root{origin, ""};
  core::expect_object(j, root);
  const auto& list = core::require_field(j, "recipes", root);
  if (!list.is_array()) core::fail(root.field("recipes"), "must be an array");
  std::vector<PrecisionRecipe> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto w = root.field(fmt::format("recipes[{}]", i));
    const auto& r = list[i];
    core::expect_object(r, w);
    PrecisionRecipe p;
    p.dtype = hw::parse_dtype(core::get_string(r, "dtype", w), w.field("dtype").str());
    for (const auto& q : out)
      if (q.dtype == p.dtype) core::fail(w.field("dtype"), fmt::format("duplicate recipe for {}", hw::to_string(p.dtype)));
    p.weight_bytes_per_param = bytes_field(r, "weight_bytes_per_param", w);
    p.grad_bytes_per_param = bytes_field(r, "grad_bytes_per_param", w);
    p.optimizer_bytes_per_param = bytes_field(r, "optimizer_bytes_per_param", w);
    p.grad_comm_bytes_per_param = bytes_field(r, "grad_comm_bytes_per_param", w);
    p.optimizer_traffic_bytes_per_param = core::get_number(r, "optimizer_traffic_bytes_per_param", w);
    if (!(p.optimizer_traffic_bytes_per_param >= 0 && p.optimizer_traffic_bytes_per_param <= 1024))
      core::fail(w.field("optimizer_traffic_bytes_per_param"), "must be in [0, 1024]");
    p.activation_bytes_per_element = bytes_field(r, "activation_bytes_per_element", w);
    if (!(p.activation_bytes_per_element > 0)) core::fail(w.field("activation_bytes_per_element"), "must be > 0");
    p.gemm_input_activation_bytes_per_element =
        core::has_field(r, "gemm_input_activation_bytes_per_element")
            ? bytes_field(r, "gemm_input_activation_bytes_per_element", w)
            : p.activation_bytes_per_element;
    if (!(p.gemm_input_activation_bytes_per_element > 0))
      core::fail(w.field("gemm_input_activation_bytes_per_element"), "must be > 0");
    p.non_gemm_dtype = hw::parse_dtype(core::get_string(r, "non_gemm_dtype", w), w.field("non_gemm_dtype").str());
    p.fp8_scaling_bytes_per_gemm_input_element = bytes_field(r, "fp8_scaling_bytes_per_gemm_input_element", w);
    p.fp8_separate_scaling_bytes_per_gemm_input_element =
        core::has_field(r, "fp8_separate_scaling_bytes_per_gemm_input_element")
            ? bytes_field(r, "fp8_separate_scaling_bytes_per_gemm_input_element", w)
            : p.fp8_scaling_bytes_per_gemm_input_element;
    p.source = core::get_string(r, "source", w);
    if (p.source.empty()) core::fail(w.field("source"), "must name where the numbers come from");
    out.push_back(std::move(p));
  }
  return out;
}

const PrecisionRecipe& precision_recipe(hw::Dtype d) {
  // Parsed once, indexed by dtype; every dtype must have a recipe (checked at first use).
  static const std::array<PrecisionRecipe, kDtypes.size()> table = [] {
    const std::string origin = "data/precision_recipes.json";
    const auto list = recipes_from_json(core::embedded_json("precision_recipes.json"), origin);
    std::array<PrecisionRecipe, kDtypes.size()> t{};
    std::array<bool, kDtypes.size()> seen{};
    for (const auto& r : list) {
      t[index_of(r.dtype)] = r;
      seen[index_of(r.dtype)] = true;
    }
    for (std::size_t i = 0; i < kDtypes.size(); ++i)
      if (!seen[i]) throw core::InputError(fmt::format("{}: no recipe for {}", origin, hw::to_string(kDtypes[i])));
    return t;
  }();
  return table[index_of(d)];
}

PrecisionRecipe effective_recipe(const Strategy& s) {
  PrecisionRecipe r = precision_recipe(s.dtype);
  if (s.grad_buffer_bf16) r.grad_bytes_per_param = 2;  // Megatron --grad-reduce-in-bf16: a bf16 main-grad buffer
  if (s.low_precision_weights) r.weight_bytes_per_param = hw::dtype_bytes(s.dtype);  // --fp8/fp4-param-gather
  return r;
}

CostConstants with_recipe(const CostConstants& k, const PrecisionRecipe& r) {
  CostConstants out = k;
  out.weight_bytes_per_param = r.weight_bytes_per_param;
  out.grad_bytes_per_param = r.grad_bytes_per_param;
  out.optimizer_bytes_per_param = r.optimizer_bytes_per_param;
  out.grad_comm_bytes_per_param = r.grad_comm_bytes_per_param;
  out.optimizer_traffic_bytes_per_param = r.optimizer_traffic_bytes_per_param;
  return out;
}

bool recipe_matches(const CostConstants& k, const PrecisionRecipe& r) {
  return k.weight_bytes_per_param == r.weight_bytes_per_param && k.grad_bytes_per_param == r.grad_bytes_per_param &&
         k.optimizer_bytes_per_param == r.optimizer_bytes_per_param &&
         k.grad_comm_bytes_per_param == r.grad_comm_bytes_per_param &&
         k.optimizer_traffic_bytes_per_param == r.optimizer_traffic_bytes_per_param;
}

double fp8_scaling_bytes(const model::LayerCost& lc, const PrecisionRecipe& r, bool separate_casts) {
  const double per_element = separate_casts && r.fp8_separate_scaling_bytes_per_gemm_input_element > 0
                                 ? r.fp8_separate_scaling_bytes_per_gemm_input_element
                                 : r.fp8_scaling_bytes_per_gemm_input_element;
  if (per_element <= 0) return 0;
  double elements = 0;
  for (const auto& g : lc.fwd_gemms) elements += g.count * g.m * g.k;
  return per_element * elements;
}

}  // namespace strata::cost
