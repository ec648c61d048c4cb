// model/layer: one layer of a model as plain data, and its analytic numbers as functions of the micro-batch,
// sequence, tensor-parallel degree, sequence parallelism and recompute mode: parameters, forward/backward FLOPs
// (with GEMM shapes for a roofline), stored activation bytes (Korthikanti et al. 2022 for transformer blocks),
// and the bytes sent to the next pipeline stage. This is the ONE place these formulas live.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::model {

enum class Recompute { none, selective, full };
std::string_view to_string(Recompute r);
Recompute parse_recompute(std::string_view text, const std::string& where);  // InputError otherwise

enum class LayerKind {
  embedding,        // token (+ learned position) embedding
  transformer,      // decoder/encoder-only block: attention (MHA/GQA/MQA) + MLP (GELU or SwiGLU) [+ MoE]
  lm_head,          // final norm + LM head (tied or not)
  encoder,          // T5 encoder block
  decoder,          // T5 decoder block (self-attn + cross-attn over the encoder output + MLP)
  patch_embedding,  // ViT/Swin patch embedding
  conv,             // convolution block (ResNet bottleneck / VGG conv stack)
  generic           // numbers given directly in JSON
};
std::string_view to_string(LayerKind k);

enum class Activation { gelu, swiglu, relu };
enum class Norm { layernorm, rmsnorm };

// Numbers of a generic layer, given per sample (micro-batch 1) at tp = 1; they scale linearly with the batch.
struct GenericNumbers {
  double params = 0;
  double fwd_flops_per_sample = 0;
  double bwd_flops_per_sample = 0;            // default 2x forward when given as 0 in JSON
  double activation_bytes_per_sample = 0;     // stored for backward
  double output_bytes_per_sample = 0;         // sent to the next stage
};

// Convolution block: `convs` convolutions of kernel×kernel from in_channels to out_channels on an
// height×width feature map (stride folded into the output size).
struct ConvShape {
  std::int64_t in_channels = 0, out_channels = 0, kernel = 3, height = 0, width = 0, convs = 1;
  std::int64_t out_height = 0, out_width = 0;  // output feature map
};

struct LayerSpec {
  LayerKind kind = LayerKind::transformer;
  std::string name;                      // "block.12", "embedding", ...
  std::int64_t hidden = 0;               // h
  std::int64_t heads = 0;                // a
  std::int64_t kv_heads = 0;             // GQA/MQA; == heads for MHA
  std::int64_t ffn = 0;                  // MLP inner width
  std::int64_t vocab = 0;                // embedding / head
  std::int64_t seq = 0;                  // tokens per sample entering this layer (0 = the model's seq)
  std::int64_t encoder_seq = 0;          // decoder: length of the cross-attention input
  Activation activation = Activation::gelu;
  Norm norm = Norm::layernorm;
  bool tied_embeddings = false;          // lm_head shares the embedding matrix (no extra params)
  bool learned_positions = true;         // embedding adds a seq×h position table
  bool bias = true;                      // linear layers carry biases
  std::int64_t experts = 0, top_k = 0;   // MoE MLP when experts > 0
  std::int64_t patch = 0, channels = 0;  // patch embedding: patch size, input channels
  ConvShape conv;
  GenericNumbers generic;
};

// One GEMM: (m×k)·(k×n), repeated `count` times (e.g. batched attention products). FLOPs = 2·m·n·k·count.
struct Gemm {
  double m = 0, n = 0, k = 0, count = 1;
  double flops() const { return 2.0 * m * n * k * count; }
};

struct LayerQuery {
  std::int64_t micro_batch = 1;          // b
  std::int64_t seq = 0;                  // s (0 = the layer's / model's seq)
  int tp = 1;                            // t
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  double bytes_per_element = 2.0;        // activations in fp16/bf16
};

struct LayerCost {
  double params = 0;                     // whole layer
  double params_per_tp_rank = 0;         // stored on one tp rank
  std::vector<Gemm> fwd_gemms;           // forward GEMMs of one tp rank for one micro-batch
  double fwd_flops = 0;                  // one tp rank, one micro-batch (GEMMs + non-GEMM work)
  double bwd_flops = 0;                  // one tp rank (2x the GEMM FLOPs of forward)
  double recompute_flops = 0;            // extra forward FLOPs re-run during backward under the query's mode
  double fwd_elementwise_bytes = 0;      // memory traffic of non-GEMM ops (norms, softmax, activations), one rank
  double act_boundary_bytes = 0;         // stored layer input, one tp rank
  double act_intermediate_bytes = 0;     // other stored activations, one tp rank, under the recompute mode
  double output_bytes = 0;               // activation handed to the next layer/stage (b·s·h·bytes), not /tp
  int tp_allreduces_fwd = 0;             // all-reduces (or RS+AG pairs with sp) of tp_message_bytes in forward
  int tp_allreduces_bwd = 0;             // ... and in backward (excluding recompute)
  double tp_message_bytes = 0;           // size of each such message (b·s·h·bytes)
  double act_total_bytes() const { return act_boundary_bytes + act_intermediate_bytes; }
};

LayerCost layer_cost(const LayerSpec& layer, const LayerQuery& query);

}  // namespace strata::model
