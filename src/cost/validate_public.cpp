// cost/validate_public: predicted vs published throughput of the public training rows
// (data/calibration/public_training_rows.json: llm-foundry, Megatron-Bridge, NeMo long-sequence, torchtitan), each
// row expressed as a strata model, cluster and strategy. The mapping of each source's settings is documented in
// docs/cost-model.md §Validation.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "validate_internal.hpp"

namespace strata::cost::detail {
namespace {

constexpr const char* kPublic = "calibration/public_training_rows.json";

template <typename T>
T value_or(const core::Json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<T>();
}

model::Model row_model(const core::Json& shapes, const std::string& key, std::int64_t seq) {
  const auto& sh = shapes.at(key);
  model::TransformerConfig cfg;
  cfg.name = key;
  cfg.layers = sh.at("layers").get<std::int64_t>();
  cfg.hidden = sh.at("hidden").get<std::int64_t>();
  cfg.heads = sh.at("heads").get<std::int64_t>();
  cfg.kv_heads = value_or<std::int64_t>(sh, "kv_heads", 0);
  cfg.ffn = sh.at("ffn_hidden").get<std::int64_t>();
  cfg.vocab = sh.at("vocab").get<std::int64_t>();
  cfg.seq = seq;
  const std::string act = core::to_lower(value_or<std::string>(sh, "activation", "gelu"));
  cfg.activation = act == "swiglu" ? model::Activation::swiglu : act == "gelu" ? model::Activation::gelu
                                                                               : model::Activation::relu;
  const bool mpt = key.rfind("mpt", 0) == 0;
  cfg.norm = mpt ? model::Norm::layernorm : model::Norm::rmsnorm;  // MPT LayerNorm; Llama RMSNorm
  cfg.tied_embeddings = value_or<bool>(sh, "tied_embeddings", false);
  cfg.learned_positions = mpt;  // the file's caveat: MPT benchmark parameter counts grow with seq; Llama: RoPE
  cfg.bias = false;             // MPT no_bias, Llama without biases
  cfg.dropout = false;          // pre-training without dropout in all four stacks
  return model::build_transformer(cfg, std::string("data/") + kPublic);
}

// Nodes of 8 GPUs (fewer when the run used fewer): DGX H100 for the NVIDIA rows and llm-foundry H100 rows;
// llm-foundry A100 rows: 8 × 200 Gb/s RoCE per node (as the MosaicML set); torchtitan: Grand Teton H100 96 GB
// HBM2e at 500 W — peak taken midway between H100 SXM and NVL (the file's footnote), HBM2e 3.35 TB/s assumed.
hw::Cluster row_cluster(const std::string& gpu_type, int gpus, const hw::Catalog& base) {
  hw::Catalog catalog = base;
  hw::NodeSpec node = catalog.node("dgx-h100");
  if (gpu_type.find("A100") != std::string::npos) {
    node = catalog.node("dgx-a100");
    node.gpu = gpu_type.find("40GB") != std::string::npos ? "a100-40gb" : "a100-80gb";
  } else if (gpu_type.find("96GB") != std::string::npos) {
    hw::GpuSpec g = catalog.gpu("h100-sxm");
    g.name = "h100-sxm-96gb-500w";  // an H100 SXM variant: the h100-sxm efficiency applies
    g.memory_bytes = 96.0 * (1ull << 30);
    g.memory_bw_bytes_per_s = 3.35e12;
    for (auto& [d, peak] : g.peak_flops) peak *= (989.4 + 835.0) / 2 / 989.4;  // SXM 989.4, NVL 835 TFLOP/s bf16
    catalog.gpus.push_back(g);
    node.gpu = g.name;
  }
  node.name = node.name + "-row";
  node.gpus = std::min(node.gpus, gpus);
  hw::Cluster c;
  c.name = fmt::format("{}:{}", node.name, gpus / node.gpus);
  hw::add_nodes(c, node, gpus / node.gpus, catalog);
  return c;
}

// A row measured with asynchronous (overlapped) tensor parallelism: torchtitan's "async TP" variant.
bool is_async_tp(const core::Json& row) {
  return row.at("source").value("variant", std::string()) == "async TP";
}

}  // namespace

// The fused attention kernel of each source's stack (docs/cost-model.md §Attention kernel):
//  - llm-foundry: the benchmark image mosaicml/pytorch:2.0.1_cu118 with MPT's attn_impl flash, i.e. the
//    flash-attn 1.x package (FlashAttention v1; llm-foundry scripts/train/benchmarking/sweep.sh, submit_benchmarks.py);
//  - Megatron-Bridge and NeMo: TransformerEngine, which runs cuDNN fused attention on H100 (Hopper-native);
//  - torchtitan: PyTorch SDPA's flash backend (FlashAttention-2).
model::AttentionKernel attention_of_source(const std::string& source) {
  if (source.rfind("llm-foundry", 0) == 0 || source == "mosaicml") return model::AttentionKernel::flash1;
  if (source.rfind("megatron-bridge", 0) == 0 || source.rfind("nemo", 0) == 0) return model::AttentionKernel::cudnn;
  return model::AttentionKernel::flash;
}

namespace {

Strategy row_strategy(const core::Json& row, const std::string& source) {
  Strategy s;
  s.tp = row.at("tp").get<int>();
  s.pp = row.at("pp").get<int>();
  s.cp = value_or<int>(row, "cp", 1);  // context parallelism (ring attention, Megatron-core / TransformerEngine)
  s.dp = row.at("gpus").get<int>() / (s.tp * s.pp * s.cp);
  s.micro_batch = value_or<std::int64_t>(row, "mbs", 1);
  s.global_batch = row.at("gbs").get<std::int64_t>();
  const int vp = value_or<int>(row, "vp", 1);
  if (vp > 1) {
    s.virtual_stages = vp;
    s.schedule = Schedule::interleaved;
  }
  const int fsdp = value_or<int>(row, "fsdp", 0);
  const std::string sharding = value_or<std::string>(row, "sharding_strategy", "FULL_SHARD");
  if (source == "llm-foundry") s.zero_stage = sharding == "SHARD_GRAD_OP" ? 2 : 3;
  else if (fsdp > 0) s.zero_stage = 3;                  // torchtitan FSDP2, Megatron-FSDP
  else s.zero_stage = 1;                                // Megatron distributed optimizer (NeMo/Bridge default)
  const std::string ac = value_or<std::string>(row, "activation_checkpointing", "none");
  // torchtitan's "selective (per-op SAC)" is its per-op policy (recompute=op), not Megatron's selective.
  s.recompute = ac == "full"                            ? model::Recompute::full
                : ac.find("per-op") != std::string::npos ? model::Recompute::op
                : ac.rfind("selective", 0) == 0 ? model::Recompute::selective : model::Recompute::none;
  // Early stop (Strategy::recompute_early_stop): PyTorch's non-reentrant checkpoint — llm-foundry's benchmark
  // runs set fsdp_config.activation_checkpointing_reentrant = False (scripts/train/benchmarking/
  // submit_benchmarks.py) and torchtitan wraps blocks with checkpoint_wrapper's NO_REENTRANT default under
  // torch.compile. Megatron-core's full recompute (NeMo, Megatron-Bridge) re-runs the whole forward.
  s.recompute_early_stop =
      s.recompute == model::Recompute::full && (source.rfind("llm-foundry", 0) == 0 || source.rfind("torchtitan", 0) == 0);
  s.sequence_parallel = s.tp > 1;
  // Chunked collective matmul (overlap=async, cost/overlap.hpp): torchtitan's "async TP" rows, and every
  // Megatron-Bridge row with tp > 1, whose H100 perf recipes switch TransformerEngine's userbuffers TP overlap
  // on (Megatron-Bridge scripts/performance: comm_overlap.tp_comm_overlap with userbuffers_{bf16,fp8}_h100_
  // h8192_tp4_mbs1_seqlen8192 for Llama 3 70B and _h16384_tp8_cp2_mbs1_seqlen8192 for Llama 3.1 405B).
  s.tp_async = s.sequence_parallel && (is_async_tp(row) || source.rfind("megatron-bridge", 0) == 0);
  s.dtype = hw::parse_dtype(row.at("precision").get<std::string>(), "precision");
  // torchtitan's fp8 rows run torchao float8 tensorwise (dynamic) scaling: separate amax and cast kernels per GEMM
  // operand (Strategy::fp8_separate_casts). The other stacks' fp8 is TransformerEngine's (fused casts).
  s.fp8_separate_casts = s.dtype == hw::Dtype::fp8 && source.rfind("torchtitan", 0) == 0;
  // Eager element-wise kernels: llm-foundry (MPT in eager PyTorch, no torch.compile in its benchmark YAMLs).
  // torchtitan's rows ran with torch.compile (their `torch_compile`: true) and NVIDIA's stacks use
  // TransformerEngine's fused kernels: fused.
  s.eager_elementwise = source == "llm-foundry" && !value_or<bool>(row, "torch_compile", false);
  s.attention = attention_of_source(source);
  return s;
}

}  // namespace

double pct_error(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

void public_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                 std::vector<SkippedRow>& skipped, const std::string& only_dtype, const std::string& gpu_contains,
                 std::vector<ValidationRow>* async_tp_speedups, const std::string& source_only) {
  std::optional<ValidationRow> vanilla;  // the "vanilla TP" row just before an "async TP" row (the file's pairs)
  const auto data = core::embedded_json(kPublic);
  CostOptions opt;
  opt.constants = &k;
  for (const auto& row : data.at("rows")) {
    if (!only_dtype.empty() && row.at("precision").get<std::string>() != only_dtype) continue;
    if (row.at("gpu_type").get<std::string>().find(gpu_contains) == std::string::npos) continue;
    if (!source_only.empty() && row.at("source").at("name").get<std::string>() != source_only) continue;
    const bool async_tp = is_async_tp(row);
    // Async-TP rows form a dataset of their own (reported separately, `strata validate`).
    const std::string source = row.at("source").at("name").get<std::string>() + (async_tp ? " async-TP" : "");
    const std::string key = row.at("model_key").get<std::string>();
    const int gpus = row.at("gpus").get<int>();
    const auto seq = value_or<std::int64_t>(row, "seq_len", value_or<std::int64_t>(row, "seq_len_assumed", 0));
    const std::string name =
        fmt::format("{} {} {}x{} {} {}", value_or<std::string>(row, "id", "?"), key, gpus,
                    row.at("gpu_type").get<std::string>().substr(0, 9), row.at("precision").get<std::string>(),
                    value_or<std::string>(row, "activation_checkpointing", "-"));
    if (row.at("tp").is_null() || row.at("pp").is_null()) {
      skipped.push_back({source, name, "parallel configuration not published"});
      continue;
    }
    // torchao's rowwise-scaled fp8 GEMMs (a different kernel, slower than bf16 in these rows) are not a strata
    // precision recipe: strata's fp8 is per-tensor (tensorwise, current or delayed) scaling.
    if (value_or<std::string>(row, "fp8_recipe", "").find("rowwise") != std::string::npos) {
      skipped.push_back({source, name, "fp8 rowwise scaling is not modelled (strata's fp8 recipe is per-tensor)"});
      continue;
    }
    const bool tokens = !row.at("tokens_per_s_per_gpu").is_null();
    try {
      const auto m = row_model(data.at("models"), key, seq);
      const auto c = row_cluster(row.at("gpu_type").get<std::string>(), gpus, catalog);
      const auto s = complete_strategy(row_strategy(row, source), m, c);
      const auto e = estimate(m, c, s, opt);
      const double predicted = tokens ? e.tokens_per_s / gpus
                                      : model::train_flops_per_sample(m) * e.samples_per_s / gpus / 1e12;
      const double measured = tokens ? row.at("tokens_per_s_per_gpu").get<double>()
                                     : row.at("model_tflops_per_gpu").get<double>();
      out.push_back({source, name, tokens ? "tokens_per_s_per_gpu" : "model_tflops_per_gpu", predicted, measured,
                     pct_error(predicted, measured), e.fits,
                     e.peak_memory_bytes / c.gpu_types.front().memory_bytes});
      if (row.at("source").value("variant", std::string()) == "vanilla TP") vanilla = out.back();
      if (async_tp && vanilla && async_tp_speedups) {
        const double pred = predicted / vanilla->predicted, meas = measured / vanilla->measured;
        async_tp_speedups->push_back({source, vanilla->name.substr(0, 5) + "/" + name, "speedup async/vanilla",
                                      pred, meas, pct_error(pred, meas), e.fits});
      }
    } catch (const core::InputError& err) {
      skipped.push_back({source, name, err.what()});
    }
  }
}

}  // namespace strata::cost::detail
