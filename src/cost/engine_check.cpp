// cost/engine_check: what an engine profile cannot run (model features, devices, dtypes, strategy forms, the
// profile's "never" rules), its stack traits applied to a strategy, and the rule conditions (docs/export.md).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/engine.hpp"

namespace strata::cost {
namespace {

template <class T>
bool has(const std::vector<T>& v, const T& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool no_bf16(const hw::Cluster& c) {
  return std::any_of(c.gpu_types.begin(), c.gpu_types.end(), [](const hw::GpuSpec& g) { return !g.supports(hw::Dtype::bf16); });
}

// Blocks of the chain that differ from the first in a way an engine's model config cannot express.
bool uniform_blocks(const model::Model& m) {
  const auto& b0 = m.layers[1];
  for (std::size_t i = 1; i + 1 < m.layers.size(); ++i) {
    const auto& b = m.layers[i];
    if (b.kind != model::LayerKind::transformer || b.hidden != b0.hidden || b.heads != b0.heads ||
        b.kv_heads != b0.kv_heads || b.ffn != b0.ffn || b.activation != b0.activation || b.norm != b0.norm ||
        b.bias != b0.bias || b.experts != b0.experts || !b.causal)
      return false;
  }
  return true;
}

std::string feature_text(const std::string& f, const model::Model& m) {
  if (f == "decoder") return fmt::format("model '{}' (family {}): not a uniform decoder-only transformer", m.name, m.family);
  if (f == "alibi") return fmt::format("model '{}': ALiBi position biases (family {})", m.name, m.family);
  if (f == "learned_positions") return fmt::format("model '{}': learned absolute position embeddings", m.name);
  if (f == "rope") return fmt::format("model '{}': rotary position embeddings", m.name);
  if (f == "layernorm") return fmt::format("model '{}': LayerNorm", m.name);
  if (f == "rmsnorm") return fmt::format("model '{}': RMSNorm", m.name);
  if (f == "no_norm") return fmt::format("model '{}': blocks without normalization", m.name);
  if (f == "gelu") return fmt::format("model '{}': a GELU MLP", m.name);
  if (f == "relu") return fmt::format("model '{}': a ReLU MLP", m.name);
  if (f == "swiglu") return fmt::format("model '{}': a SwiGLU MLP", m.name);
  if (f == "gqa") return fmt::format("model '{}': grouped-query attention", m.name);
  if (f == "moe") return fmt::format("model '{}': a mixture of experts", m.name);
  if (f == "tied") return fmt::format("model '{}': tied input/output embeddings", m.name);
  if (f == "untied") return fmt::format("model '{}': an untied LM head", m.name);
  if (f == "bias") return fmt::format("model '{}': linear-layer biases", m.name);
  if (f == "no_bias") return fmt::format("model '{}': linear layers without biases", m.name);
  return fmt::format("model '{}': {}", m.name, f);
}

std::string flavor_problem(const EngineProfile& p, const model::Model& m) {
  const auto& b = m.layers[1];
  const std::int64_t kv = b.kv_heads > 0 ? b.kv_heads : b.heads;
  const std::int64_t vocab = m.layers.front().vocab;
  const std::string shape = fmt::format("{}:{}:{}:{}:{}:{}", m.layers.size() - 2, b.hidden, b.heads, kv, b.ffn, vocab);
  std::vector<std::string> names;
  for (const auto& f : p.flavors) {
    const auto colon = f.find(':');
    if (f.substr(colon + 1) == shape) return "";
    names.push_back(f.substr(0, colon));
  }
  return fmt::format("model '{}': its shape (layers {}, hidden {}, heads {}, kv heads {}, ffn {}, vocab {}) is no "
                     "registered {} flavor ({}): register a flavor with this shape to run it",
                     m.name, m.layers.size() - 2, b.hidden, b.heads, kv, b.ffn, vocab, p.name, core::join(names));
}

std::string schedule_problem(const EngineProfile& p, const Strategy& s) {
  if (!has(p.schedules, s.schedule)) {
    std::vector<std::string> names;
    for (auto x : p.schedules) names.emplace_back(to_string(x));
    return fmt::format("the {} schedule ({} runs {})", to_string(s.schedule), p.name, core::join(names));
  }
  if (s.schedule == Schedule::interleaved && s.virtual_stages < 2)
    return "the interleaved schedule with v = 1 (interleaving needs >= 2 model chunks per rank)";
  return "";
}

std::string recompute_problem(const EngineProfile& p, const Strategy& s) {
  if (!has(p.recompute, s.recompute)) {
    if (s.recompute == model::Recompute::oases) return "recompute=oases (Oases' cross-pass recompute)";
    if (s.recompute == model::Recompute::op) return "recompute=op (torchtitan's per-op checkpointing)";
    return fmt::format("{} recompute ({} checkpoints whole layers or none)", model::to_string(s.recompute), p.name);
  }
  if (s.recompute_layers.empty()) return "";
  if (p.rlayers == "none") return fmt::format("per-stage rlayers ({} applies one recompute mode to every layer)", p.name);
  if (s.recompute != model::Recompute::full)
    return "per-stage rlayers with selective recompute (--recompute-method needs --recompute-granularity full)";
  if (s.virtual_stages > 1) return "per-stage rlayers with virtual stages (--recompute-num-layers counts per chunk)";
  if (std::adjacent_find(s.recompute_layers.begin(), s.recompute_layers.end(), std::not_equal_to<>()) !=
      s.recompute_layers.end())
    return "per-stage rlayers that differ between stages (--recompute-num-layers is one number)";
  if (s.recompute_layers.front() < 1) return "rlayers = 0 (--recompute-num-layers must be >= 1)";
  return "";
}

std::string degree_problem(const EngineProfile& p, const model::Model& m, const Strategy& s) {
  if (p.max_tp > 0 && s.tp > p.max_tp) return fmt::format("tensor parallelism tp = {} ({} runs tp <= {})", s.tp, p.name, p.max_tp);
  if (p.max_pp > 0 && s.pp > p.max_pp) return fmt::format("pipeline parallelism pp = {} ({} runs pp <= {})", s.pp, p.name, p.max_pp);
  if (s.cp > 1) {
    if (p.max_cp == 1) return fmt::format("context parallelism (cp = {}: {} has none)", s.cp, p.name);
    if (p.max_cp > 0 && s.cp > p.max_cp) return fmt::format("context parallelism cp = {} (at most {})", s.cp, p.max_cp);
    if (!p.writer_cp)
      return fmt::format("context parallelism (cp = {}: {} has it, strata's {} writer does not write it yet)", s.cp,
                         p.name, p.export_target);
    if (p.cp_seq_multiple > 0 && m.seq % (static_cast<std::int64_t>(p.cp_seq_multiple) * s.cp) != 0)
      return fmt::format("context parallelism cp = {} with seq {} (the sequence must be a multiple of {} x cp)", s.cp,
                         m.seq, p.cp_seq_multiple);
  }
  if (!has(p.zero_stages, s.zero_stage)) {
    std::vector<std::string> z;
    for (int x : p.zero_stages) z.push_back(std::to_string(x));
    return fmt::format("ZeRO-{} ({} has ZeRO/FSDP stages {})", s.zero_stage, p.name, core::join(z));
  }
  if (p.sequence_parallel == "never" && s.sequence_parallel)
    return fmt::format("Megatron sequence parallelism (sp=on: {} has none)", p.name);
  if (p.sequence_parallel == "with_tp" && s.tp > 1 && !s.sequence_parallel)
    return fmt::format("tp without sequence parallelism ({}'s tensor-parallel plan always shards the sequence)", p.name);
  if (s.tp == 1 && s.sequence_parallel) return "sequence parallelism with tp = 1";
  return "";
}

std::string trait_problem(const EngineProfile& p, const Strategy& s) {
  if (s.tp_overlap && !p.oases_overlap) return "overlap=on (Oases' two-sub-batch overlapped TP)";
  if (s.tp_async && !p.async_tp) return fmt::format("overlap=async ({} has no chunked TP collective matmul)", p.name);
  if (!has(p.eager_elementwise_allowed, s.eager_elementwise))
    return s.eager_elementwise ? fmt::format("elementwise=eager ({} runs fused element-wise kernels)", p.name)
                               : fmt::format("elementwise=fused ({} runs eager PyTorch element-wise kernels)", p.name);
  const bool full = s.recompute == model::Recompute::full;
  if ((full || s.recompute_early_stop) && !has(p.early_stop_allowed, s.recompute_early_stop))
    return s.recompute_early_stop
               ? fmt::format("earlystop=on ({}'s full recompute re-runs each checkpointed block's whole forward)", p.name)
               : fmt::format("full recompute without early stop ({}'s activation checkpointing is PyTorch's "
                             "non-reentrant checkpoint, which stops the re-run early: earlystop=on)", p.name);
  if (s.dtype == hw::Dtype::fp8 && !has(p.fp8_separate_allowed, s.fp8_separate_casts))
    return s.fp8_separate_casts ? fmt::format("fp8cast=separate ({}'s fp8 runs fused cast kernels)", p.name)
                                : fmt::format("fp8 with fused casts ({}'s float8 casts each GEMM operand "
                                              "separately: fp8cast=separate)", p.name);
  return "";
}

std::string atom_text(const std::string& a) {
  if (a == "async") return "overlap=async";
  if (a == "eager") return "elementwise=eager";
  if (a == "sp") return "sp=on";
  if (a == "overlap") return "overlap=on";
  if (a == "full" || a == "selective") return "recompute=" + a;
  return a;
}

bool compare(std::int64_t x, std::string_view op, std::int64_t v) {
  if (op == ">") return x > v;
  if (op == ">=") return x >= v;
  if (op == "<") return x < v;
  if (op == "<=") return x <= v;
  if (op == "=") return x == v;
  return x != v;
}

bool one_atom(std::string_view a, const hw::Cluster& c, const Strategy& s, const std::string& origin) {
  if (!a.empty() && a.front() == '!') return !one_atom(a.substr(1), c, s, origin);
  if (a == "sp") return s.sequence_parallel;
  if (a == "async") return s.tp_async;
  if (a == "overlap") return s.tp_overlap;
  if (a == "eager") return s.eager_elementwise;
  if (a == "full") return s.recompute == model::Recompute::full;
  if (a == "selective") return s.recompute == model::Recompute::selective;
  if (a == "gpu_without_bf16") return no_bf16(c);
  for (auto sc : {Schedule::gpipe, Schedule::one_f_one_b, Schedule::interleaved, Schedule::pipedream, Schedule::two_bw})
    if (a == to_string(sc)) return s.schedule == sc;
  const auto at = a.find_first_of("<>=!");
  if (at == std::string_view::npos || at == 0)
    throw core::InputError(fmt::format("{}: unknown condition '{}'", origin, a));
  const auto name = a.substr(0, at);
  const auto rest = a.substr(at);
  const std::size_t oplen = rest.size() > 1 && rest[1] == '=' ? 2 : 1;
  const auto op = rest.substr(0, oplen), value = rest.substr(oplen);
  if (op == "!") throw core::InputError(fmt::format("{}: unknown condition '{}'", origin, a));
  if (name == "dtype") {
    if (op != "=" && op != "!=") throw core::InputError(fmt::format("{}: '{}': dtype takes = or !=", origin, a));
    return (s.dtype == hw::parse_dtype(value, origin)) == (op == "=");
  }
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || p != value.data() + value.size())
    throw core::InputError(fmt::format("{}: '{}': expected an integer after {}", origin, a, op));
  std::int64_t x = 0;
  if (name == "dp") x = s.dp;
  else if (name == "tp") x = s.tp;
  else if (name == "pp") x = s.pp;
  else if (name == "cp") x = s.cp;
  else if (name == "zero") x = s.zero_stage;
  else if (name == "mbs") x = s.micro_batch;
  else if (name == "v") x = s.virtual_stages;
  else if (name == "devices") x = c.num_devices();
  else throw core::InputError(fmt::format("{}: unknown condition '{}'", origin, a));
  return compare(x, op, v);
}

}  // namespace

bool rule_applies(const std::vector<std::string>& when, const hw::Cluster& c, const Strategy& s, const std::string& origin) {
  for (const auto& atom : when) {
    bool any = false;
    std::size_t from = 0;
    while (true) {  // every alternative is parsed, so a typo anywhere in the atom is reported
      const auto bar = atom.find('|', from);
      any = one_atom(std::string_view(atom).substr(from, bar - from), c, s, origin) || any;
      if (bar == std::string::npos) break;
      from = bar + 1;
    }
    if (!any) return false;
  }
  return true;
}

std::string rule_pattern(const EngineRule& r, const Strategy& s) {
  std::string out = r.pattern;
  const std::pair<const char*, std::int64_t> vars[] = {{"{tp}", s.tp}, {"{pp}", s.pp}, {"{cp}", s.cp}, {"{dp}", s.dp},
                                                       {"{mbs}", s.micro_batch}, {"{gbs}", s.global_batch}};
  for (const auto& [key, value] : vars)
    for (auto at = out.find(key); at != std::string::npos; at = out.find(key, at))
      out.replace(at, std::string_view(key).size(), std::to_string(value));
  return out;
}

std::vector<std::string> model_features(const model::Model& m) {
  const auto& L = m.layers;
  if (L.size() < 3 || L.front().kind != model::LayerKind::embedding || L.back().kind != model::LayerKind::lm_head ||
      !uniform_blocks(m))
    return {};
  const auto& b = L[1];
  std::vector<std::string> f{"decoder"};
  // ALiBi has no position table and no rotary flag in the layer chain: MPT is the zoo's ALiBi family
  // (model/zoo.cpp mpt()); other tables-free decoders are rotary (Llama).
  f.emplace_back(L.front().learned_positions ? "learned_positions" : m.family == "mpt" ? "alibi" : "rope");
  f.emplace_back(b.norm == model::Norm::layernorm ? "layernorm" : b.norm == model::Norm::rmsnorm ? "rmsnorm" : "no_norm");
  f.emplace_back(model::to_string(b.activation));
  f.emplace_back(b.kv_heads > 0 && b.kv_heads != b.heads ? "gqa" : "mha");
  if (b.experts > 0) f.emplace_back("moe");
  f.emplace_back(L.back().tied_embeddings ? "tied" : "untied");
  f.emplace_back(b.bias ? "bias" : "no_bias");
  return f;
}

std::optional<std::string> engine_cannot_run_on(const EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                                hw::Dtype dtype) {
  for (const auto& g : c.gpu_types) {
    const bool cpu = g.vendor == "cpu";
    if (cpu && p.devices == "gpu") return fmt::format("CPU devices ({}: {} trains on GPUs)", g.name, p.name);
    if (!cpu && p.devices == "cpu")
      return fmt::format("GPU devices ({}: {} runs local CPU processes)", g.name, p.name);
  }
  if (p.max_devices > 0 && c.num_devices() > p.max_devices)
    return fmt::format("{} devices ({} runs at most {})", c.num_devices(), p.name, p.max_devices);
  if (!has(p.dtypes, dtype)) {
    std::vector<std::string> names;
    for (auto d : p.dtypes) names.emplace_back(hw::to_string(d));
    return fmt::format("the {} compute dtype ({} trains in {})", hw::to_string(dtype), p.name, core::join(names));
  }
  for (const auto& g : c.gpu_types)
    if (!g.supports(dtype))
      return fmt::format("{} on {}, which has no native {} (plan with --dtype {} there)", hw::to_string(dtype), g.name,
                         hw::to_string(dtype), g.supports(hw::Dtype::fp16) && has(p.dtypes, hw::Dtype::fp16) ? "fp16" : "fp32");
  const auto features = model_features(m);
  if (features.empty()) return feature_text("decoder", m);
  for (const auto& f : features)
    if (!has(p.model_features, f)) return feature_text(f, m);
  if (!p.flavors.empty())
    if (auto why = flavor_problem(p, m); !why.empty()) return why;
  return std::nullopt;
}

std::optional<std::string> engine_cannot_run_strategy(const EngineProfile& p, const model::Model& m,
                                                      const hw::Cluster& c, const Strategy& s) {
  if (!is_uniform(s) && !p.per_stage) return fmt::format("a per-stage strategy ({} runs one dp x tp x pp grid)", p.name);
  // Stack traits first: they name the form a strategy key asks for (overlap=, elementwise=, earlystop=, fp8cast=).
  for (const auto& why : {trait_problem(p, s), schedule_problem(p, s), recompute_problem(p, s), degree_problem(p, m, s)})
    if (!why.empty()) return why;
  if (!p.uneven_split && s.pp > 1 && !s.split.empty() && s.split != default_split(m, s.pp * s.virtual_stages))
    return fmt::format("a custom layer split ({} partitions the layers itself)", p.name);
  for (const auto& r : p.rules)
    if (r.kind == "never" && rule_applies(r.when, c, s, p.name)) {
      std::vector<std::string> atoms;
      for (const auto& a : r.when) atoms.push_back(atom_text(a));
      return fmt::format("{} ({}: {})", core::join(atoms, " with "), p.name, r.fact);
    }
  return std::nullopt;
}

std::optional<std::string> engine_cannot_run(const EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                             const Strategy& s) {
  if (auto why = engine_cannot_run_on(p, m, c, s.dtype)) return why;
  return engine_cannot_run_strategy(p, m, c, s);
}

void apply_engine_traits(const EngineProfile& p, const hw::Cluster& c, Strategy& s, const std::set<std::string>& given) {
  const auto mine = [&](const char* key) { return given.count(key) == 0; };  // the engine sets what the user did not
  if (mine("elementwise")) s.eager_elementwise = p.eager_elementwise;
  if (mine("earlystop")) s.recompute_early_stop = p.recompute_early_stop && s.recompute == model::Recompute::full;
  if (mine("fp8cast")) s.fp8_separate_casts = p.fp8_separate_casts && s.dtype == hw::Dtype::fp8;
  if (mine("loss")) s.fp32_loss = p.loss == "fp32";                                            // its loss path
  if (mine("optim")) s.optim = parse_optimizer_step(p.optimizer, "engine " + p.name + ": optimizer");  // AdamW step
  if (mine("grads")) s.grads = parse_grad_buffer(p.grads, "engine " + p.name + ": grads");               // gradients
  if (!mine("attention")) return;
  // The kernel per GPU type from the profile's table (first matching row; none = the GPU's default).
  bool all_default = true, all_same = true;
  std::optional<model::AttentionKernel> first;
  for (const auto& g : c.gpu_types) {
    Strategy probe;
    probe.dtype = s.dtype;  // the GPU's default kernel follows GPU × dtype (fp32: no FlashAttention)
    const auto fallback = attention_kernel_for(probe, g);
    auto k = fallback;
    for (const auto& row : p.attention) {
      const bool gpu_ok = row.gpus == "any" || (row.gpus == "bf16") == g.supports(hw::Dtype::bf16);
      if (gpu_ok && has(row.dtypes, s.dtype)) {
        k = row.kernel;
        break;
      }
    }
    all_default = all_default && k == fallback;
    if (!first) first = k;
    all_same = all_same && k == *first;
  }
  if (all_default) s.attention.reset();
  else s.attention = all_same ? *first : model::AttentionKernel::eager;  // mixed: unfused everywhere (more memory)
}

}  // namespace strata::cost
