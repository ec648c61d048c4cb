// model/layer: one layer of a model as plain data, and its analytic numbers as functions of the micro-batch,
// sequence, tensor-parallel degree, sequence parallelism and recompute mode: parameters, forward/backward FLOPs
// (with GEMM shapes for a roofline), stored activation bytes (Korthikanti et al. 2022 for transformer blocks),
// and the bytes sent to the next pipeline stage. This is the ONE place these formulas live (docs/models.md).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::model {

// oases: Oases' fine-grained recomputation (seed_002 §3.4, notes_002 §3.4): checkpoints right after each TP
// all-reduce (its output and the residual), so the backward re-runs the whole forward compute but no collective;
// stores 4 [s, b, h] tensors per transformer block. Blocks without TP collectives treat it as full.
// op: torchtitan's per-op selective activation checkpointing ("selective", selective_ac_option "op"): inside a
// block it keeps the outputs of the matmuls except every second one, of the attention kernel and of the
// reduce-scatters; every other op (norms, activations, the even matmuls, the all-gathers) re-runs in backward.
enum class Recompute { none, selective, full, oases, op };
std::string_view to_string(Recompute r);
Recompute parse_recompute(std::string_view text, const std::string& where);  // InputError otherwise

// The attention kernel (docs/cost-model.md §Attention kernel). eager: the unfused Megatron path that writes the
// softmax probabilities (and the dropout mask) of every head to memory and keeps them for backward (Korthikanti's
// 5as/h term). flash: a fused FlashAttention-style kernel that keeps only Q, K, V, the output and the per-row
// softmax statistics; the s² scores never reach memory (Dao et al. 2022, 2023).
// The fused kernels differ only in speed (cost/constants: one efficiency each): flash = FlashAttention-2
// (Dao 2023; PyTorch SDPA's flash backend), flash1 = FlashAttention v1 (Dao et al. 2022), cudnn = cuDNN's
// fused attention as TransformerEngine runs it (Megatron-core, NeMo). Their memory is the same.
// efficient: the memory-efficient kernel (xFormers/cutlass; PyTorch SDPA's EFFICIENT_ATTENTION backend), which
// saves what flash saves (Q, K, V, the output and the log-sum-exp) and runs fp32 and fp16 on any CUDA GPU; PyTorch
// picks it where FlashAttention has no kernel (fp32 inputs, pre-Ampere GPUs).
enum class AttentionKernel { eager, flash, flash1, cudnn, efficient };
inline bool is_fused(AttentionKernel k) { return k != AttentionKernel::eager; }
std::string_view to_string(AttentionKernel k);
AttentionKernel parse_attention_kernel(std::string_view text, const std::string& where);  // InputError otherwise

// The loss path of an LM head (strategy key `loss`, docs/cost-model.md §Activation memory per stack). fused:
// Megatron's fused vocab-parallel cross-entropy, which turns the logits into their fp32 softmax in place and keeps
// only that (4 bytes per logit). fp32: `cross_entropy(logits.float())` as plain PyTorch loops write it: the caller
// holds the bf16 logits, log_softmax saves its fp32 output, and its backward holds two more fp32 logit-sized
// tensors (the incoming and the outgoing gradient) at the stage's peak (14 bytes per logit in all).
enum class LossPath { fused, fp32 };
std::string_view to_string(LossPath l);
LossPath parse_loss_path(std::string_view text, const std::string& where);  // InputError otherwise

enum class LayerKind {
  embedding,        // token (+ learned position) embedding
  transformer,      // decoder/encoder-only block: attention (MHA/GQA/MQA) + MLP (GELU or SwiGLU) [+ MoE]
  lm_head,          // final norm + LM head (tied or not); also a classifier head (`pooled`)
  encoder,          // T5 encoder block
  decoder,          // T5 decoder block (self-attn + cross-attn over the encoder output + MLP)
  patch_embedding,  // ViT/Swin patch embedding, Swin patch merging
  conv,             // convolution block (ResNet bottleneck / VGG conv stack)
  generic           // numbers given directly in JSON
};
std::string_view to_string(LayerKind k);
// Embedding-type layers (token embedding, patch embedding): the one test of "is this an embedding layer" (a
// pipeline stage holding one owns the tied LM head's matrix; Megatron's split puts them on the first stage).
constexpr bool is_embedding(LayerKind k) { return k == LayerKind::embedding || k == LayerKind::patch_embedding; }
// An attention block (transformer, encoder or decoder layer); cost::is_block also counts conv and generic.
constexpr bool is_attention_block(LayerKind k) {
  return k == LayerKind::transformer || k == LayerKind::encoder || k == LayerKind::decoder;
}
LayerKind parse_layer_kind(std::string_view text, const std::string& where);  // InputError lists valid kinds

enum class Activation { gelu, swiglu, relu };
enum class Norm { layernorm, rmsnorm, none };
std::string_view to_string(Activation a);
std::string_view to_string(Norm n);
Activation parse_activation(std::string_view text, const std::string& where);  // InputError lists valid ones
Norm parse_norm(std::string_view text, const std::string& where);              // InputError lists valid ones

// Numbers of a generic layer, given per sample (micro-batch 1) at tp = 1; they scale linearly with the batch.
// A generic layer is replicated on every tensor-parallel rank (numbers do not change with tp).
struct GenericNumbers {
  double params = 0;
  double fwd_flops_per_sample = 0;
  double bwd_flops_per_sample = 0;            // default 2x forward when given as 0 in JSON
  double activation_bytes_per_sample = 0;     // stored for backward (input included)
  double output_bytes_per_sample = 0;         // sent to the next stage
  double input_bytes_per_sample = 0;          // part of activation_bytes that is the layer input (boundary)
};

// Convolution block, input Cin×height×width, output Cout×out_height×out_width.
//  - plain stack (VGG, ResNet stem): `convs` convolutions kernel×kernel, the first Cin→Cout with `stride`, the
//    rest Cout→Cout (same padding), each followed by [BN +] ReLU, then a max-pool down to out_height×out_width.
//  - bottleneck (ResNet): 1×1 Cin→mid, kernel×kernel mid→mid with `stride`, 1×1 mid→Cout, each + BN, ReLU
//    after the residual add; a 1×1 projection shortcut (+BN) when Cin ≠ Cout or stride > 1.
struct ConvShape {
  std::int64_t in_channels = 0, out_channels = 0, kernel = 3, height = 0, width = 0, convs = 1;
  std::int64_t out_height = 0, out_width = 0;  // output feature map (after stride and pooling)
  std::int64_t mid_channels = 0;               // bottleneck width
  std::int64_t stride = 1;
  bool bottleneck = false;
  bool batch_norm = false;                     // BN after every conv (2 params per channel)
};

struct LayerSpec {
  LayerKind kind = LayerKind::transformer;
  std::string name;                      // "block.12", "embedding", ...
  std::int64_t hidden = 0;               // h
  std::int64_t heads = 0;                // a
  std::int64_t kv_heads = 0;             // GQA/MQA; == heads for MHA
  std::int64_t ffn = 0;                  // MLP inner width
  std::int64_t vocab = 0;                // embedding / head (classes for a classifier head)
  std::int64_t seq = 0;                  // tokens per sample entering this layer (0 = the model's seq)
  std::int64_t encoder_seq = 0;          // decoder: length of the cross-attention input
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool tied_embeddings = false;          // lm_head shares the embedding matrix (no extra params)
  bool learned_positions = true;         // embedding / patch embedding adds a seq×h position table
  bool bias = true;                      // linear layers carry biases (lm_head: an output bias of size vocab)
  std::int64_t experts = 0, top_k = 0;   // MoE MLP when experts > 0
  std::int64_t patch = 0, channels = 0;  // patch embedding: patch size, input channels
  ConvShape conv;
  GenericNumbers generic;
  // Additions (model helper, issue 2):
  std::int64_t attention_window = 0;     // tokens attended per query inside a window (Swin: 49); 0 = full seq
  bool dropout = true;                   // dropout after attention/MLP (stores 1-byte masks; Korthikanti's 34sbh)
  bool pooled = false;                   // lm_head: classifier on one token per sample (CLS / average pool)
  bool cls_token = false;                // patch embedding: one extra learned [CLS] token (counted in seq)
  bool pre_norm = false;                 // patch embedding: LayerNorm over the patch input (Swin patch merging)
  // Self-attention masked to earlier positions (decoder-only LMs, the T5 decoder). A fused flash kernel skips
  // the score tiles above the diagonal (LayerCost::flash_attention_work_flops); the model FLOPs still count the
  // full s² products (the Megatron/NeMo/llm-foundry MFU convention). Eager attention computes the full matrix.
  bool causal = false;
};

// FlashAttention's backward executes 2.5× its forward's FLOPs: S = QKᵀ recomputed per tile, dV = PᵀdO, dP = dO·Vᵀ,
// dQ = dS·K and dK = dSᵀ·Q (five products of the tile's size) against S = QKᵀ and O = PV in forward (Dao 2023,
// arXiv 2307.08691, Algorithm 2; its benchmarks count forward + backward as 3.5× the forward's FLOPs).
inline constexpr double kFlashBackwardWorkRatio = 2.5;

// One GEMM: (m×k)·(k×n), repeated `count` times (e.g. batched attention products). FLOPs = 2·m·n·k·count.
struct Gemm {
  double m = 0, n = 0, k = 0, count = 1;
  double flops() const { return 2.0 * m * n * k * count; }
};

struct LayerQuery {
  std::int64_t micro_batch = 1;          // b
  std::int64_t seq = 0;                  // s (0 = the layer's seq; > 0 overrides it for sequence layers)
  int tp = 1;                            // t
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  // Full recompute with early stop (PyTorch's non-reentrant torch.utils.checkpoint, the default of torchtitan's and
  // FSDP's activation checkpointing; torch.compile's partitioner likewise): the re-run forward ends once every
  // tensor the backward needs exists, so a transformer block's last GEMM (the MLP's output projection) and the
  // collective after it are not re-run. Megatron's full recompute re-runs the whole forward (false).
  bool recompute_early_stop = false;
  double bytes_per_element = 2.0;        // activations in fp16/bf16
  double gemm_input_bytes_per_element = 0;  // stored inputs of the linear layers' GEMMs (fp8: 1); 0 = bytes_per_element
  AttentionKernel attention = AttentionKernel::eager;
  // The eager PyTorch stack (`elementwise=eager`): autocast over fp32 parameters, one kernel per op. Its stored
  // activations follow what each eager op saves for backward (model/layer_eager.cpp, docs/cost-model.md
  // §Activation memory per stack) instead of the fused kernels' Korthikanti accounting.
  bool eager_elementwise = false;
  // The eager stack with 16-bit compute parameters instead of autocast over fp32 ones: FSDP's
  // MixedPrecision(param_dtype=bf16) and FSDP2's MixedPrecisionPolicy (torchtitan), llm-foundry's PURE, DeepSpeed's
  // bf16 mode. The residual stream is then bf16 and the GEMMs read the norm output directly (no per-GEMM casts).
  bool eager_bf16_params = false;
  LossPath loss = LossPath::fused;       // the LM head's loss path (lm_head layers only)
  // torch 1.13's autograd formula for mean.dim saved its input (2.x saves its sizes only): one extra fp32 [s,b,h]
  // per RMSNorm as Hugging Face writes it. Only for comparing with data/calibration/saved_tensors_cpu.json,
  // which Debian's torch 1.13 measured; planning models current PyTorch (false).
  bool legacy_mean_saves_input = false;
  // Context parallelism (ring attention): this rank holds seq/cp tokens of each sample — every per-token term
  // (GEMMs, activations, messages) is /cp — and its queries attend over all seq keys (the score and value products
  // are 1/cp of the whole, load-balanced as Megatron-core splits a causal sequence). Stored K/V are the local ones.
  int cp = 1;
};

// One tensor-parallel all-reduce of a block and the GEMMs around it (indices into LayerCost::fwd_gemms). Under
// sequence parallelism it is an all-gather feeding the column-parallel GEMMs [gather_first, gather_first +
// gather_count) and a reduce-scatter of the row-parallel GEMM scatter_gemm's output; the chunked collective matmul
// (overlap=async) fuses each collective with exactly those GEMMs (cost/overlap.hpp). op_regather_share: the share
// of the gather GEMMs' FLOPs that per-op SAC re-runs in backward beside its re-run all-gather (wk of Q/K/V, w3 of
// SwiGLU's w1/w3; 0 for a GELU MLP, whose re-run fc2 does not read the gathered input).
struct TpCollectiveSite {
  int gather_first = 0;
  int gather_count = 0;
  int scatter_gemm = -1;
  double op_regather_share = 0;
};

struct LayerCost {
  double params = 0;                     // whole layer
  double params_per_tp_rank = 0;         // stored on one tp rank
  std::vector<Gemm> fwd_gemms;           // forward GEMMs of one tp rank for one micro-batch
  double fwd_flops = 0;                  // one tp rank, one micro-batch: GEMM FLOPs (non-GEMM ops are counted
                                         //   as memory traffic in fwd_elementwise_bytes, not as FLOPs)
  double bwd_flops = 0;                  // one tp rank (2x the GEMM FLOPs of forward)
  double recompute_flops = 0;            // extra forward FLOPs re-run during backward under the query's mode
  // Full recompute with early stop: the last entry of fwd_gemms (the MLP's output projection) is not re-run
  // (its FLOPs are not in recompute_flops) and neither is the tensor-parallel collective after it.
  bool recompute_skips_last_gemm = false;
  // Under the flash kernel: forward FLOPs of the fused attention core (score and value products of one tp rank),
  // counted in fwd_flops but not listed in fwd_gemms (the kernel is not a pair of GEMMs with an s² output).
  double flash_attention_flops = 0;
  // The FLOPs the fused kernel executes: flash_attention_flops less the score tiles a causal mask skips
  // (model/layer_transformer.cpp, causal_tile_fraction); = flash_attention_flops for non-causal attention.
  double flash_attention_work_flops = 0;
  // What the fused kernel's backward executes: kFlashBackwardWorkRatio × flash_attention_work_flops (it recomputes
  // the score tile, then forms dV, dP, dQ and dK: five tile products against the forward's two). The model FLOPs
  // (bwd_flops) keep the PTD-P convention, backward = 2× forward.
  double flash_attention_bwd_work_flops = 0;
  double fwd_elementwise_bytes = 0;      // memory traffic of non-GEMM ops (norms, softmax, activations), one rank
  double act_boundary_bytes = 0;         // stored layer input, one tp rank
  double act_intermediate_bytes = 0;     // other stored activations, one tp rank, under the recompute mode
  double act_recomputed_bytes = 0;       // activations the recompute mode drops and the backward re-materialises
                                         //   (held from the layer's recompute to the end of its backward)
  double output_bytes = 0;               // activation handed to the next layer/stage (b·s·h·bytes), not /tp
  int tp_allreduces_fwd = 0;             // all-reduces (or RS+AG pairs with sp) of tp_message_bytes in forward
  int tp_allreduces_bwd = 0;             // ... and in backward (excluding recompute)
  double tp_message_bytes = 0;           // size of each such message (b·s·h·bytes)
  // One entry per forward all-reduce for blocks whose GEMMs around their collectives are known (transformer,
  // encoder and decoder layers: at most self-attention, cross-attention and MLP); none for the other kinds. Held
  // inline: layer_cost runs for every costed configuration of the planner; a heap vector here added 1.9 % to a
  // plan's instructions, the inline slots 0.5 % (callgrind, AMP case, 2026-11-26).
  static constexpr int kMaxTpSites = 3;
  std::array<TpCollectiveSite, kMaxTpSites> tp_site_slots{};
  int tp_site_count = 0;
  std::span<const TpCollectiveSite> tp_sites() const {
    return {tp_site_slots.data(), static_cast<std::size_t>(tp_site_count)};
  }
  // Tied LM head: the embedding matrix this layer uses but does not own (total_params counts it once, in the
  // embedding). A pipeline stage holding this layer without the embedding keeps a copy of it (Megatron).
  double shared_params = 0;
  double shared_params_per_tp_rank = 0;
  double act_total_bytes() const { return act_boundary_bytes + act_intermediate_bytes; }
};

// The numbers of one layer. InputError when the query's tp is impossible for the layer (see
// tensor_parallel_problem); std::invalid_argument on a malformed query (micro_batch < 1, tp < 1).
LayerCost layer_cost(const LayerSpec& layer, const LayerQuery& query);

// True when layer_cost(a, q) == layer_cost(b, q) for every query: same kind and every field layer_cost reads
// (names may differ). Lets the cost model and the planner cost each distinct layer once (a 128-block model has
// 3 distinct layers). Extend it with every new field layer_cost reads.
bool same_cost_shape(const LayerSpec& a, const LayerSpec& b);

// Per-module closed forms of the eager stack (model/layer_eager.cpp), the terms the transformer blocks and LM
// head sum under LayerQuery::eager_elementwise; tests and `strata validate` compare them with the measured
// saved-tensor table (data/calibration/saved_tensors_cpu.json, scripts/saved_tensors_probe.py).
enum class EagerModule { linear, layernorm, rmsnorm, mlp_gelu, mlp_swiglu, dropout, attention, loss_fp32 };
EagerModule parse_eager_module(std::string_view text, const std::string& where);  // the table's `kind`
struct EagerModuleQuery {
  EagerModule module = EagerModule::linear;
  std::int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, vocab = 0, micro_batch = 1, seq = 0;
  bool dropout = false;         // dropout after the module (attention: also on the probabilities)
  bool fused_qkv = true;        // attention: one Q/K/V projection (one cast of its input) or three
  double input_bytes = 4;       // the module input's dtype (autocast: fp32 residual stream 4; bf16 2)
  bool autocast = true;         // autocast(bf16) casts fp32 GEMM inputs to a saved bf16 copy
  bool legacy_mean_saves_input = false;  // LayerQuery::legacy_mean_saves_input
};
struct SavedBytes {
  double boundary_bytes = 0;      // the module's own input, when its ops save it
  double intermediate_bytes = 0;  // every other activation saved (parameters and their autocast casts excluded)
};
SavedBytes eager_module_saved_bytes(const EagerModuleQuery& q);

// Empty when the layer can be split over `tp` tensor-parallel ranks, else the reason (one line). Transformer
// blocks need tp | heads and (tp | kv_heads or kv_heads | tp); conv blocks support tp = 1 only; embedding,
// heads, patch and generic layers accept any tp.
std::string tensor_parallel_problem(const LayerSpec& layer, int tp);

}  // namespace strata::model
