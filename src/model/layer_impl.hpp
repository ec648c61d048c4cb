// model/layer_impl: internal interface between the layer_cost dispatcher (layer.cpp) and the per-kind formulas
// (layer_transformer.cpp: transformer/encoder/decoder blocks; layer_other.cpp: embedding, head, patch, conv,
// generic). Not a public header.
#pragma once
#include <cstdint>

#include "strata/model/layer.hpp"

namespace strata::model::detail {

// The query resolved against the layer: everything as doubles for the formulas.
struct Ctx {
  double b = 1;          // micro-batch
  double s = 0;          // tokens per sample entering the layer
  double t = 1;          // tensor-parallel degree
  bool sp = false;       // sequence parallelism
  Recompute rc = Recompute::none;
  bool early_stop = false;  // full recompute ends before the block's last GEMM (LayerQuery::recompute_early_stop)
  double B = 2;          // bytes per activation element
  double Bg = 2;         // bytes per stored GEMM-input element (the linear layers' saved inputs; fp8 recipes: 1)
  bool flash = false;    // fused (FlashAttention-style) attention kernel
  double s_keys = 0;     // keys each query attends over in self-attention (context parallelism: the whole
                         //   sequence while s = seq/cp); 0 = s
  bool eager = false;    // the eager PyTorch stack (LayerQuery::eager_elementwise): layer_eager.cpp's accounting
  double R = 2;          // bytes per element of the residual stream (eager: fp32 under autocast; else B)
  LossPath loss = LossPath::fused;
  bool legacy_mean = false;  // LayerQuery::legacy_mean_saves_input
};

// ---- the eager stack's saved tensors (layer_eager.cpp); per token and tensor-parallel rank unless noted ----
// Bytes a norm saves beyond its own input when its input has `input_bytes` per element.
double eager_norm_saved_bytes(Norm norm, double width, double input_bytes, bool legacy_mean);
// Bytes saved for `consumers` GEMMs reading one fp32 tensor of `width`: autocast casts it once per GEMM.
double eager_gemm_inputs_bytes(double width, double consumers, const Ctx& c);
// Bytes per attention-probability element saved by eager math attention (softmax in fp32).
double eager_probs_bytes(double B, bool dropout);
// Bytes per MLP-inner element (one routed token, one of its ffn/t columns) saved by the activation function.
double eager_activation_bytes(Activation a, double B);
// The loss path's bytes per head token: saved for backward, and held at the stage's peak besides.
struct LossBytes {
  double saved = 0, held = 0;
};
LossBytes loss_bytes_per_token(LossPath loss, double vocab_per_rank);
// Under autocast over fp32 parameters (the eager stack's residual stream is fp32: Ctx::R > Ctx::B) every element-wise
// op is its own kernel that reads its inputs and writes its output, which layer_eager.cpp counts op by op: the
// forward bytes per token of the attention sub-block (norm, autocast casts of the GEMM inputs, RoPE, GQA's K/V
// repeat, the output transpose copy, dropout, residual) and of the MLP sub-block, per tensor-parallel rank.
bool eager_autocast(const Ctx& c);
double eager_attention_traffic_bytes(const LayerSpec& l, const Ctx& c);
double eager_mlp_traffic_bytes(const LayerSpec& l, const Ctx& c, double routed);

// One sub-block's stored bytes in the accounting of transformer_cost (Acc): on every tp rank (/t under sp),
// already per rank, and the attention scores (dropped by selective recompute).
struct StoredPart {
  double repl = 0, split = 0, score = 0;
};
struct AttentionDims {
  double q_tokens = 0, kv_tokens = 0;  // b·q_len and b·kv_len
  double probs = 0;                    // attention probabilities of one rank
  bool cross = false;
};
StoredPart eager_attention_stored(const LayerSpec& l, const Ctx& c, const AttentionDims& d);
StoredPart eager_mlp_stored(const LayerSpec& l, const Ctx& c, double tokens, double routed);

// Parameters of one norm over `width` features (LayerNorm: weight [+ bias]; RMSNorm: weight; none: 0).
double norm_params(double width, Norm norm, bool bias);

LayerCost transformer_cost(const LayerSpec& l, const Ctx& c);  // transformer, encoder, decoder
LayerCost embedding_cost(const LayerSpec& l, const Ctx& c);
LayerCost lm_head_cost(const LayerSpec& l, const Ctx& c);
LayerCost patch_cost(const LayerSpec& l, const Ctx& c);
LayerCost conv_cost(const LayerSpec& l, const Ctx& c);
LayerCost generic_cost(const LayerSpec& l, const Ctx& c);

// Sums fwd_gemms into fwd_flops and sets bwd_flops = 2·fwd_flops (PTD-P: backward = 2× forward GEMM FLOPs).
void finish_flops(LayerCost& lc);

}  // namespace strata::model::detail
