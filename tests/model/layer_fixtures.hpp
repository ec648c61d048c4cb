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

}  // namespace strata::model::testing
