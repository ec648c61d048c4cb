// cost/overlap: Oases' overlapped tensor-parallel schedule (two sub-batches, one's TP collective hidden behind
// the other's compute) — the chain formula of notes_002 §4.2 and its per-layer form used by layer_stage_cost —
// and the chunked collective matmul (overlap=async). See overlap.hpp.
#include "strata/cost/overlap.hpp"

#include <algorithm>
#include <cstddef>
#include <stdexcept>

#include "strata/cost/constants.hpp"

namespace strata::cost {

double overlapped_pair_time(double compute_s, double comm_s, double slowdown) {
  // Both run slowed by γ while they overlap (the contention model of cost/stage's DP overlap, Galvatron).
  return std::max(compute_s, comm_s) + (slowdown - 1.0) * std::min(compute_s, comm_s);
}

double overlapped_chain_time(std::span<const double> compute_s, std::span<const double> comm_s, double slowdown) {
  if (compute_s.empty() || compute_s.size() != comm_s.size())
    throw std::invalid_argument("overlapped_chain_time: compute and comm need the same size >= 1");
  // Timeline (notes_002 §4.2): a.c_0 | ov(b.c_0, a.d_0) | ov(a.c_1, b.d_0) | ov(b.c_1, a.d_1) | … | b.d_{V−1}.
  const std::size_t n = compute_s.size();
  double t = compute_s[0];
  for (std::size_t v = 0; v < n; ++v) {
    const double next = v + 1 < n ? compute_s[v + 1] : 0.0;
    t += overlapped_pair_time(compute_s[v], comm_s[v], slowdown) + overlapped_pair_time(next, comm_s[v], slowdown);
  }
  return t;
}

double blocking_chain_time(std::span<const double> compute_s, std::span<const double> comm_s) {
  double t = 0;
  for (std::size_t v = 0; v < compute_s.size() && v < comm_s.size(); ++v) t += compute_s[v] + comm_s[v];
  return t;
}

double overlapped_block_time(double compute_s, double comm_s, double slowdown) {
  return 2.0 * overlapped_pair_time(compute_s, comm_s, slowdown);
}

void apply_tp_overlap(const model::Model& m, const model::LayerSpec& layer, const StageContext& ctx,
                      model::Recompute mode, const model::LayerCost& lc, LayerStageCost& out) {
  const Strategy& s = *ctx.strategy;
  if (s.tp < 2 || lc.tp_allreduces_fwd <= 0 || s.micro_batch < 2) return;
  // One sub-batch, costed by the same layer_stage_cost (GEMM efficiency and collectives at mbs/2).
  Strategy half = s;
  half.micro_batch = s.micro_batch / 2;
  half.tp_overlap = false;
  StageContext hctx = ctx;
  hctx.strategy = &half;
  const LayerStageCost h = layer_stage_cost(m, layer, hctx, mode);
  const double gamma = ctx.constants->tp_overlap_slowdown;
  // Blocks per pass: one collective (all-reduce, or RS+AG pair under sp) closes each block; full recompute
  // re-runs the forward's collectives inside the backward blocks (oases recompute runs none: notes_002 §3.4).
  const double nf = lc.tp_allreduces_fwd, nb = std::max(1, lc.tp_allreduces_bwd);
  const double fwd = nf * overlapped_block_time(h.fwd_compute_s / nf, h.tp_comm_fwd_s / nf, gamma);
  const double bwd = nb * overlapped_block_time(h.bwd_compute_s / nb, h.tp_comm_bwd_s / nb, gamma);
  out.fwd_compute_s = 2.0 * h.fwd_compute_s;
  out.bwd_compute_s = 2.0 * h.bwd_compute_s;
  out.recompute_s = 2.0 * h.recompute_s;
  out.tp_comm_fwd_s = std::max(0.0, fwd - out.fwd_compute_s);
  out.tp_comm_bwd_s = std::max(0.0, bwd - out.bwd_compute_s);
  out.tp_blocks_fwd = lc.tp_allreduces_fwd;
  out.tp_blocks_bwd = static_cast<int>(nb);
  out.tp_sub_comm_fwd_s = h.tp_comm_fwd_s;
  out.tp_sub_comm_bwd_s = h.tp_comm_bwd_s;
}

double async_block_time(double compute_s, double comm_s, int tp, double slowdown) {
  if (tp < 2) return compute_s + comm_s;
  const double n = tp;
  return (n - 1.0) * overlapped_pair_time(compute_s / n, comm_s / (n - 1.0), slowdown) + compute_s / n;
}

void apply_tp_async_overlap(const StageContext& ctx, model::Recompute mode, const model::LayerCost& lc,
                            LayerStageCost& out) {
  const Strategy& s = *ctx.strategy;
  if (s.tp < 2 || !s.sequence_parallel || lc.tp_allreduces_fwd <= 0) return;
  const double gamma = ctx.constants->tp_async_overlap_slowdown;
  // Blocks per pass as layer_stage_cost counted the collectives: forward's pairs, backward's (+ the forward's
  // again under full recompute, + half of them under per-op SAC, which re-runs the all-gathers).
  const double nf = lc.tp_allreduces_fwd;
  double nb = std::max(1, lc.tp_allreduces_bwd);
  nb += recomputed_tp_collectives(mode, lc, true);
  if (mode == model::Recompute::op) nb += 0.5 * nf;
  const double fwd = nf * async_block_time(out.fwd_compute_s / nf, out.tp_comm_fwd_s / nf, s.tp, gamma);
  const double bwd = nb * async_block_time(out.bwd_compute_s / nb, out.tp_comm_bwd_s / nb, s.tp, gamma);
  out.tp_comm_fwd_s = std::max(0.0, fwd - out.fwd_compute_s);
  out.tp_comm_bwd_s = std::max(0.0, bwd - out.bwd_compute_s);
}

void apply_tp_async_overlap_sites(const StageContext& ctx, model::Recompute mode, const model::LayerCost& lc,
                                  double elem_bytes, double collective_s, LayerStageCost& out) {
  const Strategy& s = *ctx.strategy;
  if (s.tp < 2 || !s.sequence_parallel || lc.tp_sites().empty()) return;
  const double gamma = ctx.constants->tp_async_overlap_slowdown;
  const auto exposed = [&](double gemm_s) { return async_block_time(gemm_s, collective_s, s.tp, gamma) - gemm_s; };
  double fwd = 0, regather = 0, last_scatter = 0;
  for (const auto& site : lc.tp_sites()) {
    double gather_s = 0;
    for (int i = site.gather_first; i < site.gather_first + site.gather_count; ++i)
      gather_s += gemm_time_s(ctx, lc.fwd_gemms[static_cast<std::size_t>(i)], elem_bytes);
    last_scatter = exposed(gemm_time_s(ctx, lc.fwd_gemms[static_cast<std::size_t>(site.scatter_gemm)], elem_bytes));
    fwd += exposed(gather_s) + last_scatter;
    regather += exposed(site.op_regather_share * gather_s);
  }
  double bwd = fwd;
  if (mode == model::Recompute::full) bwd += lc.recompute_skips_last_gemm ? fwd - last_scatter : fwd;
  else if (mode == model::Recompute::op) bwd += regather;
  out.tp_comm_fwd_s = fwd;
  out.tp_comm_bwd_s = bwd;
}

}  // namespace strata::cost
