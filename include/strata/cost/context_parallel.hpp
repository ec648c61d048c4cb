// cost/context_parallel: the communication of context parallelism (cp) per layer and micro-batch — ring attention's
// exchange of key/value blocks between the cp ranks of a sequence, and how much of it the attention compute hides.
//
// Ring attention (Liu, Zaharia, Abbeel 2023, "Ring Attention with Blockwise Transformers", §3; as implemented by
// Megatron-core / TransformerEngine context parallelism, `AttnFuncWithCPAndKVP2P`): each of the cp ranks holds
// seq/cp tokens of every sample (Q, K and V of its own chunk). The attention of a layer runs in cp steps; at each
// step a rank computes its queries against one K/V block while it passes the block it holds to the next rank of the
// ring and receives the next one, so cp − 1 transfers of one K/V block overlap cp − 1 steps of attention compute.
// The backward repeats the ring with the K/V blocks and the partial dK/dV gradients (2 blocks per transfer) and,
// after its last step, returns the last dK/dV block to its owner (not overlapped). Everything else of the layer
// (GEMMs, norms, activations) is per token and simply /cp (model::LayerQuery::cp); the DP gradient reduction runs
// over the dp·cp ranks that replicate the weights (Megatron's data-parallel group with context parallelism).
#pragma once
#include <cstdint>

#include "strata/cost/dims.hpp"
#include "strata/model/layer.hpp"

namespace strata::cost {

// Bytes of the K and V block one cp rank holds for one micro-batch of `micro_batch` samples of `seq` tokens:
//   2 · b · (seq/cp) · kv_heads_per_tp_rank · head_dim · bytes_per_element
// (kv_heads_per_tp_rank = max(kv_heads/tp, 1): Megatron replicates kv heads when tp > kv_heads). 0 for layers
// without self-attention.
// (tp and cp of `d`).
double cp_kv_block_bytes(const model::LayerSpec& l, std::int64_t micro_batch, std::int64_t seq, const Dims& d,
                         double bytes_per_element);

struct RingAttentionComm {
  int transfers_fwd = 0;        // K/V block transfers per rank in forward (cp − 1)
  int transfers_bwd = 0;        // K/V + dK/dV transfers in backward (cp − 1) plus the final dK/dV return (1)
  double busy_s = 0;            // time the ring's links are busy per micro-batch (all transfers)
  double fwd_exposed_s = 0;     // added to the forward attention beyond its compute
  double bwd_exposed_s = 0;     // added to the backward attention beyond its compute
};

// attn_fwd_s / attn_bwd_s: the layer's attention-core compute time on one rank (already 1/cp of the whole);
// step_s(bytes): the time of one ring step moving `bytes` per rank is given as α + β·bytes (step_latency_s,
// step_s_per_byte); kv_bytes = cp_kv_block_bytes; overlap_slowdown γ ≥ 1 (docs/cost-model.md):
//   c_f = attn_fwd/cp, x_f = α + β·kv;  fwd_exposed = (cp−1)·(overlapped(c_f, x_f) − c_f)
//   c_b = attn_bwd/cp, x_b = α + β·2kv; bwd_exposed = (cp−1)·(overlapped(c_b, x_b) − c_b) + x_f
//   overlapped(c, x) = max(c, x) + (γ − 1)·min(c, x);  busy = (cp−1)·(x_f + x_b) + x_f.   cp ≤ 1: all 0.
RingAttentionComm ring_attention_comm(int cp, double attn_fwd_s, double attn_bwd_s, double kv_bytes,
                                      double step_latency_s, double step_s_per_byte, double overlap_slowdown);

}  // namespace strata::cost
