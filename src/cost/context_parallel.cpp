// cost/context_parallel: ring attention's K/V exchange per layer and micro-batch and its overlap with the attention
// compute (see context_parallel.hpp for the model and its sources).
#include "strata/cost/context_parallel.hpp"

#include <algorithm>

namespace strata::cost {

double cp_kv_block_bytes(const model::LayerSpec& l, std::int64_t micro_batch, std::int64_t seq, const Dims& d,
                         double bytes_per_element) {
  const int tp = d.tp, cp = d.cp;
  const bool self_attention = l.kind == model::LayerKind::transformer || l.kind == model::LayerKind::encoder ||
                              l.kind == model::LayerKind::decoder;
  if (!self_attention || l.heads <= 0 || l.hidden <= 0 || cp < 1 || tp < 1) return 0;
  const double heads = static_cast<double>(l.heads);
  const double kv = static_cast<double>(l.kv_heads > 0 ? l.kv_heads : l.heads);
  const double head_dim = static_cast<double>(l.hidden) / heads;
  const double kv_per_rank = std::max(kv / tp, 1.0);
  const double tokens = static_cast<double>(micro_batch) * static_cast<double>(seq) / cp;
  return 2.0 * tokens * kv_per_rank * head_dim * bytes_per_element;
}

RingAttentionComm ring_attention_comm(int cp, double attn_fwd_s, double attn_bwd_s, double kv_bytes,
                                      double step_latency_s, double step_s_per_byte, double overlap_slowdown) {
  RingAttentionComm r;
  if (cp <= 1 || !(kv_bytes > 0)) return r;
  // Compute and communication overlapping on one device both slow down by γ (Galvatron): max + (γ−1)·min.
  const auto exposed = [overlap_slowdown](double compute, double comm) {
    return std::max(compute, comm) + (overlap_slowdown - 1.0) * std::min(compute, comm) - compute;
  };
  const double steps = cp - 1;
  const double c_f = std::max(0.0, attn_fwd_s) / cp, c_b = std::max(0.0, attn_bwd_s) / cp;
  const double x_f = step_latency_s + step_s_per_byte * kv_bytes;        // one K/V block
  const double x_b = step_latency_s + step_s_per_byte * 2.0 * kv_bytes;  // K/V + dK/dV
  r.transfers_fwd = cp - 1;
  r.transfers_bwd = cp;
  r.busy_s = steps * (x_f + x_b) + x_f;
  r.fwd_exposed_s = steps * exposed(c_f, x_f);
  r.bwd_exposed_s = steps * exposed(c_b, x_b) + x_f;  // the last dK/dV block goes home after the last step
  return r;
}

}  // namespace strata::cost
