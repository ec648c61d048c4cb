// model/layer_other: the numbers of the non-block layers — token embedding, final norm + LM/classifier head,
// patch embedding (ViT/Swin, Swin patch merging), convolution blocks (ResNet bottleneck, VGG stack) and generic
// layers given by numbers. Per tensor-parallel rank and micro-batch, like layer_transformer.cpp.
//
// Tensor parallelism: embedding and head are vocabulary-parallel (Megatron: params/t; the embedding all-reduces
// its output in forward, the head all-reduces its input gradient in backward). Patch embeddings and generic
// layers are small and replicated on every tp rank. Conv blocks support tp = 1 only (layer.cpp checks it).
// Recompute: full recompute checkpoints blocks (transformer, conv, generic); embedding, patch embedding and the
// head always keep their activations (Megatron checkpoints transformer layers only).
#include <algorithm>

#include "layer_impl.hpp"

namespace strata::model::detail {
namespace {
constexpr double kTokenIdBytes = 8;   // int64 token ids
constexpr double kLogitBytes = 4;     // fp32 logits (the loss's memory traffic; its stored bytes: LossPath)
}  // namespace

LayerCost embedding_cost(const LayerSpec& l, const Ctx& c) {
  const double h = static_cast<double>(l.hidden), V = static_cast<double>(l.vocab);
  const double positions = l.learned_positions ? static_cast<double>(l.seq > 0 ? l.seq : c.s) * h : 0;
  const double tokens = c.b * c.s;
  LayerCost lc;
  lc.params = V * h + positions;
  lc.params_per_tp_rank = V * h / c.t + positions;
  lc.act_boundary_bytes = tokens * kTokenIdBytes;
  lc.act_intermediate_bytes = l.dropout ? tokens * h / (c.sp ? c.t : 1.0) : 0;  // 1-byte dropout mask
  // Lookup write, position add (2 reads, 1 write), dropout (read, write).
  lc.fwd_elementwise_bytes = tokens * h * c.B * (1 + (l.learned_positions ? 3 : 0) + (l.dropout ? 2 : 0));
  lc.output_bytes = tokens * h * c.B;
  lc.tp_message_bytes = tokens * h * c.B;
  if (c.t > 1) lc.tp_allreduces_fwd = 1;  // partial lookups of the vocabulary shards are summed
  return lc;
}

LayerCost lm_head_cost(const LayerSpec& l, const Ctx& c) {
  const double h = static_cast<double>(l.hidden), V = static_cast<double>(l.vocab);
  const double tokens = c.b * c.s;
  const double head_tokens = l.pooled ? c.b : tokens;  // a classifier reads one (pooled) token per sample
  const double norm = norm_params(h, l.norm, true);
  LayerCost lc;
  lc.params = norm + (l.tied_embeddings ? 0 : V * h) + (l.bias ? V : 0);
  lc.params_per_tp_rank = norm + (l.tied_embeddings ? 0 : V * h / c.t) + (l.bias ? V / c.t : 0);
  lc.shared_params = l.tied_embeddings ? V * h : 0;
  lc.shared_params_per_tp_rank = lc.shared_params / c.t;
  lc.fwd_gemms.push_back({head_tokens, V / c.t, h, 1});  // logits: 2·b·s·h·V in total
  finish_flops(lc);
  const double split = c.sp ? c.t : 1.0;
  lc.act_boundary_bytes = tokens * h * c.R / split;  // the final norm's input (eager stack: fp32 residual)
  double head_input = (l.norm != Norm::none || l.pooled) ? head_tokens * h * c.B / (l.pooled ? 1 : split) : 0;
  if (c.eager)  // what the eager norm saves and the head GEMM's autocast copy of its input (layer_eager.cpp)
    head_input = tokens * eager_norm_saved_bytes(l.norm, h, c.R, c.legacy_mean) / split +
                 head_tokens * eager_gemm_inputs_bytes(h, 1, c) / (l.pooled ? 1 : split);
  // The loss path (LossPath): fused keeps the fp32 softmax only; fp32 adds the logits and their gradients.
  const LossBytes loss = loss_bytes_per_token(c.loss, V / c.t);
  lc.act_intermediate_bytes = head_input + head_tokens * (loss.saved + loss.held);
  lc.fwd_elementwise_bytes = (l.norm != Norm::none ? 2 * tokens * h * c.B / split : 0) +
                             2 * head_tokens * (V / c.t) * kLogitBytes;
  lc.output_bytes = 0;  // the loss
  lc.tp_message_bytes = head_tokens * h * c.B;
  if (c.t > 1) lc.tp_allreduces_bwd = 1;  // gradient of the replicated head input
  return lc;
}

LayerCost patch_cost(const LayerSpec& l, const Ctx& c) {
  const double h = static_cast<double>(l.hidden);
  const double k = static_cast<double>(l.patch) * static_cast<double>(l.patch) * static_cast<double>(l.channels);  // features of one patch
  const double patches = c.s - (l.cls_token ? 1 : 0);
  const double positions = l.learned_positions ? static_cast<double>(l.seq > 0 ? l.seq : c.s) * h : 0;
  LayerCost lc;
  lc.params = k * h + (l.bias ? h : 0) + positions + (l.cls_token ? h : 0) + (l.pre_norm ? 2 * k : 0);
  lc.params_per_tp_rank = lc.params;
  lc.fwd_gemms.push_back({c.b * patches, h, k, 1});
  finish_flops(lc);
  lc.act_boundary_bytes = c.b * patches * k * c.B;
  lc.act_intermediate_bytes = (l.pre_norm ? c.b * patches * k * c.B : 0) + (l.dropout ? c.b * c.s * h : 0);
  lc.fwd_elementwise_bytes = (l.pre_norm ? 2 * c.b * patches * k * c.B : 0) +
                             (l.learned_positions ? 3 * c.b * c.s * h * c.B : 0);
  lc.output_bytes = c.b * c.s * h * c.B;
  return lc;
}

namespace {
// One convolution as an implicit GEMM: (b·Hout·Wout) × Cout × (Cin·k²).
void add_conv(LayerCost& lc, const LayerSpec& l, const Ctx& c, double cin, double cout, double kernel,
              double out_pixels) {
  lc.params += cin * cout * kernel * kernel + (l.bias ? cout : 0) + (l.conv.batch_norm ? 2 * cout : 0);
  lc.fwd_gemms.push_back({c.b * out_pixels, cout, cin * kernel * kernel, 1});
}
}  // namespace

LayerCost conv_cost(const LayerSpec& l, const Ctx& c) {
  const ConvShape& cv = l.conv;
  const double cin = static_cast<double>(cv.in_channels), cout = static_cast<double>(cv.out_channels);
  const double k = static_cast<double>(cv.kernel), stride = static_cast<double>(std::max<std::int64_t>(cv.stride, 1));
  const double in_px = static_cast<double>(cv.height) * static_cast<double>(cv.width);
  const double conv_px = in_px / (stride * stride);                            // after the strided conv
  const double out_px = static_cast<double>(cv.out_height) * static_cast<double>(cv.out_width);  // after pooling
  const double bn = cv.batch_norm ? 1 : 0, B = c.B, b = c.b;
  LayerCost lc;
  double stored = 0, traffic = 0;  // intermediates and non-GEMM traffic, in elements
  if (cv.bottleneck) {
    const double mid = static_cast<double>(cv.mid_channels);
    add_conv(lc, l, c, cin, mid, 1, in_px);
    add_conv(lc, l, c, mid, mid, k, conv_px);
    add_conv(lc, l, c, mid, cout, 1, conv_px);
    // Stored: BN inputs of every conv, ReLU outputs of conv1/conv2 (the next conv's inputs); the block's final
    // ReLU output is the next layer's boundary.
    stored = mid * in_px * (1 + bn) + mid * conv_px * (1 + bn) + cout * conv_px * bn;
    traffic = (mid * in_px + mid * conv_px) * (2 * bn + 2) + cout * conv_px * (2 * bn + 3 + 2);
    if (cin != cout || stride > 1) {  // projection shortcut
      add_conv(lc, l, c, cin, cout, 1, conv_px);
      stored += cout * conv_px * bn;
      traffic += cout * conv_px * 2 * bn;
    }
  } else {
    for (std::int64_t i = 0; i < cv.convs; ++i) add_conv(lc, l, c, i == 0 ? cin : cout, cout, k, conv_px);
    const double convs = static_cast<double>(cv.convs);
    stored = convs * cout * conv_px * (1 + bn);                  // [BN input +] ReLU output per conv
    traffic = convs * cout * conv_px * (2 * bn + 2) + (out_px < conv_px ? cout * (conv_px + out_px) : 0);
  }
  lc.params_per_tp_rank = lc.params;
  finish_flops(lc);
  lc.act_boundary_bytes = b * cin * in_px * B;
  lc.act_intermediate_bytes = c.rc == Recompute::full ? 0 : b * stored * B;
  lc.act_recomputed_bytes = c.rc == Recompute::full ? b * stored * B : 0;
  if (c.rc == Recompute::full) lc.recompute_flops = lc.fwd_flops;
  lc.fwd_elementwise_bytes = b * traffic * B;
  lc.output_bytes = b * cout * out_px * B;
  return lc;
}

LayerCost generic_cost(const LayerSpec& l, const Ctx& c) {
  const GenericNumbers& g = l.generic;
  LayerCost lc;
  lc.params = g.params;
  lc.params_per_tp_rank = g.params;
  lc.fwd_flops = c.b * g.fwd_flops_per_sample;
  lc.bwd_flops = c.b * (g.bwd_flops_per_sample > 0 ? g.bwd_flops_per_sample : 2 * g.fwd_flops_per_sample);
  const double input = std::min(g.input_bytes_per_sample, g.activation_bytes_per_sample);
  lc.act_boundary_bytes = c.b * input;
  lc.act_intermediate_bytes = c.rc == Recompute::full ? 0 : c.b * (g.activation_bytes_per_sample - input);
  lc.act_recomputed_bytes = c.rc == Recompute::full ? c.b * (g.activation_bytes_per_sample - input) : 0;
  if (c.rc == Recompute::full) lc.recompute_flops = lc.fwd_flops;
  lc.output_bytes = c.b * g.output_bytes_per_sample;
  return lc;
}

}  // namespace strata::model::detail
