// export/megatron_import: a Megatron-LM command line read back into a strategy and the model shape it implies.
// Defaults and rules follow ../shared/engines/megatron_args.json (d98e8a64): ffn default (rule ffn_default), GQA
// only with --group-query-attention (gqa_flag), even split needs layers % pp == 0 (even_pp_divisible), uneven
// first/last (uneven_first_last), the layout string (layout_syntax / layout_validation), recompute (recompute_full).
#include <fmt/format.h>

#include <map>
#include <set>

#include "internal.hpp"
#include "strata/core/error.hpp"

namespace strata::exporter {
namespace {

using detail::parse_int;

const std::set<std::string> kValueFlags = {
    "--num-layers", "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--num-query-groups",
    "--num-experts", "--moe-router-topk", "--seq-length", "--max-position-embeddings", "--position-embedding-type",
    "--normalization", "--hidden-dropout", "--attention-dropout", "--vocab-size", "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size", "--num-virtual-stages-per-pipeline-rank",
    "--num-layers-per-virtual-pipeline-stage", "--pipeline-model-parallel-layout",
    "--decoder-first-pipeline-num-layers", "--decoder-last-pipeline-num-layers", "--micro-batch-size",
    "--global-batch-size", "--recompute-granularity", "--recompute-method", "--recompute-num-layers",
    "--data-parallel-sharding-strategy", "--fp8-format", "--context-parallel-size", "--expert-model-parallel-size",
    "--fp8-recipe", "--fp4-format", "--fp4-recipe", "--cpu-offloading-num-layers"};
const std::set<std::string> kSwitches = {
    "--grad-reduce-in-bf16", "--fp8-param-gather", "--fp4-param-gather", "--group-query-attention", "--swiglu", "--untie-embeddings-and-output-weights", "--disable-bias-linear",
    "--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp", "--use-torch-fsdp2", "--bf16",
    "--fp16", "--recompute-activations", "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split", "--squared-relu", "--tp-comm-overlap"};

struct Flags {
  std::map<std::string, std::string> values;
  std::set<std::string> switches;
  std::string origin;
  bool has(const std::string& f) const { return values.count(f) || switches.count(f); }
  std::int64_t num(const std::string& f, std::int64_t fallback, std::int64_t min = 1) const {
    const auto it = values.find(f);
    return it == values.end() ? fallback : parse_int(it->second, origin, f, min);
  }
  std::string str(const std::string& f, std::string fallback = {}) const {
    const auto it = values.find(f);
    return it == values.end() ? fallback : it->second;
  }
  [[noreturn]] void fail(const std::string& flag, const std::string& problem) const {
    throw core::InputError(fmt::format("{}: {}: {}", origin, flag, problem));
  }
};

Flags read_flags(std::string_view args, const std::string& origin) {
  Flags f;
  f.origin = origin;
  const auto tokens = detail::shell_tokens(args);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    std::string flag = tokens[i];
    if (flag.rfind("--", 0) != 0) continue;  // launcher words, script names, values of skipped flags
    std::optional<std::string> value;
    if (const auto eq = flag.find('='); eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag.resize(eq);
    }
    const bool next_is_value = i + 1 < tokens.size() && tokens[i + 1].rfind("--", 0) != 0;
    if (kSwitches.count(flag)) {
      if (value) f.fail(flag, "takes no value");
      f.switches.insert(flag);
    } else if (kValueFlags.count(flag)) {
      if (!value) {
        if (!next_is_value) f.fail(flag, "needs a value");
        value = tokens[++i];
      }
      if (f.values.count(flag)) f.fail(flag, "given twice");
      f.values[flag] = *value;
    } else if (!value && next_is_value) {
      ++i;  // a flag that does not change the strategy (lr, data paths, torchrun's own...) and its value
    }
  }
  return f;
}

// Expands the layout string's repeats "x*n" and "(...)*n" (rule layout_syntax); ',' is cosmetic.
std::string expand_layout(std::string_view s, std::size_t& pos, const Flags& f, int depth) {
  if (depth > 8) f.fail("--pipeline-model-parallel-layout", "parentheses nested too deeply");
  std::string out;
  while (pos < s.size() && s[pos] != ')') {
    std::string piece;
    if (s[pos] == '(') {
      ++pos;
      piece = expand_layout(s, pos, f, depth + 1);
      if (pos >= s.size()) f.fail("--pipeline-model-parallel-layout", "unbalanced '('");
      ++pos;
    } else if (s[pos] == ',' || s[pos] == ' ') {
      ++pos;
      continue;
    } else {
      piece = std::string(1, s[pos++]);
    }
    if (pos < s.size() && s[pos] == '*') {
      std::size_t end = ++pos;
      while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
      const auto n = parse_int(s.substr(pos, end - pos), f.origin, "--pipeline-model-parallel-layout repeat", 0);
      if (n * static_cast<std::int64_t>(piece.size()) > 1000000) f.fail("--pipeline-model-parallel-layout", "too long");
      pos = end;
      std::string rep;
      for (std::int64_t k = 0; k < n; ++k) rep += piece;
      piece = rep;
    }
    out += piece;
  }
  return out;
}

// Blocks per chunk of a layout string (rule layout_validation): one E at the start, one L at the end.
std::vector<int> layout_blocks(const std::string& text, int layers, int pp, const Flags& f, int& v) {
  const std::string flag = "--pipeline-model-parallel-layout";
  std::size_t pos = 0;
  const std::string s = expand_layout(text, pos, f, 0);
  if (pos != text.size()) f.fail(flag, "unbalanced ')'");
  if (s.empty() || s.front() != 'E' || s.back() != 'L' || s.find('E', 1) != std::string::npos ||
      s.find('L') != s.size() - 1)
    f.fail(flag, "must start with one E (embedding) and end with one L (loss)");
  std::vector<int> blocks{0};
  for (std::size_t i = 1; i + 1 < s.size(); ++i) {
    if (s[i] == '|') blocks.push_back(0);
    else if (s[i] == 't') ++blocks.back();
    else f.fail(flag, fmt::format("layer '{}' is not modelled by strata (only E, t, L)", s[i]));
  }
  int total = 0;
  for (int b : blocks) total += b;
  if (total != layers) f.fail(flag, fmt::format("has {} t layers but --num-layers is {}", total, layers));
  if (static_cast<int>(blocks.size()) % pp != 0)
    f.fail(flag, fmt::format("{} stages are not divisible by pp = {}", blocks.size(), pp));
  v = static_cast<int>(blocks.size()) / pp;
  return blocks;
}

std::vector<int> split_of(const Flags& f, int layers, int pp, int& v) {
  const bool layout = f.has("--pipeline-model-parallel-layout");
  const int first = static_cast<int>(f.num("--decoder-first-pipeline-num-layers", 0));
  const int last = static_cast<int>(f.num("--decoder-last-pipeline-num-layers", 0));
  const int emb = f.has("--account-for-embedding-in-pipeline-split") ? 1 : 0;
  const int loss = f.has("--account-for-loss-in-pipeline-split") ? 1 : 0;
  if (layout) {
    if (first || last || emb || loss || f.has("--num-virtual-stages-per-pipeline-rank"))
      f.fail("--pipeline-model-parallel-layout", "excludes first/last-stage layers, account-for flags and vpp");
    return detail::split_from_blocks(layout_blocks(f.str("--pipeline-model-parallel-layout"), layers, pp, f, v));
  }
  if (first || last) {
    if (emb || loss) f.fail("--decoder-first-pipeline-num-layers", "excludes --account-for-*-in-pipeline-split");
    auto blocks = detail::megatron_stage_blocks(layers, pp, v, first, last);
    if (blocks.empty())
      f.fail("--decoder-first-pipeline-num-layers",
             fmt::format("first {} / last {} of {} layers break Megatron's uneven-split rule (pp {}, vpp {})", first,
                         last, layers, pp, v));
    return detail::split_from_blocks(blocks);
  }
  const int slots = layers + emb + loss, chunks = pp * v;
  if (slots % chunks != 0)
    f.fail("--num-layers", fmt::format("{} layers{} are not divisible by pp·vpp = {} (Megatron's even split)", layers,
                                       emb + loss ? " (+ embedding/loss)" : "", chunks));
  if (!emb && !loss) return {};  // Megatron's even split = strata's default split
  std::vector<int> blocks(static_cast<std::size_t>(chunks), slots / chunks);
  blocks.front() -= emb;
  blocks.back() -= loss;
  return detail::split_from_blocks(blocks);
}

std::optional<model::TransformerConfig> shape_of(const Flags& f) {
  if (!f.has("--num-layers") || !f.has("--hidden-size") || !f.has("--num-attention-heads")) return std::nullopt;
  if (f.has("--squared-relu")) f.fail("--squared-relu", "squared ReLU is not a strata activation");
  model::TransformerConfig c;
  c.name = "megatron-import";
  c.layers = f.num("--num-layers", 0);
  c.hidden = f.num("--hidden-size", 0);
  c.heads = f.num("--num-attention-heads", 0);
  c.kv_heads = f.has("--group-query-attention") ? f.num("--num-query-groups", 1) : 0;
  if (c.kv_heads == c.heads) c.kv_heads = 0;
  c.activation = f.has("--swiglu") ? model::Activation::swiglu : model::Activation::gelu;
  // rule ffn_default: SwiGLU int((4h·2/3)/64)·64, else 4h.
  c.ffn = f.num("--ffn-hidden-size", f.has("--swiglu") ? (4 * c.hidden * 2 / 3) / 64 * 64 : 4 * c.hidden);
  c.vocab = f.num("--vocab-size", 0, 0);
  c.seq = f.num("--seq-length", f.num("--max-position-embeddings", 0));
  const std::string norm = f.str("--normalization", "LayerNorm");
  if (norm != "LayerNorm" && norm != "RMSNorm") f.fail("--normalization", "expected LayerNorm or RMSNorm");
  c.norm = norm == "RMSNorm" ? model::Norm::rmsnorm : model::Norm::layernorm;
  c.tied_embeddings = !f.has("--untie-embeddings-and-output-weights");
  c.learned_positions = f.str("--position-embedding-type", "learned_absolute") == "learned_absolute";
  c.bias = !f.has("--disable-bias-linear");
  c.dropout = f.str("--hidden-dropout", "0.1") != "0" || f.str("--attention-dropout", "0.1") != "0";
  c.experts = f.num("--num-experts", 0, 0);
  c.top_k = c.experts > 0 ? f.num("--moe-router-topk", 2) : 0;
  return c;
}

void recompute_of(const Flags& f, cost::Strategy& s) {
  std::string g = f.str("--recompute-granularity");
  if (g.empty() && f.has("--recompute-activations")) g = "selective";  // rule recompute_activations_alias
  if (g.empty()) {
    if (f.has("--recompute-method")) f.fail("--recompute-method", "needs --recompute-granularity full");
    return;
  }
  if (g == "selective") {
    if (f.has("--recompute-method")) f.fail("--recompute-method", "not allowed with selective granularity");
    s.recompute = model::Recompute::selective;
    return;
  }
  if (g != "full") f.fail("--recompute-granularity", fmt::format("expected full or selective, got '{}'", g));
  s.recompute = model::Recompute::full;
  const std::string method = f.str("--recompute-method");
  const auto n = f.num("--recompute-num-layers", -1, 1);
  if (method.empty() || n < 0) f.fail("--recompute-granularity", "full needs --recompute-method and --recompute-num-layers");
  if (method == "block") {
    s.recompute_layers.assign(static_cast<std::size_t>(s.pp), static_cast<int>(n));
  } else if (method != "uniform" || n != 1) {
    f.fail("--recompute-method", method == "uniform" ? "uniform groups of > 1 layer are not modelled (use 1)"
                                                     : "expected uniform or block");
  }
}

}  // namespace

Imported import_megatron_args(std::string_view args, const std::string& origin) {
  const Flags f = read_flags(args, origin);
  if (f.num("--expert-model-parallel-size", 1) != 1)
    f.fail("--expert-model-parallel-size", "expert parallelism is not modelled");
  if (f.has("--fp16") && f.has("--bf16")) f.fail("--fp16", "excludes --bf16 (rule fp16_bf16_exclusive)");
  Imported im;
  im.engine = Engine::megatron;
  cost::Strategy& s = im.strategy;
  s.dp = 0;  // Megatron derives it: world / (tp·pp·cp)
  s.tp = static_cast<int>(f.num("--tensor-model-parallel-size", 1));
  s.pp = static_cast<int>(f.num("--pipeline-model-parallel-size", 1));
  s.cp = static_cast<int>(f.num("--context-parallel-size", 1));  // ring attention; dp = world / (tp·pp·cp)
  if (!f.has("--micro-batch-size")) f.fail("--micro-batch-size", "required (rule micro_batch_required)");
  s.micro_batch = f.num("--micro-batch-size", 1);
  s.global_batch = f.num("--global-batch-size", 0);
  if (s.global_batch == 0) f.fail("--global-batch-size", "needed (Megatron's default mbs·dp depends on the world size)");
  im.shape = shape_of(f);
  if (f.num("--num-layers", 1) > model::kMaxModelLayers)
    f.fail("--num-layers", fmt::format("must be <= {}", model::kMaxModelLayers));
  if (s.tp > hw::kMaxClusterDevices || s.pp > hw::kMaxClusterDevices || s.cp > hw::kMaxClusterDevices)
    f.fail("--pipeline-model-parallel-size", "tp, pp or cp larger than any cluster strata accepts");
  const int layers = im.shape ? static_cast<int>(im.shape->layers) : static_cast<int>(f.num("--num-layers", 0));
  if (f.num("--num-virtual-stages-per-pipeline-rank", 1) > model::kMaxModelLayers)
    f.fail("--num-virtual-stages-per-pipeline-rank", "more virtual stages than any model has layers");
  s.virtual_stages = static_cast<int>(f.num("--num-virtual-stages-per-pipeline-rank", 1));
  if (f.has("--num-layers-per-virtual-pipeline-stage")) {
    const auto n = f.num("--num-layers-per-virtual-pipeline-stage", 1);
    if (layers < 1 || layers % s.pp != 0 || (layers / s.pp) % n != 0)
      f.fail("--num-layers-per-virtual-pipeline-stage", "layers per stage not divisible (rule nlpvs_divisible)");
    s.virtual_stages = static_cast<int>(layers / s.pp / n);
  }
  if (layers < 1 && (s.pp > 1 || s.virtual_stages > 1)) f.fail("--num-layers", "required to read the pipeline split");
  if (static_cast<std::int64_t>(s.pp) * s.virtual_stages > layers + 2 && layers >= 1)
    f.fail("--pipeline-model-parallel-size", "more pipeline chunks (pp·vpp) than layers");
  if (layers >= 1) s.split = split_of(f, layers, s.pp, s.virtual_stages);
  s.schedule = s.virtual_stages > 1 ? cost::Schedule::interleaved : cost::Schedule::one_f_one_b;
  s.sequence_parallel = f.has("--sequence-parallel");
  if (f.has("--tp-comm-overlap")) {
    if (!s.sequence_parallel) f.fail("--tp-comm-overlap", "requires --sequence-parallel (rule tp_comm_overlap_sp)");
    s.tp_async = s.tp > 1;  // the chunked collective matmul (overlap=async)
  }
  recompute_of(f, s);
  if (f.has("--use-megatron-fsdp")) {
    const std::string st = f.str("--data-parallel-sharding-strategy", "optim_grads_params");
    const std::map<std::string, int> stages = {{"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
    if (!stages.count(st)) f.fail("--data-parallel-sharding-strategy", fmt::format("unknown value '{}'", st));
    s.zero_stage = stages.at(st);
  } else if (f.has("--use-torch-fsdp2")) {
    s.zero_stage = 3;
  } else if (f.has("--use-distributed-optimizer")) {
    s.zero_stage = 1;
  }
  s.grad_buffer_bf16 = f.has("--grad-reduce-in-bf16");
  s.low_precision_weights = f.has("--fp8-param-gather") || f.has("--fp4-param-gather");
  s.activation_offload_layers = static_cast<int>(f.num("--cpu-offloading-num-layers", 0, 0));
  s.dtype = f.has("--fp4-format")                                     ? hw::Dtype::fp4
            : f.has("--fp8-format") && f.str("--fp8-recipe") == "mxfp8" ? hw::Dtype::mxfp8
            : f.has("--fp8-format")                                     ? hw::Dtype::fp8
            : f.has("--bf16")     ? hw::Dtype::bf16
            : f.has("--fp16")     ? hw::Dtype::fp16
                                  : hw::Dtype::fp32;
  return im;
}

}  // namespace strata::exporter
