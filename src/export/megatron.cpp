// export/megatron: a strategy as Megatron-LM `pretrain_gpt.py` arguments (names and rules: ../shared/engines/
// megatron_args.json at d98e8a64). dp is not an option there (world / (tp·pp·cp)); uneven splits go through
// --decoder-first/last-pipeline-num-layers when the split has that form, else --pipeline-model-parallel-layout
// (E = embedding, t = block, L = loss/head; stages vpp-chunk-major, which is strata's chunk order).
#include <fmt/format.h>

#include <algorithm>

#include "internal.hpp"
#include "strata/core/text.hpp"

namespace strata::exporter::detail {
namespace {

bool all_equal(const std::vector<int>& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); }

// The first/last-stage form of a split: {first, last} blocks of stage 0 / pp−1, or {-1, -1} when the split is
// not of that form (or is Megatron's even default, {0, 0}).
std::pair<int, int> first_last_form(const cost::Strategy& s, int layers) {
  const auto blocks = blocks_per_chunk(s);
  if (all_equal(blocks)) return {0, 0};
  const int v = s.virtual_stages, pp = s.pp;
  const int first = blocks[0] * v, last = blocks[pp - 1] * v;
  if (first < 1 || last < 1 || pp < 2) return {-1, -1};
  if (megatron_stage_blocks(layers, pp, v, first, last) == blocks) return {first, last};
  return {-1, -1};
}

std::string layout_string(const cost::Strategy& s) {
  const auto blocks = blocks_per_chunk(s);
  std::string out = "E";
  for (std::size_t c = 0; c < blocks.size(); ++c) {
    if (c > 0) out += "|";
    out += std::string(static_cast<std::size_t>(blocks[c]), 't');
  }
  return out + "L";
}

void add(std::vector<std::string>& a, std::string flag, std::string value = {}) {
  a.push_back(std::move(flag));
  if (!value.empty()) a.push_back(std::move(value));
}

void add_shape(std::vector<std::string>& a, const model::TransformerConfig& cfg) {
  add(a, "--num-layers", std::to_string(cfg.layers));
  add(a, "--hidden-size", std::to_string(cfg.hidden));
  add(a, "--ffn-hidden-size", std::to_string(cfg.ffn));
  add(a, "--num-attention-heads", std::to_string(cfg.heads));
  if (cfg.kv_heads != 0) {
    add(a, "--group-query-attention");
    add(a, "--num-query-groups", std::to_string(cfg.kv_heads));
  }
  if (cfg.experts > 0) {
    add(a, "--num-experts", std::to_string(cfg.experts));
    add(a, "--moe-router-topk", std::to_string(cfg.top_k));
  }
  add(a, "--seq-length", std::to_string(cfg.seq));
  add(a, "--max-position-embeddings", std::to_string(cfg.seq));
  add(a, "--position-embedding-type", cfg.learned_positions ? "learned_absolute" : "rope");
  add(a, "--normalization", cfg.norm == model::Norm::rmsnorm ? "RMSNorm" : "LayerNorm");
  if (cfg.activation == model::Activation::swiglu) add(a, "--swiglu");
  if (!cfg.tied_embeddings) add(a, "--untie-embeddings-and-output-weights");
  if (!cfg.bias) add(a, "--disable-bias-linear");
  if (!cfg.dropout) {
    add(a, "--hidden-dropout", "0");
    add(a, "--attention-dropout", "0");
  }
  add(a, "--vocab-size", std::to_string(cfg.vocab));
}

void add_recompute(std::vector<std::string>& a, const cost::Strategy& s) {
  if (s.recompute == model::Recompute::selective) {
    add(a, "--recompute-granularity", "selective");
  } else if (s.recompute == model::Recompute::full) {
    add(a, "--recompute-granularity", "full");
    if (s.recompute_layers.empty()) {
      // uniform with 1 layer per group = every layer's input checkpointed, each recomputed on its own.
      add(a, "--recompute-method", "uniform");
      add(a, "--recompute-num-layers", "1");
    } else {
      add(a, "--recompute-method", "block");  // the first N layers of each stage
      add(a, "--recompute-num-layers", std::to_string(s.recompute_layers.front()));
    }
  }
}

}  // namespace

std::string megatron_problem(const model::Model& m, const cost::Strategy& s) {
  std::string why;
  const auto shape = transformer_shape(m, &why);
  if (!shape) return "model: " + why + " (pretrain_gpt.py trains decoder-only transformers)";
  if (shape->activation == model::Activation::relu) return "ReLU MLP activation (Megatron has GELU, SwiGLU, squared ReLU)";
  if (shape->norm == model::Norm::none) return "blocks without normalization (Megatron: LayerNorm or RMSNorm)";
  if (s.schedule == cost::Schedule::gpipe) return "the gpipe schedule (Megatron runs 1F1B or interleaved 1F1B)";
  if (s.eager_elementwise)
    return "elementwise=eager (Megatron-core's TransformerEngine layers fuse the norms, RoPE and SwiGLU)";
  if (s.fp8_separate_casts)
    return "fp8cast=separate (Megatron's fp8 runs TransformerEngine's fused cast kernels)";
  if (s.recompute_early_stop)
    return "earlystop=on (Megatron's full recompute re-runs each checkpointed block's whole forward)";
  if (s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw)
    return fmt::format("the asynchronous {} schedule (Megatron's schedules are synchronous)", cost::to_string(s.schedule));
  if (s.schedule == cost::Schedule::interleaved && s.virtual_stages < 2)
    return "the interleaved schedule with v = 1 (Megatron interleaves only with virtual stages)";
  if (s.dtype == hw::Dtype::tf32) return "the tf32 compute dtype (Megatron: fp32, --fp16, --bf16, --fp8-format)";
  if (!s.recompute_layers.empty()) {
    if (s.recompute != model::Recompute::full)
      return "per-stage rlayers with selective recompute (--recompute-method needs --recompute-granularity full)";
    if (s.virtual_stages > 1) return "per-stage rlayers with virtual stages (--recompute-num-layers counts per chunk)";
    if (!all_equal(s.recompute_layers))
      return "per-stage rlayers that differ between stages (--recompute-num-layers is one number)";
    if (s.recompute_layers.front() < 1) return "rlayers = 0 (--recompute-num-layers must be >= 1)";
  }
  return "";
}

void megatron_closest(const model::Model& m, cost::Strategy& s) {
  (void)m;
  s.eager_elementwise = false;  // Megatron's fused kernels
  s.recompute_early_stop = false;  // its full recompute re-runs the whole forward
  s.fp8_separate_casts = false;    // TransformerEngine's fused casts
  if (s.schedule != cost::Schedule::interleaved || s.virtual_stages < 2) {
    s.schedule = cost::Schedule::one_f_one_b;
    s.virtual_stages = 1;
  }
  if (s.dtype == hw::Dtype::tf32) s.dtype = hw::Dtype::fp32;
  if (!s.recompute_layers.empty()) {
    const int most = *std::max_element(s.recompute_layers.begin(), s.recompute_layers.end());
    const auto blocks = blocks_per_chunk(s);  // v = 1 here: one chunk per stage
    const bool fits_everywhere = std::all_of(blocks.begin(), blocks.end(), [&](int b) { return b >= most; });
    // Recompute at least as much everywhere: the largest count on every stage, or every layer.
    if (s.recompute != model::Recompute::full || s.virtual_stages > 1 || most < 1 || !fits_everywhere ||
        blocks.size() != s.recompute_layers.size())
      s.recompute_layers.clear();
    else
      s.recompute_layers.assign(s.recompute_layers.size(), most);
  }
}

std::vector<std::string> megatron_arg_list(const model::Model& m, const cost::Strategy& s) {
  std::vector<std::string> a;
  add_shape(a, *transformer_shape(m));
  add(a, "--tensor-model-parallel-size", std::to_string(s.tp));
  add(a, "--pipeline-model-parallel-size", std::to_string(s.pp));
  // Ring attention over cp ranks (Megatron-core's context parallelism; seq % 2·cp == 0 is checked by
  // cost::complete_strategy, as validate_args does at arguments.py:1335). dp = world / (tp·pp·cp).
  if (s.cp > 1) add(a, "--context-parallel-size", std::to_string(s.cp));
  const int layers = static_cast<int>(m.layers.size()) - 2;
  const auto [first, last] = first_last_form(s, layers);
  if (first < 0) {
    add(a, "--pipeline-model-parallel-layout", layout_string(s));  // sets vpp = stages / pp itself
  } else {
    if (s.virtual_stages > 1) add(a, "--num-virtual-stages-per-pipeline-rank", std::to_string(s.virtual_stages));
    if (first > 0) {
      add(a, "--decoder-first-pipeline-num-layers", std::to_string(first));
      add(a, "--decoder-last-pipeline-num-layers", std::to_string(last));
    }
  }
  if (s.sequence_parallel) add(a, "--sequence-parallel");
  // overlap=async: TransformerEngine's userbuffers overlap of the sp all-gathers / reduce-scatters with the GEMMs
  // (requires --sequence-parallel, rule tp_comm_overlap_sp).
  if (s.tp_async) add(a, "--tp-comm-overlap");
  add(a, "--micro-batch-size", std::to_string(s.micro_batch));
  add(a, "--global-batch-size", std::to_string(s.global_batch));
  add_recompute(a, s);
  if (s.zero_stage == 1) add(a, "--use-distributed-optimizer");
  if (s.zero_stage >= 2) {
    add(a, "--use-megatron-fsdp");
    add(a, "--data-parallel-sharding-strategy", s.zero_stage == 2 ? "optim_grads" : "optim_grads_params");
    add(a, "--ckpt-format", "fsdp_dtensor");  // Megatron-FSDP requires it (rule megatron_fsdp)
  }
  const bool low = s.dtype == hw::Dtype::fp8 || s.dtype == hw::Dtype::mxfp8 || s.dtype == hw::Dtype::fp4;
  if (s.dtype == hw::Dtype::bf16 || low) add(a, "--bf16");  // the non-GEMM work and the weights stay bf16
  if (s.dtype == hw::Dtype::fp16) add(a, "--fp16");
  if (s.dtype == hw::Dtype::fp8) add(a, "--fp8-format", "hybrid");
  // MXFP8: E4M3 elements in forward and backward with TransformerEngine's MXFP8BlockScaling (Megatron's
  // --fp8-recipe choices, shared/engines/megatron_args.json); NVFP4: --fp4-format e2m1 --fp4-recipe nvfp4.
  if (s.dtype == hw::Dtype::mxfp8) {
    add(a, "--fp8-format", "e4m3");
    add(a, "--fp8-recipe", "mxfp8");
  }
  if (s.dtype == hw::Dtype::fp4) {
    add(a, "--fp4-format", "e2m1");
    add(a, "--fp4-recipe", "nvfp4");
  }
  // The memory knobs (docs/strategy.md): bf16 gradient buffer, low-precision weights, CPU activation offloading.
  if (s.grad_buffer_bf16) add(a, "--grad-reduce-in-bf16");
  if (s.low_precision_weights) add(a, s.dtype == hw::Dtype::fp4 ? "--fp4-param-gather" : "--fp8-param-gather");
  if (s.activation_offload_layers > 0)
    add(a, "--cpu-offloading-num-layers", std::to_string(s.activation_offload_layers));
  // The cost model overlaps the data-parallel gradient buckets with the backward pass (cost/stage.cpp).
  if (s.dp > 1) add(a, "--overlap-grad-reduce");
  return a;
}

std::string megatron_args_text(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  const auto a = megatron_arg_list(m, s);
  std::string out = fmt::format(
      "# strata export: Megatron-LM pretrain_gpt.py arguments for {} on {} ({} GPUs; dp = {} is derived by\n"
      "# Megatron as world / (tp·pp·cp)). Append your data, tokenizer and optimizer flags.\n# strategy: {}\n",
      m.name, c.name, c.num_devices(), s.dp, cost::to_cli_string(s));
  if (const auto conn = cuda_device_max_connections(s))
    out += fmt::format("# Launch with CUDA_DEVICE_MAX_CONNECTIONS={} (Megatron validate_args: tp or cp > 1 without FSDP).\n", *conn);
  else if (s.zero_stage >= 2)
    out += "# Launch with CUDA_DEVICE_MAX_CONNECTIONS unset or > 1 (Megatron-FSDP asserts it is not 1).\n";
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool has_value = i + 1 < a.size() && a[i + 1].rfind("--", 0) != 0;
    // Quote values the shell would split or interpret (the layout's '|').
    const bool quote = has_value && a[i + 1].find_first_of("|*()") != std::string::npos;
    out += has_value ? a[i] + " " + (quote ? "'" + a[i + 1] + "'" : a[i + 1]) : a[i];
    if (has_value) ++i;
    out += i + 1 < a.size() ? " \\\n" : "\n";
  }
  return out;
}

}  // namespace strata::exporter::detail
