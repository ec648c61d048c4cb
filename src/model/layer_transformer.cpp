// model/layer_transformer: the numbers of transformer-type blocks — GPT/LLaMA blocks, T5 encoder and decoder
// (with cross-attention) — per tensor-parallel rank, built from three parts: self-attention, cross-attention
// (decoder only) and the MLP (GELU/ReLU: 2 GEMMs, SwiGLU: 3 GEMMs, optional MoE with top-k routing).
//
// Sources:
//  - GEMMs / FLOPs: Narayanan et al. 2021 (PTD-P, notes_003 §3.7): forward per GPT layer 24bsh² + 4bs²h
//    (QKV 6bsh², scores 2bs²h, values 2bs²h, projection 2bsh², MLP 16bsh²); backward = 2× forward.
//  - Activations: Korthikanti et al. 2022 §4: per layer sbh(34 + 5as/h) bytes in 16-bit with dropout; tensor
//    parallel sbh(10 + 24/t + 5as/(ht)); tensor + sequence parallel sbh/t·(34 + 5as/h); selective recompute
//    drops the 5as/h term; full recompute keeps only the 2sbh input. We derive those numbers from the tensors
//    (so GQA, SwiGLU, windows, cross-attention and other dtypes follow the same accounting): in 16-bit,
//      replicated on every tp rank (split only by sp): both norm inputs 4sbh, QKV input 2sbh, fc1 input 2sbh,
//        two dropout masks 2sbh (1 byte each)                                          → 10sbh
//      split over tp: Q,K,V 6sbh, projection input 2sbh, GeLU input and output 16sbh   → 24sbh
//      attention: softmax output 2as²b, dropout mask as²b, dropout output 2as²b        → 5as²b
//    With the flash kernel (LayerQuery::attention) the 5as²b term is never stored; the kernel keeps a 4-byte
//    log-sum-exp per head and query (4abs), so flash = selective recompute's bytes + 4abs, without its recompute.
//  - Megatron tensor parallelism: 2 all-reduces of b·s·h in forward and 2 in backward per block (one after
//    attention, one after the MLP); the decoder's cross-attention adds one each way.
#include <algorithm>
#include <cmath>
#include <vector>

#include "layer_impl.hpp"

namespace strata::model::detail {
namespace {

// Running per-rank totals of one block while its parts are added.
struct Acc {
  double params = 0, params_rank = 0;
  std::vector<Gemm> gemms;
  double score_flops = 0;          // score and value products: what selective recompute re-runs
  double flash_flops = 0;          // the same products inside a fused flash kernel (not re-run by selective)
  double flash_work_flops = 0;     // what the fused kernel executes (causal: the tiles on and below the diagonal)
  double repl_bytes = 0;           // stored on every tp rank (divided by t only under sp)
  double split_bytes = 0;          // stored per rank, already divided by t
  double score_bytes = 0;          // attention softmax/dropout, per rank (dropped by selective recompute)
  double elementwise_bytes = 0;    // non-GEMM memory traffic, per rank
  int allreduces = 0;              // per direction
  std::array<TpCollectiveSite, LayerCost::kMaxTpSites> sites{};  // the GEMMs around each all-reduce (tp_sites)
  // Per-op selective checkpointing (Recompute::op, torchtitan): the matmuls it re-runs (every second one in
  // forward order: wk, wo, then w3 of SwiGLU or fc2 of a GELU MLP) and what it keeps (the other matmuls'
  // outputs, the attention output and its statistics, the MLP's reduce-scattered output), per rank.
  double op_recompute_flops = 0;
  double op_saved_bytes = 0;
};

// Share of the score/value tiles a causal flash kernel computes: with the keys cut into n = ⌈kv_len/T⌉ tiles
// of T = 128 per side, the tiles strictly above the diagonal are skipped, n(n+1)/2 of n² remain (FlashAttention-2,
// Dao 2023, arXiv 2307.08691 §3.1.1 "Causal masking": blocks whose columns all exceed the row indices are
// skipped, about half of them for long sequences; the 128-wide tile is FA2's and cuDNN's forward block). Under
// context parallelism Megatron's load-balanced split (2·cp chunks) gives every rank the same share.
double causal_tile_fraction(double kv_len) {
  constexpr double kTile = 128;
  const double n = std::max(1.0, std::ceil(kv_len / kTile));
  return (n + 1) / (2 * n);
}

struct Shape {
  double h, a, kv, d, a_r, kv_r;   // hidden, heads, kv heads, head dim, heads and kv heads per tp rank
};

Shape shape_of(const LayerSpec& l, const Ctx& c) {
  Shape sh;
  sh.h = static_cast<double>(l.hidden);
  sh.a = static_cast<double>(l.heads);
  sh.kv = static_cast<double>(l.kv_heads > 0 ? l.kv_heads : l.heads);
  sh.d = sh.h / sh.a;
  sh.a_r = sh.a / c.t;
  // Megatron replicates kv heads when t > kv_heads (each rank keeps one).
  sh.kv_r = std::max(sh.kv / c.t, 1.0);
  return sh;
}

// One attention sub-block with its pre-norm. Queries: q_len tokens per sample; keys/values: kv_len tokens
// (self-attention: kv_len = q_len; cross: the encoder length). `window` = tokens attended per query (Swin's
// windowed attention computes q_len/window independent window×window products).
void add_attention(Acc& acc, const LayerSpec& l, const Ctx& c, double q_len, double kv_len, bool cross) {
  const Shape sh = shape_of(l, c);
  const double b = c.b, t = c.t, B = c.B;
  const double kv_width = 2 * sh.kv * sh.d, kv_width_r = 2 * sh.kv_r * sh.d;
  const double norm = norm_params(sh.h, l.norm, l.bias);
  acc.params += sh.h * sh.h + sh.h * kv_width + sh.h * sh.h + (l.bias ? 2 * sh.h + kv_width : 0) + norm;
  acc.params_rank += sh.h * (sh.h / t) + sh.h * kv_width_r + (sh.h / t) * sh.h +
                     (l.bias ? sh.h / t + kv_width_r + sh.h : 0) + norm;
  // GEMMs of one rank: column-parallel Q/K/V, batched products over the rank's heads, row-parallel projection.
  TpCollectiveSite site;
  site.gather_first = static_cast<int>(acc.gemms.size());
  site.gather_count = cross ? 2 : 1;
  site.op_regather_share = cross ? 0.0 : sh.kv_r * sh.d / (sh.h / t + kv_width_r);  // wk of the fused Q/K/V GEMM
  if (cross) {
    acc.gemms.push_back({b * q_len, sh.h / t, sh.h, 1});
    acc.gemms.push_back({b * kv_len, kv_width_r, sh.h, 1});
  } else {
    acc.gemms.push_back({b * q_len, sh.h / t + kv_width_r, sh.h, 1});
  }
  double span = kv_len, groups = 1;  // keys per query, independent attention groups per sample and head
  if (!cross && l.attention_window > 0 && l.attention_window < q_len) {
    span = static_cast<double>(l.attention_window);
    groups = q_len / span;
  }
  const double q_group = q_len / groups;
  const Gemm score{q_group, span, sh.d, b * sh.a_r * groups};
  const Gemm values{q_group, sh.d, span, b * sh.a_r * groups};
  if (c.flash) {
    // Fused kernel: the products' FLOPs count, but they are not GEMMs with an s² output in memory.
    acc.flash_flops += score.flops() + values.flops();
    const bool masked = l.causal && !cross && span == kv_len;  // windowed attention (Swin) is not causal here
    acc.flash_work_flops += (score.flops() + values.flops()) * (masked ? causal_tile_fraction(kv_len) : 1.0);
  } else {
    acc.gemms.push_back(score);
    acc.gemms.push_back(values);
    acc.score_flops += score.flops() + values.flops();
  }
  site.scatter_gemm = static_cast<int>(acc.gemms.size());
  acc.sites[static_cast<std::size_t>(acc.allreduces)] = site;
  acc.gemms.push_back({b * q_len, sh.h, sh.h / t, 1});
  // torchtitan's mm order in a block: wq (1), wk (2), wv (3), wo (4): per-op SAC re-runs wk and wo.
  acc.op_recompute_flops += 2 * b * q_len * sh.h * (sh.kv_r * sh.d) + 2 * b * q_len * (sh.h / t) * sh.h;
  acc.op_saved_bytes += b * q_len * (sh.h / t + sh.kv_r * sh.d + sh.h / t) * B +  // wq, wv outputs, attention out
                        (c.flash ? b * sh.a_r * q_len * 4.0 : 0.0);               // flash log-sum-exp
  // Stored activations (Korthikanti accounting, see the file comment; the eager stack: layer_eager.cpp).
  const double tokens = b * q_len;
  const double probs = b * sh.a_r * q_len * span;                       // attention probabilities per rank
  if (c.eager) {
    const StoredPart p = eager_attention_stored(l, c, {tokens, b * kv_len, probs, cross});
    acc.repl_bytes += p.repl;
    acc.split_bytes += p.split;
    acc.score_bytes += p.score;
  } else {
    acc.repl_bytes += tokens * (sh.h * B + sh.h * c.Bg + (l.dropout ? sh.h : 0));  // norm input, QKV input, mask
    acc.split_bytes += tokens * (sh.h / t) * (B + c.Bg)                  // Q and the projection input
                       + b * (cross ? kv_len : q_len) * kv_width_r * B;  // K and V (self: the rank's own)
    // FlashAttention keeps one fp32 log-sum-exp per query row and head for its backward (Dao et al. 2022 §3.1);
    // dropout is regenerated from the RNG state, so no mask is stored.
    if (c.flash)
      acc.split_bytes += b * sh.a_r * q_len * 4.0;
    else
      acc.score_bytes += probs * (l.dropout ? 2 * B + 1 : B);
  }
  // Non-GEMM traffic: norm (read+write), softmax (read+write) [+ dropout on probs], residual add (2 reads,
  // 1 write) [+ dropout on the output]. The flash kernel does softmax and dropout in on-chip memory.
  const double repl_tokens = c.sp ? tokens / t : tokens;
  acc.elementwise_bytes += (eager_autocast(c) ? tokens * eager_attention_traffic_bytes(l, c)
                                              : repl_tokens * sh.h * B * (2 + 3 + (l.dropout ? 2 : 0))) +
                           (c.flash ? 0.0 : probs * B * (2 + (l.dropout ? 2 : 0)));
  acc.allreduces += 1;
}

// The MLP with its pre-norm; MoE when experts > 0: each token runs through top_k of `experts` MLPs (the
// experts' weights are tensor-parallel like a dense MLP; expert parallelism is not modelled) plus a router.
void add_mlp(Acc& acc, const LayerSpec& l, const Ctx& c, double len) {
  const double h = static_cast<double>(l.hidden), f = static_cast<double>(l.ffn);
  const double b = c.b, t = c.t, B = c.B, tokens = b * len;
  const bool swiglu = l.activation == Activation::swiglu;
  const bool moe = l.experts > 0;
  const double experts = moe ? static_cast<double>(l.experts) : 1.0;
  const double k = moe ? static_cast<double>(l.top_k) : 1.0;  // expert MLPs per token
  const double up = swiglu ? 2 : 1;                           // input-side matrices (gate + up for SwiGLU)
  const double norm = norm_params(h, l.norm, l.bias);
  const double mlp = (up + 1) * h * f + (l.bias ? up * f + h : 0);
  const double mlp_r = (up + 1) * h * f / t + (l.bias ? up * f / t + h : 0);
  const double router = moe ? h * experts : 0;
  acc.params += experts * mlp + router + norm;
  acc.params_rank += experts * mlp_r + router + norm;
  TpCollectiveSite site;  // the gathered input feeds the router and the input-side matrices
  site.gather_first = static_cast<int>(acc.gemms.size());
  if (moe) acc.gemms.push_back({tokens, experts, h, 1});
  for (int i = 0; i < static_cast<int>(up); ++i) acc.gemms.push_back({tokens * k, f / t, h, 1});
  site.gather_count = static_cast<int>(acc.gemms.size()) - site.gather_first;
  if (swiglu) {  // per-op SAC re-runs w3, one of the two input-side matrices
    const double router_flops = moe ? acc.gemms[static_cast<std::size_t>(site.gather_first)].flops() : 0.0;
    const double w3_flops = acc.gemms.back().flops();
    site.op_regather_share = w3_flops / (router_flops + up * w3_flops);
  }
  site.scatter_gemm = static_cast<int>(acc.gemms.size());
  acc.sites[static_cast<std::size_t>(acc.allreduces)] = site;
  acc.gemms.push_back({tokens * k, h, f / t, 1});
  // mm order continues w1 (5), w3 (6), w2 (7) for SwiGLU (per-op SAC re-runs w3), fc1 (5), fc2 (6) for GELU
  // (re-runs fc2); kept: w1's or fc1's output and the block output after the reduce-scatter (/t under sp).
  acc.op_recompute_flops += 2 * tokens * k * h * (f / t);
  acc.op_saved_bytes += tokens * k * (f / t) * B + tokens * h * B / (c.sp ? t : 1.0);
  // Stored: norm input, fc1 input, dropout mask (replicated); activation input/output (GELU: 2·ffn,
  // SwiGLU: gate, up and their product = 3·ffn) per routed token (split); router probabilities.
  if (c.eager) {
    const StoredPart p = eager_mlp_stored(l, c, tokens, k);
    acc.repl_bytes += p.repl;
    acc.split_bytes += p.split;
  } else {
    acc.repl_bytes += tokens * (h * B + h * c.Bg + (l.dropout ? h : 0) + (moe ? experts * B : 0));
    acc.split_bytes += tokens * k * (f / t) * ((swiglu ? 2 : 1) * B + c.Bg);  // the last: fc2's input
  }
  const double repl_tokens = c.sp ? tokens / t : tokens;
  acc.elementwise_bytes += eager_autocast(c) ? tokens * eager_mlp_traffic_bytes(l, c, k)
                                             : repl_tokens * h * B * (2 + 3 + (l.dropout ? 2 : 0)) +
                                                   tokens * k * (f / t) * B * (swiglu ? 3 : 2);
  acc.allreduces += 1;
}

}  // namespace

LayerCost transformer_cost(const LayerSpec& l, const Ctx& c) {
  const double h = static_cast<double>(l.hidden);
  const double enc = l.encoder_seq > 0 ? static_cast<double>(l.encoder_seq) : c.s;
  const bool decoder = l.kind == LayerKind::decoder;
  Acc acc;
  add_attention(acc, l, c, c.s, c.s_keys > 0 ? c.s_keys : c.s, false);
  if (decoder) add_attention(acc, l, c, c.s, enc, true);
  add_mlp(acc, l, c, c.s);

  LayerCost lc;
  lc.params = acc.params;
  lc.params_per_tp_rank = acc.params_rank;
  lc.fwd_gemms = std::move(acc.gemms);
  finish_flops(lc);
  lc.flash_attention_flops = acc.flash_flops;
  lc.flash_attention_work_flops = acc.flash_work_flops;
  lc.flash_attention_bwd_work_flops = kFlashBackwardWorkRatio * acc.flash_work_flops;
  lc.fwd_flops += acc.flash_flops;  // counted as model FLOPs; backward = 2× forward as for the GEMMs (PTD-P)
  lc.bwd_flops = 2.0 * lc.fwd_flops;
  lc.fwd_elementwise_bytes = acc.elementwise_bytes;
  const double repl = c.sp ? acc.repl_bytes / c.t : acc.repl_bytes;
  lc.act_boundary_bytes = c.b * c.s * h * c.R / (c.sp ? c.t : 1.0);  // the first norm's input
  const double stored_all = repl + acc.split_bytes + acc.score_bytes;
  double stored = stored_all;
  switch (c.rc) {
    case Recompute::none: break;
    case Recompute::selective:  // Korthikanti §5: re-run the score/softmax/value part only
      stored -= acc.score_bytes;
      lc.recompute_flops = acc.score_flops;
      break;
    case Recompute::full:  // checkpoint the block input; re-run the whole forward (or all but its tail)
      stored = lc.act_boundary_bytes;
      lc.recompute_flops = lc.fwd_flops;
      // Early stop (LayerQuery): the backward needs the output projection's input, not its output, so the
      // re-run ends before the last GEMM (add_mlp pushes it last).
      if (c.early_stop && !lc.fwd_gemms.empty()) {
        lc.recompute_flops -= lc.fwd_gemms.back().flops();
        lc.recompute_skips_last_gemm = true;
      }
      break;
    case Recompute::oases:  // Oases §3.4 (notes_002 §3.4, code CommOptimizedOverlapCheckpoint): checkpoints after
      // each all-reduce — (attention output, block input) and (MLP output, residual): 4 [s, b, h] tensors
      // (/t under sp); the backward re-runs the whole forward compute but none of its collectives.
      stored = std::min(stored_all, 4.0 * lc.act_boundary_bytes);
      lc.recompute_flops = lc.fwd_flops;
      break;
    case Recompute::op:  // torchtitan per-op SAC: the block input and the kept outputs (see Acc)
      stored = std::min(stored_all, lc.act_boundary_bytes + acc.op_saved_bytes);
      lc.recompute_flops = acc.op_recompute_flops;
      break;
  }
  lc.act_intermediate_bytes = stored - lc.act_boundary_bytes;
  lc.act_recomputed_bytes = stored_all - stored;
  // The decoder hands the encoder output along with its own hidden state (the cross-attention input).
  lc.output_bytes = c.b * (c.s + (decoder ? enc : 0)) * h * c.B;
  if (c.t > 1) {
    lc.tp_allreduces_fwd = acc.allreduces;
    lc.tp_allreduces_bwd = acc.allreduces;
    lc.tp_site_slots = acc.sites;
    lc.tp_site_count = acc.allreduces;
  }
  lc.tp_message_bytes = c.b * c.s * h * c.B;
  return lc;
}

}  // namespace strata::model::detail
