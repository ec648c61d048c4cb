// cost/overlap: Oases' overlapped tensor parallelism (seed_002 §3–4, notes_002 §3–4.2) in the cost model. The
// micro-batch is split into two sub-batches a, b; while one computes a block (the ops between two TP
// collectives), the other's collective of the previous block runs. For a chain of V blocks with per-sub-batch
// compute c_v and collective d_v (notes_002 §4.2, the planner's Eq. 3 rebuilt):
//
//   T = c_0 + Σ_{v=0}^{V−1} [ ov(c_v, d_v) + ov(c_{v+1}, d_v) ],   c_V = 0 (the last collective is exposed),
//   ov(c, d) = max(c, d) + (γ − 1)·min(c, d)      γ = tp_overlap_slowdown (shared SMs / memory bandwidth)
//
// Backward likewise with c = backward (+ recompute) compute of a sub-batch. γ = 1 and d ≤ c everywhere gives
// 2·Σ c (fully hidden); d = 0 gives the Megatron time of two half-batches. Inside the per-layer cost sum the
// chain is cut into blocks with c_{v+1} ≈ c_v (identical neighbours; the Oases planner's own linearisation,
// notes_002 §4.2): one block costs 2·ov(c, d).
#pragma once
#include <span>

#include "strata/cost/stage.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {

// ov(c, d) above: one sub-batch computing `compute_s` while the other's collective `comm_s` runs.
double overlapped_pair_time(double compute_s, double comm_s, double slowdown);
// The whole chain formula above (per-sub-batch compute_s[v], comm_s[v], same size V ≥ 1).
double overlapped_chain_time(std::span<const double> compute_s, std::span<const double> comm_s, double slowdown);
// The same chain without overlap (Megatron): Σ_v (C_v + D_v) of the whole micro-batch.
double blocking_chain_time(std::span<const double> compute_s, std::span<const double> comm_s);
// One block inside a long chain of identical blocks: 2·ov(c, d).
double overlapped_block_time(double compute_s, double comm_s, double slowdown);

// Re-times `out` (a layer costed for the whole micro-batch, TP collectives blocking) under the overlapped
// schedule: the layer is costed again at mbs/2 (GEMM efficiency and collective α–β at the sub-batch size) and
// its blocks (lc.tp_allreduces_fwd / _bwd of them) use overlapped_block_time. Afterwards fwd_compute_s /
// bwd_compute_s / recompute_s are the two sub-batches' compute and tp_comm_*_s the exposed remainder
// (fwd_s = fwd_compute_s + tp_comm_fwd_s still holds). No-op when the layer has no TP collective.
void apply_tp_overlap(const model::Model& m, const model::LayerSpec& layer, const StageContext& ctx,
                      model::Recompute mode, const model::LayerCost& lc, LayerStageCost& out);

// Chunked collective matmul (`overlap=async`; Wang et al., ASPLOS 2023, "Overlap Communication with Dependent
// Computation via Decomposition"; Megatron/TransformerEngine --tp-comm-overlap, torchtitan async TP). Each
// sequence-parallel all-gather (before a column-parallel GEMM) or reduce-scatter (after a row-parallel GEMM)
// is cut into n = tp ring steps; step k's transfer (d/(n−1)) runs beside GEMM chunk k (c/n), and one GEMM chunk
// has no transfer beside it (the ring's fill or drain):
//
//   T_block(c, d) = (n − 1)·ov(c/n, d/(n − 1)) + c/n      ov as above, γ = tp_async_overlap_slowdown
//
// c = a block's compute (the layer's pass compute over its collectives), d = its collective (RS + AG pair).
// d ≤ c·(n−1)/n gives c + (γ − 1)·d: only the contention stays exposed; c = 0 gives d (nothing to hide).
double async_block_time(double compute_s, double comm_s, int tp, double slowdown);
// Re-times `out` (TP collectives blocking) with async_block_time per block, c = the block's share of the layer's
// pass compute; compute unchanged, tp_comm_*_s the exposed remainder. No-op without sequence parallelism or a TP
// collective. The form for layers without tp_sites (embedding, generic layers) and for measured profiles, whose
// compute is one measured number per pass.
void apply_tp_async_overlap(const StageContext& ctx, model::Recompute mode, const model::LayerCost& lc,
                            LayerStageCost& out);
// The form for blocks with tp_sites: each collective is fused only with the GEMMs around it (an all-gather with
// the column-parallel GEMMs that read its output, a reduce-scatter with the row-parallel GEMM that produces its
// input), c = those GEMMs' time (gemm_time_s), d = collective_s (one all-gather or reduce-scatter):
//   forward exposed  = Σ_sites [T(c_gather, d) − c_gather] + [T(c_scatter, d) − c_scatter]
//   backward exposed = the same (each collective's transpose beside the same GEMMs' dgrad, equal FLOPs)
//                      + full recompute: the forward's again, less the last reduce-scatter under early stop
//                      + per-op SAC: each re-run all-gather beside the re-run share of its GEMMs (op_regather_share)
// Attention, norms and element-wise work hide nothing: PyTorch's micro-pipeline TP and TransformerEngine's
// userbuffers both decompose only the GEMM next to the collective. No-op as above.
void apply_tp_async_overlap_sites(const StageContext& ctx, model::Recompute mode, const model::LayerCost& lc,
                                  double elem_bytes, double collective_s, LayerStageCost& out);

}  // namespace strata::cost
