// cost/strategy: parsing (CLI syntax and JSON), serialisation, documented defaults and validity rules of a
// parallel training strategy (docs/strategy.md).
#include "strata/cost/strategy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/precision.hpp"
#include "strata/cost/strategy_keys.hpp"
#include "strategy_text.hpp"

namespace strata::cost {
namespace {
using core::InputError;
using detail::rule_error;
}  // namespace

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::gpipe: return "gpipe";
    case Schedule::one_f_one_b: return "1f1b";
    case Schedule::interleaved: return "interleaved";
    case Schedule::pipedream: return "pipedream";
    case Schedule::two_bw: return "2bw";
  }
  return "1f1b";
}

Schedule parse_schedule(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "gpipe") return Schedule::gpipe;
  if (t == "1f1b" || t == "pipedream-flush" || t == "pipedream_flush") return Schedule::one_f_one_b;
  if (t == "interleaved" || t == "interleaved-1f1b") return Schedule::interleaved;
  if (t == "pipedream" || t == "async") return Schedule::pipedream;
  if (t == "2bw" || t == "pipedream-2bw") return Schedule::two_bw;
  throw InputError(fmt::format("{}: unknown schedule '{}' (valid: gpipe, 1f1b, interleaved, pipedream, 2bw)", where,
                               text));
}

Strategy parse_strategy(std::string_view text, const std::string& where) {
  Strategy s;
  // 0 = not given: complete_strategy fills the documented default.
  s.dp = 0;
  s.tp = 0;
  s.pp = 0;
  s.global_batch = 0;
  s.virtual_stages = 0;
  KeyParseState state;  // what a later key or the end needs (schedule given, layers= before stages=)
  std::set<std::string> seen;
  std::size_t start = 0;
  const auto trimmed = [](std::string_view v) {
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\n' || v.back() == '\r'))
      v.remove_suffix(1);
    return v;
  };
  if (trimmed(text).empty()) throw InputError(fmt::format("{}: empty strategy (e.g. \"dp=2,tp=4,pp=2,gbs=64\")", where));
  while (start <= text.size()) {
    auto comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const auto item = trimmed(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) {
      if (comma == text.size()) break;
      throw InputError(fmt::format("{}: empty item between commas", where));
    }
    const auto eq = item.find('=');
    if (eq == std::string_view::npos)
      throw InputError(fmt::format("{}: '{}' is not key=value (valid keys: {})", where, item, strategy_key_list()));
    const std::string key = core::to_lower(trimmed(item.substr(0, eq)));
    const auto value = trimmed(item.substr(eq + 1));
    if (!seen.insert(key).second) throw InputError(fmt::format("{}: {}: given twice", where, key));
    const StrategyKey* row = find_strategy_key(key);
    if (!row) throw InputError(fmt::format("{}: unknown key '{}' (valid keys: {})", where, key, strategy_key_list()));
    row->parse(s, row->name, value, where, state);
    if (comma == text.size()) break;
  }
  if (!state.schedule_given && s.virtual_stages > 1) s.schedule = Schedule::interleaved;
  if (s.virtual_stages == 0) s.virtual_stages = 1;
  if (state.layer_groups) detail::attach_layer_groups(s.stages, std::move(*state.layer_groups), where);
  return s;
}

// The keys in table order; the uniform_only ones in the uniform form only (the per-stage form's stages hold them).
std::string to_cli_string(const Strategy& s) {
  const bool per_stage = !s.stages.empty();
  std::string out;
  for (const auto& k : strategy_keys()) {
    if (per_stage && k.uniform_only) continue;
    if (const auto value = k.text(s)) {
      if (!out.empty()) out += ',';
      out += fmt::format("{}={}", k.name, *value);
    }
  }
  return out;
}

namespace {
// The keys with a JSON field of their own, in JSON order (json_rank).
const std::vector<const StrategyKey*>& json_keys() {
  static const std::vector<const StrategyKey*> keys = [] {
    std::vector<const StrategyKey*> v;
    for (const auto& k : strategy_keys())
      if (!k.json_name.empty()) v.push_back(&k);
    std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) { return a->json_rank < b->json_rank; });
    return v;
  }();
  return keys;
}
}  // namespace

nlohmann::ordered_json to_json(const Strategy& s) {
  const bool per_stage = !s.stages.empty();  // per-stage form: no dp, tp, v, split, placement (the stages hold them)
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto* k : json_keys())
    if (!(per_stage && k->uniform_only)) k->write_json(s, j);
  return j;
}

Strategy strategy_from_json(const nlohmann::json& j, const std::string& origin) {
  const core::JsonWhere where{origin, ""};
  core::expect_object(j, where);
  std::set<std::string> known;
  for (const auto* k : json_keys()) known.emplace(k->json_name);
  for (const auto& [k, _] : j.items())
    if (!known.count(k))
      core::fail(where.field(k), fmt::format("unknown field (valid: {})",
                                             core::join(std::vector<std::string>(known.begin(), known.end()))));
  Strategy s;
  for (const auto* k : json_keys()) k->read_json(j, where, s);
  return s;
}

Strategy load_strategy_file(const std::string& path) {
  const auto j = core::load_json_file(path);
  if (j.is_object() && !j.contains("best") && j.contains("candidates"))
    throw core::InputError(path + ": best: missing (a plan file needs \"best\": {\"strategy\": ...} to be read back)");
  if (j.is_object() && j.contains("best")) {
    const core::JsonWhere w{path, ""};
    const auto& best = core::require_field(j, "best", w);
    const auto& st = core::require_field(best, "strategy", w.field("best"));
    return strategy_from_json(st, path + ": best.strategy");
  }
  if (j.is_object() && j.contains("strategy") && j["strategy"].is_object())
    return strategy_from_json(j["strategy"], path + ": strategy");
  return strategy_from_json(j, path);
}

std::vector<int> default_split(const model::Model& m, int num_chunks) {
  const int n_layers = static_cast<int>(m.layers.size());
  std::vector<int> split;
  if (num_chunks <= 0 || num_chunks > n_layers) return split;
  int prefix = 0, suffix = 0;
  while (prefix < n_layers && model::is_embedding(m.layers[prefix].kind)) ++prefix;
  while (suffix < n_layers - prefix && m.layers[n_layers - 1 - suffix].kind == model::LayerKind::lm_head) ++suffix;
  const int body = n_layers - prefix - suffix;
  if (body < num_chunks) {
    // Too few blocks to give every chunk one: spread the whole chain evenly (extra layers to the first chunks).
    split.assign(num_chunks, n_layers / num_chunks);
    for (int i = 0; i < n_layers % num_chunks; ++i) ++split[i];
    return split;
  }
  // Megatron: blocks spread evenly; embedding with the first chunk, head with the last. A remainder goes to
  // the middle chunks 1..r (the first chunk holds the most activations, the last one the head).
  split.assign(num_chunks, body / num_chunks);
  const int rem = body % num_chunks;
  for (int i = 0; i < rem; ++i) ++split[num_chunks == 1 ? 0 : 1 + (i % (num_chunks - 1))];
  split.front() += prefix;
  split.back() += suffix;
  return split;
}

std::vector<int> chunk_boundaries(const Strategy& s) {
  if (!s.stages.empty()) {
    std::vector<int> b(s.stages.size() + 1, 0);
    for (std::size_t i = 0; i < s.stages.size(); ++i) b[i + 1] = b[i] + s.stages[i].layers;
    return b;
  }
  std::vector<int> b(s.split.size() + 1, 0);
  for (std::size_t i = 0; i < s.split.size(); ++i) b[i + 1] = b[i] + s.split[i];
  return b;
}

namespace {
// The dtype the attention core runs in: the precision recipe's non-GEMM dtype (fp8 runs attention in bf16;
// fp32 and tf32 keep fp32 inputs, TF32 being a GEMM mode only).
bool attention_inputs_16bit(hw::Dtype dtype) {
  const hw::Dtype a = precision_recipe(dtype).non_gemm_dtype;
  return a == hw::Dtype::bf16 || a == hw::Dtype::fp16;
}
}  // namespace

std::string attention_unsupported(model::AttentionKernel kernel, const hw::GpuSpec& gpu, hw::Dtype dtype) {
  const auto name = model::to_string(kernel);
  if (!model::is_fused(kernel)) return {};
  // The memory-efficient kernel (cutlass) runs fp32, fp16 and bf16 inputs on every CUDA GPU strata knows (sm70+);
  // bf16 itself needs a bf16 GPU, which the dtype rule checks.
  if (kernel == model::AttentionKernel::efficient) return {};
  // The fused kernels (FlashAttention v1/v2, cuDNN's fused attention) need 16-bit tensor cores: Ampere or newer
  // (sm80+; FlashAttention 2 README "Ampere, Ada, or Hopper GPUs"), whose marker in the catalog is bf16 support.
  // V100 (sm70) and T4 (sm75) have none (FlashAttention 2 dropped Turing; strata does not model FA1-on-Turing).
  if (!gpu.supports(hw::Dtype::bf16))
    return fmt::format("attention={} but {} has no FlashAttention 2 kernel (fused attention needs an sm80+ GPU with "
                       "bf16 tensor cores; use attention=eager)",
                       name, gpu.name);
  // FlashAttention and cuDNN fused attention take fp16/bf16 (and fp8) inputs only; there is no fp32 kernel, so an
  // fp32/tf32 run's SDPA falls back to the math path, which stores the s² scores like eager attention.
  if (!attention_inputs_16bit(dtype))
    return fmt::format("attention={} but dtype={}: FlashAttention has no fp32 kernel (fused attention needs "
                       "fp16/bf16 inputs; use attention=eager or a 16-bit dtype)",
                       name, hw::to_string(dtype));
  return {};
}

model::AttentionKernel attention_kernel_for(const Strategy& s, const hw::GpuSpec& gpu) {
  if (s.attention) return *s.attention;
  // The default follows GPU × dtype: fused where a FlashAttention 2 kernel exists for both, eager (PyTorch SDPA's
  // math path, same memory) elsewhere.
  return attention_unsupported(model::AttentionKernel::flash, gpu, s.dtype).empty() ? model::AttentionKernel::flash
                                                                                     : model::AttentionKernel::eager;
}

namespace {
// The default placement (identity), or the rule that a given one is a permutation of the devices.
void complete_placement(Strategy& s, int devices) {
  if (s.placement.empty()) {
    s.placement.resize(devices);
    std::iota(s.placement.begin(), s.placement.end(), 0);
  } else {
    if (static_cast<int>(s.placement.size()) != devices)
      rule_error("placement is a permutation of the devices",
                 fmt::format("placement has {} entries, cluster has {} devices", s.placement.size(), devices));
    std::vector<char> used(devices, 0);
    for (int d : s.placement) {
      if (d < 0 || d >= devices)
        rule_error("placement is a permutation of the devices", fmt::format("device {} does not exist", d));
      if (used[d]) rule_error("placement is a permutation of the devices", fmt::format("device {} used twice", d));
      used[d] = 1;
    }
  }
}

// cp > 1: a sequence model whose sequence splits into 2·cp equal chunks (Megatron-core's load-balanced causal
// split: rank c holds chunks c and 2cp−1−c).
void check_context_parallel(const Strategy& s, const model::Model& m) {
  if (s.cp <= 1) return;
  if (m.seq <= 0)
    detail::field_rule_error("cp", "cp needs a sequence model", fmt::format("model {} has no sequence length", m.name));
  if (m.seq % (2 * static_cast<std::int64_t>(s.cp)) != 0)
    detail::field_rule_error("cp", "seq divisible by 2·cp",
                             fmt::format("seq {} is not divisible by 2·cp = {}", m.seq, 2 * s.cp));
}

// rlayers: one entry per stage, with recompute, at most the layers the stage holds over its chunks.
void check_recompute_layers(const Strategy& s) {
  const int chunks = s.pp * s.virtual_stages;
  if (!s.recompute_layers.empty()) {
    if (static_cast<int>(s.recompute_layers.size()) != s.pp)
      rule_error("rlayers has pp entries",
                 fmt::format("recompute_layers has {} entries, expected pp = {}", s.recompute_layers.size(), s.pp));
    if (s.recompute == model::Recompute::none)
      rule_error("rlayers needs recompute", "recompute_layers given with recompute=none");
    const auto b = chunk_boundaries(s);
    for (int st = 0; st < s.pp; ++st) {
      int held = 0;
      for (int ch = st; ch < chunks; ch += s.pp) held += b[ch + 1] - b[ch];
      if (s.recompute_layers[st] > held)
        rule_error("rlayers <= layers of the stage",
                   fmt::format("stage {} recomputes {} layers but holds {}", st, s.recompute_layers[st], held));
    }
  }
}
}  // namespace

namespace {
// The engines' memory knobs (lpweights, offload; issue 50 item 1) and the rules Megatron states for them.
void check_memory_knobs(const Strategy& s, const model::Model& m) {
  const bool low = s.dtype == hw::Dtype::fp8 || s.dtype == hw::Dtype::mxfp8 || s.dtype == hw::Dtype::fp4;
  if (s.low_precision_weights && !low)
    rule_error("lpweights=on needs dtype fp8, mxfp8 or fp4",
               fmt::format("dtype={} has no low-precision weights to keep", hw::to_string(s.dtype)));
  // Megatron: --fp8-param-gather needs the distributed optimizer or (Megatron/torch) FSDP (arguments.py:1095).
  if (s.low_precision_weights && s.zero_stage < 1)
    rule_error("lpweights=on needs zero >= 1", "the low-precision weights are gathered from the sharded optimizer's "
                                               "fp32 master (Megatron: --use-distributed-optimizer or FSDP)");
  if (s.activation_offload_layers <= 0) return;
  // Megatron-core transformer_config.py:1884-1899 @d98e8a64.
  const int blocks = static_cast<int>(std::count_if(m.layers.begin(), m.layers.end(),
                                                     [](const model::LayerSpec& l) { return model::is_attention_block(l.kind); }));
  if (s.activation_offload_layers >= blocks)
    rule_error("offload < the model's blocks",
               fmt::format("offload = {} but model {} has {} blocks", s.activation_offload_layers, m.name, blocks));
  if (s.pp > 1) rule_error("offload needs pp = 1", fmt::format("pp = {} (Megatron: no pipeline parallelism with CPU "
                                                               "offloading)", s.pp));
  if (s.recompute != model::Recompute::none)
    rule_error("offload needs recompute=none", "Megatron's CPU offloading does not work with activation "
                                               "recomputation");
}
}  // namespace

Strategy complete_strategy(Strategy s, const model::Model& m, const hw::Cluster& c) {
  if (!s.stages.empty()) {
    if (s.cp != 1) detail::field_rule_error("cp", "cp needs the uniform form", "context parallelism with stages= is not supported");
    return detail::complete_stage_strategy(std::move(s), m, c);
  }
  if (s.cp < 1) rule_error("cp >= 1", fmt::format("cp = {}", s.cp));
  check_context_parallel(s, m);
  complete_dims(s, c.num_devices(), c.name);  // the degrees' defaults and rules (cost/dims.cpp)
  const int n_layers = static_cast<int>(m.layers.size());
  if (n_layers <= 0) rule_error("model has layers", "the model has no layers");
  if (s.micro_batch < 1) rule_error("mbs >= 1", fmt::format("mbs = {}", s.micro_batch));
  if (s.global_batch < 1) rule_error("gbs given", "gbs (global batch size) is required, e.g. gbs=512");
  if (s.global_batch % (static_cast<std::int64_t>(s.dp) * s.micro_batch) != 0)
    rule_error("gbs divisible by dp·mbs", fmt::format("gbs {} is not divisible by dp·mbs = {}·{} = {}", s.global_batch,
                                                      s.dp, s.micro_batch, s.dp * s.micro_batch));
  if (const auto problem = model::tensor_parallel_problem(m, s.tp); !problem.empty())
    rule_error("tp divides heads", fmt::format("tp = {}: {}", s.tp, problem));
  if (s.virtual_stages < 1) rule_error("v >= 1", fmt::format("v = {}", s.virtual_stages));
  if (s.virtual_stages > 1 && s.schedule != Schedule::interleaved)
    rule_error("v > 1 needs schedule=interleaved",
               fmt::format("v = {} with schedule {}", s.virtual_stages, to_string(s.schedule)));
  const auto m_micro = s.num_micro_batches();
  if (s.schedule == Schedule::interleaved) {
    if (s.pp < 2) rule_error("interleaving needs pp >= 2", fmt::format("pp = {}", s.pp));
    if (m_micro % s.pp != 0)
      rule_error("interleaving needs m % pp == 0",
                 fmt::format("m = gbs/(dp·mbs) = {} micro-batches is not a multiple of pp = {}", m_micro, s.pp));
  }
  if (static_cast<std::int64_t>(s.pp) * s.virtual_stages > n_layers)
    rule_error("pp·v <= layers", fmt::format("pp·v = {}·{} = {} pipeline chunks but model {} has only {} layers", s.pp,
                                             s.virtual_stages, static_cast<std::int64_t>(s.pp) * s.virtual_stages,
                                             m.name, n_layers));
  const int chunks = s.pp * s.virtual_stages;
  if (s.split.empty()) {
    s.split = default_split(m, chunks);
  } else {
    if (static_cast<int>(s.split.size()) != chunks)
      rule_error("split has pp·v entries", fmt::format("split has {} entries, expected pp·v = {}", s.split.size(), chunks));
    std::int64_t sum = 0;
    for (int x : s.split) {
      if (x < 1) rule_error("split entries >= 1", "every pipeline chunk needs at least one layer");
      sum += x;
    }
    if (sum != n_layers)
      rule_error("split sums to the layer count",
                 fmt::format("split sums to {} but model {} has {} layers (embedding and head included)", sum, m.name,
                             n_layers));
  }
  complete_placement(s, c.num_devices());
  check_recompute_layers(s);
  if (s.fp8_separate_casts && s.dtype != hw::Dtype::fp8)
    rule_error("fp8cast=separate needs dtype=fp8", fmt::format("dtype={} has no fp8 casts", hw::to_string(s.dtype)));
  if (s.recompute_early_stop && s.recompute != model::Recompute::full)
    rule_error("earlystop=on needs recompute=full",
               fmt::format("early stop ends a full recompute early; recompute={} has none to end",
                           model::to_string(s.recompute)));
  // Oases (cost/overlap.hpp): two sub-batches of mbs/2 samples, and a TP collective to hide.
  if (s.tp_overlap && s.tp < 2) rule_error("overlap=on needs tp >= 2", "no TP collective to overlap at tp = 1");
  if (s.tp_overlap && s.micro_batch % 2 != 0)
    rule_error("overlap=on needs an even mbs", fmt::format("mbs = {} cannot be split into two sub-batches",
                                                           s.micro_batch));
  // Chunked collective matmul (cost/overlap.hpp): the sequence-parallel collectives are what it splits.
  if (s.tp_async && s.tp_overlap) rule_error("one overlap mode", "overlap=on and overlap=async exclude each other");
  if (s.tp_async && s.tp < 2) rule_error("overlap=async needs tp >= 2", "no TP collective to overlap at tp = 1");
  if (s.tp_async && !s.sequence_parallel)
    rule_error("overlap=async needs sp=on", "the chunked all-gather / reduce-scatter pairs exist only with sequence "
                                            "parallelism (Megatron: --tp-comm-overlap requires --sequence-parallel)");
  if (s.zero_stage < 0 || s.zero_stage > 3) rule_error("zero in 0..3", fmt::format("zero = {}", s.zero_stage));
  if (s.attention)
    for (const auto& g : c.gpu_types)
      if (const std::string why = attention_unsupported(*s.attention, g, s.dtype); !why.empty())
        rule_error("fused attention needs an sm80+ GPU and a 16-bit dtype", why);
  if (const std::string why = dtype_unsupported(s.dtype, c); !why.empty())
    rule_error("a block-scaled dtype needs GPUs that run it", why);
  check_memory_knobs(s, m);
  return s;
}

std::string dtype_unsupported(hw::Dtype dtype, const hw::Cluster& c) {
  if (dtype == hw::Dtype::fp6)
    return "dtype=fp6 is a catalog peak only: no engine strata exports to trains in FP6 (use mxfp8 or fp4)";
  if (!hw::needs_native_support(dtype)) return {};
  for (const auto& g : c.gpu_types) {
    if (g.supports(dtype)) continue;
    std::string with;
    for (const auto& h : hw::builtin_catalog().gpus)
      if (h.supports(dtype)) with += (with.empty() ? "" : ", ") + h.name;
    return fmt::format("dtype={} but {} has no {} tensor cores (block-scaled formats do not fall back; GPUs with "
                       "them: {}; use dtype=fp8 or bf16 here)",
                       hw::to_string(dtype), g.name, hw::to_string(dtype), with.empty() ? "none in the catalog" : with);
  }
  return {};
}

}  // namespace strata::cost
