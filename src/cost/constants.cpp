// cost/constants: reads data/cost_constants.json (fitted constants with provenance) and evaluates the GEMM
// efficiency curve.
#include "strata/cost/constants.hpp"

#include <fmt/format.h>

#include "strata/core/data.hpp"
#include "strata/core/json.hpp"

namespace strata::cost {
namespace {

// Each constant is {"value": x, "fitted_to"|"source": "...", ...}; only "value" is read.
double value_of(const core::Json& obj, std::string_view key, const core::JsonWhere& where, double lo, double hi) {
  const auto& entry = core::require_field(obj, key, where);
  const auto w = where.field(key);
  core::expect_object(entry, w);
  const double v = core::get_number(entry, "value", w);
  if (!(v >= lo && v <= hi)) core::fail(w.field("value"), fmt::format("{} is outside [{}, {}]", v, lo, hi));
  return v;
}

// A per-GPU map of factors in [0.01, 1] ({"value": {"<GPU name prefix>": factor, ...}}); empty when absent.
std::vector<std::pair<std::string, double>> gpu_factor_map(const core::Json& cj, const char* name,
                                                          const core::JsonWhere& w) {
  std::vector<std::pair<std::string, double>> out;
  if (!core::has_field(cj, name)) return out;
  const auto wg = w.field(name);
  const auto& entry = cj.at(name);
  core::expect_object(entry, wg);
  const auto& map = core::require_field(entry, "value", wg);
  core::expect_object(map, wg.field("value"));
  for (const auto& [gpu, v] : map.items()) {
    if (!v.is_number() || !(v.get<double>() >= 0.01 && v.get<double>() <= 1.0))
      core::fail(wg.field("value").field(gpu), "must be a number in [0.01, 1]");
    out.emplace_back(gpu, v.get<double>());
  }
  return out;
}

// The entry of a (GPU name prefix, factor) map for a GPU type: the longest matching prefix; 1 when none matches.
double prefix_factor(const std::vector<std::pair<std::string, double>>& map, std::string_view gpu_name) {
  double factor = 1.0;
  std::size_t best = 0;
  for (const auto& [prefix, v] : map)
    if (prefix.size() > best && gpu_name.substr(0, prefix.size()) == prefix) {
      best = prefix.size();
      factor = v;
    }
  return factor;
}

}  // namespace

CostConstants constants_from_json(const nlohmann::json& j, const std::string& origin) {
  const core::JsonWhere root{origin, ""};
  core::expect_object(j, root);
  const auto& cj = core::require_field(j, "constants", root);
  const auto w = root.field("constants");
  core::expect_object(cj, w);
  CostConstants c;
  c.gemm_max_efficiency = value_of(cj, "gemm_max_efficiency", w, 0.01, 1.0);
  c.gemm_half_flops = value_of(cj, "gemm_half_flops", w, 0.0, 1e15);
  c.fp32_gemm_max_efficiency = value_of(cj, "fp32_gemm_max_efficiency", w, 0.01, 1.0);
  c.fp32_gemm_half_flops = c.gemm_half_flops / 15.0;  // absent from a constants file: the derivation below
  if (core::has_field(cj, "fp32_gemm_half_flops"))
    c.fp32_gemm_half_flops = value_of(cj, "fp32_gemm_half_flops", w, 0.0, 1e15);
  c.memory_bw_efficiency = value_of(cj, "memory_bw_efficiency", w, 0.01, 1.0);
  c.gpu_compute_efficiency = gpu_factor_map(cj, "gpu_compute_efficiency", w);
  c.ampere_attention_gpu_efficiency = gpu_factor_map(cj, "ampere_attention_gpu_efficiency", w);
  if (core::has_field(cj, "fp8_gemm_relative_efficiency"))
    c.fp8_gemm_relative_efficiency = value_of(cj, "fp8_gemm_relative_efficiency", w, 0.01, 2.0);
  if (core::has_field(cj, "mxfp8_gemm_relative_efficiency"))
    c.mxfp8_gemm_relative_efficiency = value_of(cj, "mxfp8_gemm_relative_efficiency", w, 0.01, 2.0);
  if (core::has_field(cj, "fp4_gemm_gpu_efficiency"))
    c.fp4_gemm_gpu_efficiency = gpu_factor_map(cj, "fp4_gemm_gpu_efficiency", w);
  if (core::has_field(cj, "flash_attention_efficiency"))
    c.flash_attention_efficiency = value_of(cj, "flash_attention_efficiency", w, 0.01, 1.0);
  if (core::has_field(cj, "flash1_attention_efficiency"))
    c.flash1_attention_efficiency = value_of(cj, "flash1_attention_efficiency", w, 0.01, 1.0);
  if (core::has_field(cj, "eager_elementwise_efficiency"))
    c.eager_elementwise_efficiency = value_of(cj, "eager_elementwise_efficiency", w, 0.01, 1.0);
  if (core::has_field(cj, "efficient_attention_efficiency"))
    c.efficient_attention_efficiency = value_of(cj, "efficient_attention_efficiency", w, 0.01, 1.0);
  if (core::has_field(cj, "cudnn_attention_efficiency"))
    c.cudnn_attention_efficiency = value_of(cj, "cudnn_attention_efficiency", w, 0.01, 1.0);
  c.intra_node_bw_efficiency = value_of(cj, "intra_node_bw_efficiency", w, 0.01, 1.0);
  c.inter_node_bw_efficiency = value_of(cj, "inter_node_bw_efficiency", w, 0.01, 1.0);
  c.layer_overhead_s = value_of(cj, "layer_overhead_s", w, 0.0, 1.0);
  if (core::has_field(cj, "eager_host_block_s")) c.eager_host_block_s = value_of(cj, "eager_host_block_s", w, 0.0, 1.0);
  if (core::has_field(cj, "eager_host_block_rmsnorm_s"))
    c.eager_host_block_rmsnorm_s = value_of(cj, "eager_host_block_rmsnorm_s", w, 0.0, 1.0);
  if (core::has_field(cj, "eager_host_recompute_ratio"))
    c.eager_host_recompute_ratio = value_of(cj, "eager_host_recompute_ratio", w, 0.0, 10.0);
  if (core::has_field(cj, "cpu_gemm_efficiency"))
    c.cpu_gemm_efficiency = value_of(cj, "cpu_gemm_efficiency", w, 0.01, 1.0);
  if (core::has_field(cj, "cpu_kernel_overhead_s"))
    c.cpu_kernel_overhead_s = value_of(cj, "cpu_kernel_overhead_s", w, 0.0, 1.0);
  if (core::has_field(cj, "cpu_layer_overhead_s"))
    c.cpu_layer_overhead_s = value_of(cj, "cpu_layer_overhead_s", w, 0.0, 1.0);
  c.overlap_slowdown = value_of(cj, "overlap_slowdown", w, 1.0, 10.0);
  if (core::has_field(cj, "tp_overlap_slowdown"))
    c.tp_overlap_slowdown = value_of(cj, "tp_overlap_slowdown", w, 1.0, 10.0);
  if (core::has_field(cj, "tp_async_overlap_slowdown"))
    c.tp_async_overlap_slowdown = value_of(cj, "tp_async_overlap_slowdown", w, 1.0, 10.0);
  c.weight_bytes_per_param = value_of(cj, "weight_bytes_per_param", w, 0.0, 64.0);
  c.grad_bytes_per_param = value_of(cj, "grad_bytes_per_param", w, 0.0, 64.0);
  c.optimizer_bytes_per_param = value_of(cj, "optimizer_bytes_per_param", w, 0.0, 64.0);
  c.grad_comm_bytes_per_param = value_of(cj, "grad_comm_bytes_per_param", w, 0.0, 64.0);
  c.optimizer_traffic_bytes_per_param = value_of(cj, "optimizer_traffic_bytes_per_param", w, 0.0, 1024.0);
  c.workspace_bytes = value_of(cj, "workspace_bytes", w, 0.0, 1e12);
  c.fragmentation_fraction = value_of(cj, "fragmentation_fraction", w, 0.0, 1.0);
  c.dp_bucket_bytes = value_of(cj, "dp_bucket_bytes", w, 1.0, 1e12);
  c.dp_max_buckets = value_of(cj, "dp_max_buckets", w, 1.0, 1e6);
  c.provenance = core::get_string(j, "provenance", root);
  return c;
}

const CostConstants& builtin_constants() {
  // Parsed once; immutable afterwards (thread-safe static initialisation).
  static const CostConstants c = constants_from_json(core::embedded_json("cost_constants.json"),
                                                     "data/cost_constants.json");
  return c;
}

nlohmann::ordered_json to_json(const CostConstants& c) {
  nlohmann::ordered_json j;
  j["gemm_max_efficiency"] = c.gemm_max_efficiency;
  j["gemm_half_flops"] = c.gemm_half_flops;
  j["fp32_gemm_max_efficiency"] = c.fp32_gemm_max_efficiency;
  j["fp32_gemm_half_flops"] = c.fp32_gemm_half_flops;
  j["memory_bw_efficiency"] = c.memory_bw_efficiency;
  j["eager_elementwise_efficiency"] = c.eager_elementwise_efficiency;
  j["flash_attention_efficiency"] = c.flash_attention_efficiency;
  j["flash1_attention_efficiency"] = c.flash1_attention_efficiency;
  j["cudnn_attention_efficiency"] = c.cudnn_attention_efficiency;
  j["efficient_attention_efficiency"] = c.efficient_attention_efficiency;
  j["fp8_gemm_relative_efficiency"] = c.fp8_gemm_relative_efficiency;
  j["mxfp8_gemm_relative_efficiency"] = c.mxfp8_gemm_relative_efficiency;
  j["fp4_gemm_gpu_efficiency"] = nlohmann::ordered_json::object();
  for (const auto& [gpu, v] : c.fp4_gemm_gpu_efficiency) j["fp4_gemm_gpu_efficiency"][gpu] = v;
  j["gpu_compute_efficiency"] = nlohmann::ordered_json::object();
  for (const auto& [gpu, v] : c.gpu_compute_efficiency) j["gpu_compute_efficiency"][gpu] = v;
  j["ampere_attention_gpu_efficiency"] = nlohmann::ordered_json::object();
  for (const auto& [gpu, v] : c.ampere_attention_gpu_efficiency) j["ampere_attention_gpu_efficiency"][gpu] = v;
  j["intra_node_bw_efficiency"] = c.intra_node_bw_efficiency;
  j["inter_node_bw_efficiency"] = c.inter_node_bw_efficiency;
  j["layer_overhead_s"] = c.layer_overhead_s;
  j["eager_host_block_s"] = c.eager_host_block_s;
  j["eager_host_block_rmsnorm_s"] = c.eager_host_block_rmsnorm_s;
  j["eager_host_recompute_ratio"] = c.eager_host_recompute_ratio;
  j["cpu_gemm_efficiency"] = c.cpu_gemm_efficiency;
  j["cpu_kernel_overhead_s"] = c.cpu_kernel_overhead_s;
  j["cpu_layer_overhead_s"] = c.cpu_layer_overhead_s;
  j["overlap_slowdown"] = c.overlap_slowdown;
  j["tp_overlap_slowdown"] = c.tp_overlap_slowdown;
  j["tp_async_overlap_slowdown"] = c.tp_async_overlap_slowdown;
  j["weight_bytes_per_param"] = c.weight_bytes_per_param;
  j["grad_bytes_per_param"] = c.grad_bytes_per_param;
  j["optimizer_bytes_per_param"] = c.optimizer_bytes_per_param;
  j["grad_comm_bytes_per_param"] = c.grad_comm_bytes_per_param;
  j["optimizer_traffic_bytes_per_param"] = c.optimizer_traffic_bytes_per_param;
  j["workspace_bytes"] = c.workspace_bytes;
  j["fragmentation_fraction"] = c.fragmentation_fraction;
  j["dp_bucket_bytes"] = c.dp_bucket_bytes;
  j["dp_max_buckets"] = c.dp_max_buckets;
  j["provenance"] = c.provenance;
  return j;
}

double gemm_efficiency(const CostConstants& c, double flops, hw::Dtype dtype) {
  const bool low_precision = dtype == hw::Dtype::fp8 || dtype == hw::Dtype::mxfp8 || dtype == hw::Dtype::fp4;
  const bool tensor_core = dtype == hw::Dtype::fp16 || dtype == hw::Dtype::bf16 || low_precision;
  double emax = tensor_core ? c.gemm_max_efficiency : c.fp32_gemm_max_efficiency;
  // The block-scaled formats: fp8's relative efficiency times their own (docs/cost-model.md §Precision recipes).
  if (low_precision) emax *= c.fp8_gemm_relative_efficiency;
  if (dtype == hw::Dtype::mxfp8) emax *= c.mxfp8_gemm_relative_efficiency;

  if (flops <= 0) return emax;
  // The half point stands for a GEMM's fixed time (F½/(peak·e_max)); fp32 runs on the CUDA cores at ~1/15 of the
  // tensor-core peak, so the same fixed time is ~1/15 of the FLOPs (fp32_gemm_half_flops, data/cost_constants.json).
  const double half = dtype == hw::Dtype::fp32 ? c.fp32_gemm_half_flops : c.gemm_half_flops;
  return emax * flops / (flops + half);
}

double flash_attention_time(const CostConstants& c, model::AttentionKernel kernel, double flops, double peak_flops) {
  if (flops <= 0 || !(peak_flops > 0)) return 0;
  const double eff = kernel == model::AttentionKernel::flash1   ? c.flash1_attention_efficiency
                     : kernel == model::AttentionKernel::cudnn ? c.cudnn_attention_efficiency
                     : kernel == model::AttentionKernel::efficient ? c.efficient_attention_efficiency
                                                                : c.flash_attention_efficiency;
  return flops / (peak_flops * eff);
}

double fp4_gemm_gpu_factor(const CostConstants& c, std::string_view gpu_name) {
  return prefix_factor(c.fp4_gemm_gpu_efficiency, gpu_name);
}

double gpu_compute_factor(const CostConstants& c, std::string_view gpu_name) {
  return prefix_factor(c.gpu_compute_efficiency, gpu_name);
}

double attention_gpu_factor(const CostConstants& c, model::AttentionKernel kernel, std::string_view gpu_name) {
  const bool ampere_kernel = kernel == model::AttentionKernel::flash1 || kernel == model::AttentionKernel::flash;
  const double ampere = ampere_kernel ? prefix_factor(c.ampere_attention_gpu_efficiency, gpu_name) : 1.0;
  return gpu_compute_factor(c, gpu_name) * ampere;
}

}  // namespace strata::cost
