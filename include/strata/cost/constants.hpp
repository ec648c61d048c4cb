// cost/constants: the few fitted constants of the cost model (achievable GEMM efficiency curve, memory and
// link efficiencies, overheads, bytes per parameter) and their provenance. Loaded from the embedded
// data/cost_constants.json, which says for each value what it was fitted to (data/calibration/ only) or which
// source it was taken from.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/hw/hardware.hpp"
#include "strata/model/layer.hpp"

namespace strata::cost {

struct CostConstants {
  // Achievable fraction of peak for a GEMM of F FLOPs (Calculon-style size-dependent efficiency):
  //   eff(F) = gemm_max_efficiency · F / (F + gemm_half_flops)           (tensor-core dtypes fp16/bf16/fp8)
  //   fp32/tf32 GEMMs use fp32_gemm_max_efficiency; tf32 the same half size, fp32 (CUDA cores, ~1/15 of the
  //   tensor-core peak on A100 and H100) fp32_gemm_half_flops = gemm_half_flops / 15: the same fixed time per GEMM.
  double gemm_max_efficiency = 0.8;
  double gemm_half_flops = 2e9;
  double fp32_gemm_max_efficiency = 0.8;
  double fp32_gemm_half_flops = 2e9 / 15.0;  // set from gemm_half_flops when a constants file does not give it
  // Per GPU type: the fraction of its datasheet peak that the fitted curve's efficiency applies to (clock under
  // power limits, the GPU's own achievable ratio), as (GPU name prefix, factor); a GPU matching no prefix: 1
  // (the A100 of Table 5). Fitted per GPU to data/calibration/ (data/cost_constants.json).
  std::vector<std::pair<std::string, double>> gpu_compute_efficiency;
  // Per GPU type (name prefix, factor; 1 when none matches): how FlashAttention v1 and v2 (attention=flash1,
  // flash), kernels written for Ampere's mma.sync without Hopper's TMA and wgmma, run on that GPU relative to its
  // other kernels: their peak there is peak × gpu_compute_efficiency × this. cuDNN fused attention is
  // Hopper-native and GEMMs go through cuBLAS, so neither takes it (docs/cost-model.md §Attention kernel).
  std::vector<std::pair<std::string, double>> ampere_attention_gpu_efficiency;
  // FP8 GEMMs reach this fraction of the tensor-core curve's efficiency at the fp8 peak (fitted,
  // data/cost_constants.json). Relative to the curve × the GPU's factor, which on the H100 also carries the bf16
  // stacks' non-GEMM slowness, so the fit may exceed 1 (up to 2, where curve × factor × it stays below peak).
  double fp8_gemm_relative_efficiency = 0.65;
  // The block-scaled formats relative to fp8 (issue 47): an MXFP8 GEMM reaches fp8's efficiency × this at the mxfp8
  // peak; an NVFP4 GEMM fp8's efficiency × its GPU's entry of fp4_gemm_gpu_efficiency (name prefix, factor; 1 when
  // none matches) at the fp4 peak — per part, since Blackwell Ultra's 1.5× FP4 peak is not reached in proportion
  // (fitted to the Megatron-Bridge Blackwell rows, data/cost_constants.json; 1 = as fp8 when a file leaves them out).
  double mxfp8_gemm_relative_efficiency = 1.0;
  std::vector<std::pair<std::string, double>> fp4_gemm_gpu_efficiency;
  // Achievable fraction of peak of a fused flash-attention kernel (forward and backward alike), its own
  // size-independent value instead of the GEMM curve (docs/cost-model.md §Attention kernel).
  double flash_attention_efficiency = 0.5;
  // The same for FlashAttention v1 (attention=flash1) and cuDNN fused attention (attention=cudnn), both
  // fitted (data/cost_constants.json).
  double flash1_attention_efficiency = 0.25;
  double cudnn_attention_efficiency = 0.5;
  // The memory-efficient kernel (attention=efficient) at the attention dtype's peak: fitted to strata's own fp32
  // single-GPU training rows (data/calibration/gpu_train_h100-sxm.json; data/cost_constants.json).
  double efficient_attention_efficiency = 0.5;
  // Achievable fraction of HBM bandwidth for element-wise kernels (norms, softmax, activations, dropout).
  double memory_bw_efficiency = 0.7;
  // Element-wise ops run one PyTorch kernel each (`elementwise=eager`: torchtitan without torch.compile,
  // llm-foundry) instead of fused (Megatron-core/TransformerEngine fused norm, RoPE, SwiGLU and residual kernels):
  // their traffic takes 1/eager_elementwise_efficiency times as long (fitted, data/cost_constants.json).
  double eager_elementwise_efficiency = 1.0;
  // Achievable fraction of link bandwidth for collectives inside a node / across nodes.
  double intra_node_bw_efficiency = 0.7;
  double inter_node_bw_efficiency = 0.9;
  // Fixed time per layer per micro-batch pass (kernel launches, framework overhead), forward; backward 2×.
  double layer_overhead_s = 0.0;
  // Eager PyTorch's host time per transformer block forward on a GPU (elementwise=eager; a floor, not a sum: the
  // host runs ahead of short kernels), for LayerNorm blocks and for RMSNorm (Llama, Hugging Face form) blocks; a full
  // recompute adds eager_host_recompute_ratio forwards in backward. Fitted to strata's launch-bound single-GPU rows
  // (data/calibration/gpu_train_h100-sxm_floor.json); 0 = no floor.
  double eager_host_block_s = 0.0;
  double eager_host_block_rmsnorm_s = 0.0;
  double eager_host_recompute_ratio = 0.0;
  // CPU devices (GPU type vendor "cpu": strata-exec's libtorch processes). The GEMM curve above was fitted on
  // GPUs, where its half size F½ stands for a kernel's fixed cost (F½ / (peak·e_max) ≈ 46 µs on an A100); on a
  // 50 GFLOP/s CPU the same F½ would charge 0.3 s per GEMM. A CPU GEMM instead takes F / (peak · cpu_gemm_efficiency)
  // + cpu_kernel_overhead_s, and each layer's forward cpu_layer_overhead_s more (libtorch's dispatch and
  // allocation of its other ops; backward 2×). Fitted to strata's own strata-exec runs
  // (data/calibration/cpu_local_runs.json).
  double cpu_gemm_efficiency = 1.0;
  double cpu_kernel_overhead_s = 0.0;
  double cpu_layer_overhead_s = 0.0;
  // Slowdown of compute and communication when they overlap on one device (Galvatron measured 1.1–1.3).
  double overlap_slowdown = 1.3;
  // The same for Oases' overlapped tensor parallelism (cost/overlap.hpp): a sub-batch's GEMMs and the other
  // sub-batch's TP collective share SMs and memory bandwidth (data/cost_constants.json says where it comes from).
  double tp_overlap_slowdown = 1.3;
  // The same for the chunked collective matmul (`overlap=async`, cost/overlap.hpp): a GEMM chunk and the
  // next chunk's all-gather / reduce-scatter transfer share SMs and memory bandwidth.
  double tp_async_overlap_slowdown = 1.3;
  // Mixed-precision bytes per parameter (Korthikanti §5 / ZeRO paper): fp16/bf16 weights, fp32 main grads,
  // fp32 master weights + Adam m, v.
  double weight_bytes_per_param = 2;
  double grad_bytes_per_param = 4;
  double optimizer_bytes_per_param = 12;
  // Bytes per parameter of the gradient / parameter messages in DP sync (reduced in the compute dtype).
  double grad_comm_bytes_per_param = 2;
  // Optimizer step: bytes of memory traffic per parameter (read w, g, m, v, master; write w, m, v, master).
  double optimizer_traffic_bytes_per_param = 32;
  // Memory per device: a fixed workspace (CUDA context, cuBLAS/NCCL workspaces) counted in every stage's memory,
  // and the share of each device's capacity kept free by default for allocator fragmentation (the default
  // --memory-headroom, cost/memory.hpp).
  double workspace_bytes = 1.5e9;
  double fragmentation_fraction = 0.05;
  // DP gradient buckets (bytes of the reduced message) released as the backward runs, at most dp_max_buckets
  // (cost::dp_bucket_partition; the estimate and the simulator both use it; `simulate --bucket-mb` overrides
  // the size).
  double dp_bucket_bytes = 50e6;
  double dp_max_buckets = 16;

  std::string provenance;  // one line summarising where these came from
};

// The built-in constants (parsed from data/cost_constants.json once; immutable).
const CostConstants& builtin_constants();
CostConstants constants_from_json(const nlohmann::json& j, const std::string& origin);
nlohmann::ordered_json to_json(const CostConstants& c);
// Achievable GEMM efficiency for a GEMM of `flops` in `dtype`.
double gemm_efficiency(const CostConstants& c, double flops, hw::Dtype dtype);
// The gpu_compute_efficiency factor of a GPU type (longest matching name prefix; 1 when none matches).
// The GPU's NVFP4 GEMM factor (fp4_gemm_gpu_efficiency, longest matching prefix; 1 when none).
double fp4_gemm_gpu_factor(const CostConstants& c, std::string_view gpu_name);
double gpu_compute_factor(const CostConstants& c, std::string_view gpu_name);
// The factor on a GPU type's peak for an attention kernel: gpu_compute_factor, times the
// ampere_attention_gpu_efficiency entry for the Ampere-generation kernels (flash1, flash).
double attention_gpu_factor(const CostConstants& c, model::AttentionKernel kernel, std::string_view gpu_name);
// Time of a fused flash-attention core of `flops` (score + value products) on a GPU of `peak_flops`:
// flops / (peak · flash_attention_efficiency); 0 when flops = 0.
// Time of a fused attention kernel executing `flops` at `peak_flops` with the kernel's efficiency.
double flash_attention_time(const CostConstants& c, model::AttentionKernel kernel, double flops, double peak_flops);

}  // namespace strata::cost
