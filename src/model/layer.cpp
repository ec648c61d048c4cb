// model/layer: enum names and parsers, the tensor-parallel validity rule per layer kind, and layer_cost — the
// dispatcher that resolves a query against a layer and calls the per-kind formulas (layer_impl.hpp).
#include "strata/model/layer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <utility>

#include "layer_impl.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::model {
namespace {

template <typename E, std::size_t N>
E parse_enum(std::string_view text, const std::string& where, const char* what,
             const std::array<std::pair<const char*, E>, N>& table) {
  const std::string lower = core::to_lower(text);
  std::vector<std::string> valid;
  for (const auto& [name, value] : table) {
    if (lower == name) return value;
    valid.emplace_back(name);
  }
  throw core::InputError(fmt::format("{}: unknown {} '{}' (valid: {})", where, what, text, core::join(valid)));
}

constexpr std::array<std::pair<const char*, Recompute>, 5> kRecompute{{{"none", Recompute::none},
                                                                       {"selective", Recompute::selective},
                                                                       {"full", Recompute::full},
                                                                       {"oases", Recompute::oases},
                                                                       {"op", Recompute::op}}};
constexpr std::array<std::pair<const char*, LayerKind>, 8> kKinds{{{"embedding", LayerKind::embedding},
                                                                   {"transformer", LayerKind::transformer},
                                                                   {"lm_head", LayerKind::lm_head},
                                                                   {"encoder", LayerKind::encoder},
                                                                   {"decoder", LayerKind::decoder},
                                                                   {"patch_embedding", LayerKind::patch_embedding},
                                                                   {"conv", LayerKind::conv},
                                                                   {"generic", LayerKind::generic}}};
constexpr std::array<std::pair<const char*, Activation>, 3> kActivations{
    {{"gelu", Activation::gelu}, {"swiglu", Activation::swiglu}, {"relu", Activation::relu}}};
constexpr std::array<std::pair<const char*, Norm>, 3> kNorms{
    {{"layernorm", Norm::layernorm}, {"rmsnorm", Norm::rmsnorm}, {"none", Norm::none}}};

constexpr std::array<std::pair<const char*, AttentionKernel>, 5> kAttention{
    {{"eager", AttentionKernel::eager},
     {"flash", AttentionKernel::flash},
     {"flash1", AttentionKernel::flash1},
     {"cudnn", AttentionKernel::cudnn},
     {"efficient", AttentionKernel::efficient}}};

constexpr std::array<std::pair<const char*, LossPath>, 2> kLoss{{{"fused", LossPath::fused}, {"fp32", LossPath::fp32}}};

// The `kind` of a row of data/calibration/saved_tensors_cpu.json.
constexpr std::array<std::pair<const char*, EagerModule>, 8> kEagerModules{{{"linear", EagerModule::linear},
                                                                            {"layernorm", EagerModule::layernorm},
                                                                            {"rmsnorm", EagerModule::rmsnorm},
                                                                            {"mlp_gelu", EagerModule::mlp_gelu},
                                                                            {"mlp_swiglu", EagerModule::mlp_swiglu},
                                                                            {"dropout", EagerModule::dropout},
                                                                            {"attention", EagerModule::attention},
                                                                            {"loss_fp32", EagerModule::loss_fp32}}};

template <typename E, std::size_t N>
std::string_view name_of(E value, const std::array<std::pair<const char*, E>, N>& table) {
  for (const auto& [name, v] : table)
    if (v == value) return name;
  return "?";
}

}  // namespace

std::string_view to_string(Recompute r) { return name_of(r, kRecompute); }
Recompute parse_recompute(std::string_view text, const std::string& where) {
  return parse_enum(text, where, "recompute mode", kRecompute);
}
std::string_view to_string(AttentionKernel k) { return name_of(k, kAttention); }
AttentionKernel parse_attention_kernel(std::string_view text, const std::string& where) {
  return parse_enum(text, where, "attention kernel", kAttention);
}
std::string_view to_string(LossPath l) { return name_of(l, kLoss); }
LossPath parse_loss_path(std::string_view text, const std::string& where) {
  return parse_enum(text, where, "loss path", kLoss);
}
EagerModule parse_eager_module(std::string_view text, const std::string& where) {
  return parse_enum(text, where, "eager module", kEagerModules);
}
std::string_view to_string(LayerKind k) { return name_of(k, kKinds); }
LayerKind parse_layer_kind(std::string_view text, const std::string& where) {
  return parse_enum(text, where, "layer kind", kKinds);
}
std::string_view to_string(Activation a) { return name_of(a, kActivations); }
std::string_view to_string(Norm n) { return name_of(n, kNorms); }
Activation parse_activation(std::string_view text, const std::string& where) {
  return parse_enum(text, where, "activation", kActivations);
}
Norm parse_norm(std::string_view text, const std::string& where) { return parse_enum(text, where, "norm", kNorms); }

std::string tensor_parallel_problem(const LayerSpec& layer, int tp) {
  if (tp < 1) return fmt::format("tensor-parallel degree must be >= 1, got {}", tp);
  if (tp == 1) return {};
  if (layer.kind == LayerKind::conv)
    return fmt::format("layer '{}': convolution blocks do not support tensor parallelism (tp must be 1, got {})",
                       layer.name, tp);
  if (is_attention_block(layer.kind)) {
    if (layer.heads % tp != 0)
      return fmt::format("layer '{}': tp={} does not divide the {} attention heads", layer.name, tp, layer.heads);
    const std::int64_t kv = layer.kv_heads > 0 ? layer.kv_heads : layer.heads;
    if (kv % tp != 0 && tp % kv != 0)
      return fmt::format("layer '{}': tp={} and the {} kv heads do not divide one another", layer.name, tp, kv);
  }
  return {};
}

namespace detail {

double norm_params(double width, Norm norm, bool bias) {
  switch (norm) {
    case Norm::layernorm: return bias ? 2 * width : width;
    case Norm::rmsnorm: return width;
    case Norm::none: return 0;
  }
  return 0;
}

void finish_flops(LayerCost& lc) {
  lc.fwd_flops = 0;
  for (const Gemm& g : lc.fwd_gemms) lc.fwd_flops += g.flops();
  lc.bwd_flops = 2.0 * lc.fwd_flops;
}

}  // namespace detail

LayerCost layer_cost(const LayerSpec& layer, const LayerQuery& q) {
  if (q.micro_batch < 1) throw std::invalid_argument(fmt::format("layer_cost: micro_batch {} < 1", q.micro_batch));
  if (q.tp < 1) throw std::invalid_argument(fmt::format("layer_cost: tp {} < 1", q.tp));
  if (!(q.bytes_per_element > 0)) throw std::invalid_argument("layer_cost: bytes_per_element must be > 0");
  if (const std::string problem = tensor_parallel_problem(layer, q.tp); !problem.empty())
    throw core::InputError(problem);
  detail::Ctx c;
  c.b = static_cast<double>(q.micro_batch);
  c.s = static_cast<double>(q.seq > 0 ? q.seq : layer.seq);
  c.t = q.tp;
  c.sp = q.sequence_parallel && q.tp > 1;
  c.rc = q.recompute;
  c.early_stop = q.recompute_early_stop;
  // Oases' checkpoints sit after TP all-reduces: layers other than transformer-type blocks have none, so their
  // input is the checkpoint (= full).
  const bool tp_block = layer.kind == LayerKind::transformer || layer.kind == LayerKind::encoder ||
                        layer.kind == LayerKind::decoder;
  if (c.rc == Recompute::oases && !tp_block) c.rc = Recompute::full;
  if (c.rc == Recompute::op && !tp_block) c.rc = Recompute::full;  // per-op SAC exists for transformer blocks
  c.B = q.bytes_per_element;
  c.Bg = q.gemm_input_bytes_per_element > 0 ? q.gemm_input_bytes_per_element : c.B;
  c.flash = is_fused(q.attention);
  // The eager stack under autocast over fp32 parameters has an fp32 residual stream (layer_eager.cpp); with
  // 16-bit parameters (FSDP mixed precision) it stays in the compute dtype.
  c.eager = q.eager_elementwise;
  c.R = c.eager && !q.eager_bf16_params ? std::max(c.B, 4.0) : c.B;
  c.loss = q.loss;
  c.legacy_mean = q.legacy_mean_saves_input;
  if (q.cp > 1) {  // context parallelism: the rank's seq/cp tokens, attending over the whole sequence
    c.s_keys = c.s;
    c.s /= q.cp;
  }
  const bool needs_seq = layer.kind != LayerKind::conv && layer.kind != LayerKind::generic;
  if (needs_seq && !(c.s > 0))
    throw std::invalid_argument(fmt::format("layer_cost: layer '{}' has no sequence length", layer.name));
  switch (layer.kind) {
    case LayerKind::transformer:
    case LayerKind::encoder:
    case LayerKind::decoder: return detail::transformer_cost(layer, c);
    case LayerKind::embedding: return detail::embedding_cost(layer, c);
    case LayerKind::lm_head: return detail::lm_head_cost(layer, c);
    case LayerKind::patch_embedding: return detail::patch_cost(layer, c);
    case LayerKind::conv: return detail::conv_cost(layer, c);
    case LayerKind::generic: return detail::generic_cost(layer, c);
  }
  throw std::logic_error("layer_cost: unknown layer kind");
}

bool same_cost_shape(const LayerSpec& a, const LayerSpec& b) {
  const bool common =
      a.kind == b.kind && a.hidden == b.hidden && a.heads == b.heads && a.kv_heads == b.kv_heads && a.ffn == b.ffn &&
      a.vocab == b.vocab && a.seq == b.seq && a.encoder_seq == b.encoder_seq && a.activation == b.activation &&
      a.norm == b.norm && a.tied_embeddings == b.tied_embeddings && a.learned_positions == b.learned_positions &&
      a.bias == b.bias && a.experts == b.experts && a.top_k == b.top_k && a.patch == b.patch &&
      a.channels == b.channels && a.attention_window == b.attention_window && a.dropout == b.dropout &&
      a.pooled == b.pooled && a.cls_token == b.cls_token && a.pre_norm == b.pre_norm && a.causal == b.causal;
  if (!common) return false;
  // model::layer_cost reads the conv shape only for conv / patch-embedding layers and the generic numbers only for
  // generic layers: skip them for the rest (a 128-block transformer compares 128 times per estimate).
  if (a.kind == LayerKind::conv || a.kind == LayerKind::patch_embedding) {
    const auto& ca = a.conv;
    const auto& cb = b.conv;
    if (!(ca.in_channels == cb.in_channels && ca.out_channels == cb.out_channels && ca.kernel == cb.kernel &&
          ca.height == cb.height && ca.width == cb.width && ca.convs == cb.convs && ca.out_height == cb.out_height &&
          ca.out_width == cb.out_width && ca.mid_channels == cb.mid_channels && ca.stride == cb.stride &&
          ca.bottleneck == cb.bottleneck && ca.batch_norm == cb.batch_norm))
      return false;
  }
  if (a.kind == LayerKind::generic) {
    const auto& ga = a.generic;
    const auto& gb = b.generic;
    return ga.params == gb.params && ga.fwd_flops_per_sample == gb.fwd_flops_per_sample &&
           ga.bwd_flops_per_sample == gb.bwd_flops_per_sample &&
           ga.activation_bytes_per_sample == gb.activation_bytes_per_sample &&
           ga.input_bytes_per_sample == gb.input_bytes_per_sample &&
           ga.output_bytes_per_sample == gb.output_bytes_per_sample;
  }
  return true;
}

}  // namespace strata::model
