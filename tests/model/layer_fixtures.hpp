// tests/model/layer_fixtures: layer specs shared by the model tests.
#pragma once
#include <cstdint>

#include "strata/model/layer.hpp"

namespace strata::model::testing {

// A GPT block (MHA, ffn = 4h) of hidden h, a heads, sequence s: the shape of Korthikanti's and PTD-P's formulas.
inline LayerSpec gpt_block(std::int64_t h, std::int64_t a, std::int64_t s) {
  LayerSpec l;
  l.kind = LayerKind::transformer;
  l.name = "block";
  l.hidden = h;
  l.heads = a;
  l.kv_heads = a;
  l.ffn = 4 * h;
  l.seq = s;
  return l;
}

// A Llama-3-8B block: GQA with 8 kv heads, SwiGLU 14336, RMSNorm, no biases, no dropout.
inline LayerSpec llama3_8b_block() {
  LayerSpec l = gpt_block(4096, 32, 8192);
  l.kv_heads = 8;
  l.ffn = 14336;
  l.activation = Activation::swiglu;
  l.norm = Norm::rmsnorm;
  l.bias = false;
  l.dropout = false;
  return l;
}

}  // namespace strata::model::testing
