// cost/validate_saved: the source "PyTorch saved tensors (CPU)" of `strata validate` — the eager stack's closed
// forms (model/layer_eager.cpp) against the bytes real PyTorch modules saved for backward, measured with torch 1.13
// on CPU by scripts/saved_tensors_probe.py (data/calibration/saved_tensors_cpu.json). A check, never fitted.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "strata/core/data.hpp"
#include "strata/model/layer.hpp"
#include "validate_internal.hpp"

namespace strata::cost::detail {
namespace {

constexpr const char* kSavedTensors = "calibration/saved_tensors_cpu.json";

std::int64_t field(const core::Json& shape, const char* name) { return shape.value(name, std::int64_t{0}); }

// A whole block of the table (block_gpt: GPT-2/nanoGPT layout; block_llama: Llama as Hugging Face writes it)
// through model::layer_cost, the formula the planner uses.
double block_bytes(const core::Json& row) {
  const core::Json& sh = row.at("shape");
  const bool gpt = row.at("kind").get<std::string>() == "block_gpt";
  model::LayerSpec l;
  l.kind = model::LayerKind::transformer;
  l.name = row.at("name").get<std::string>();
  l.hidden = field(sh, "hidden");
  l.heads = field(sh, "heads");
  l.kv_heads = field(sh, "kv_heads");
  l.ffn = field(sh, "ffn");
  l.seq = field(sh, "seq");
  l.activation = gpt ? model::Activation::gelu : model::Activation::swiglu;
  l.norm = gpt ? model::Norm::layernorm : model::Norm::rmsnorm;
  l.bias = gpt;
  l.dropout = sh.value("dropout", 0.0) > 0;
  l.causal = true;
  l.learned_positions = false;
  model::LayerQuery q;
  q.micro_batch = field(sh, "mbs");
  q.seq = l.seq;
  q.bytes_per_element = 2;  // autocast bf16
  q.attention = model::AttentionKernel::eager;
  q.eager_elementwise = true;
  q.legacy_mean_saves_input = true;  // the table is torch 1.13's
  return model::layer_cost(l, q).act_total_bytes();
}

double module_bytes(const core::Json& row) {
  const core::Json& sh = row.at("shape");
  model::EagerModuleQuery q;
  q.module = model::parse_eager_module(row.at("kind").get<std::string>(), std::string(kSavedTensors) + ": kind");
  q.hidden = field(sh, "hidden");
  q.ffn = field(sh, "ffn");
  q.heads = field(sh, "heads");
  q.kv_heads = field(sh, "kv_heads");
  q.vocab = field(sh, "vocab");
  q.micro_batch = field(sh, "mbs");
  q.seq = field(sh, "seq");
  q.dropout = sh.value("dropout", 0.0) > 0;
  q.fused_qkv = sh.value("fused_qkv", true);
  q.input_bytes = row.at("input_dtype").get<std::string>() == "fp32" ? 4 : 2;
  q.autocast = row.at("autocast_bf16").get<bool>();
  q.legacy_mean_saves_input = true;
  const model::SavedBytes s = model::eager_module_saved_bytes(q);
  return s.boundary_bytes + s.intermediate_bytes;
}

std::string row_name(const core::Json& row) {
  const core::Json& sh = row.at("shape");
  std::string out = row.at("name").get<std::string>();
  for (const char* k : {"hidden", "heads", "kv_heads", "ffn", "vocab", "mbs", "seq"})
    if (field(sh, k) > 0) out += fmt::format(" {}={}", k, field(sh, k));
  if (sh.value("dropout", 0.0) > 0) out += " dropout";
  return out;
}

}  // namespace

void saved_tensor_rows(std::vector<ValidationRow>& out) {
  const core::Json doc = core::embedded_json(kSavedTensors);
  for (const auto& row : doc.at("rows")) {
    const std::string kind = row.at("kind").get<std::string>();
    const double predicted = kind.rfind("block_", 0) == 0 ? block_bytes(row) : module_bytes(row);
    const double measured = row.at("boundary_bytes").get<double>() + row.at("intermediate_bytes").get<double>();
    out.push_back({kSavedTensorsDataset, row_name(row), "saved_bytes", predicted, measured,
                   pct_error(predicted, measured), true});
  }
}

}  // namespace strata::cost::detail
