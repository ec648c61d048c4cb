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
};

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
