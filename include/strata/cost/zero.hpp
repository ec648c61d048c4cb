// cost/zero: the per-layer communication of ZeRO-3 / FSDP (full shard) for one micro-batch — how many
// collectives run, how long they keep the links busy, and how much of that the neighbouring layer's compute hides.
//
// FSDP / DeepSpeed ZeRO-3 (Rajbhandari et al. 2020 §5; PyTorch FSDP, Zhao et al. 2023 §3.3): per micro-batch and
// per layer (wrap unit), an all-gather of the layer's weights before its forward, another before its backward
// (the forward's copy is freed: reshard_after_forward), and a reduce-scatter of its gradients after its backward.
// Prefetching overlaps the gather of layer ℓ with the compute of the layer before it (forward: ℓ−1; backward:
// ℓ+1, together with the reduce-scatter of ℓ+1's gradients), so a collective can hide only behind that
// neighbour's compute, and both slow down by the contention factor while they overlap.
#pragma once

namespace strata::cost {

struct Zero3LayerComm {
  int gathers = 0;                 // all-gathers of the layer's weights per micro-batch (forward + backward)
  int reduce_scatters = 0;         // reduce-scatters of its gradients per micro-batch
  double busy_s = 0;               // time the collectives keep the links busy per micro-batch (all of them)
  double fwd_exposed_s = 0;        // added to the forward beyond the neighbour's compute
  double bwd_exposed_s = 0;        // added to the backward beyond the neighbour's compute
};

// gather_s / reduce_scatter_s: one collective of the layer's unsharded weights (gradients) over the dp group;
// neighbour_fwd_s / neighbour_bwd_s: the compute that can hide them (the neighbouring layer's forward /
// backward; for a stack of identical blocks the layer's own); overlap_slowdown γ ≥ 1 (docs/cost-model.md):
//   fwd_exposed = overlapped(neighbour_fwd, gather) − neighbour_fwd
//   bwd_exposed = overlapped(neighbour_bwd, gather + reduce_scatter) − neighbour_bwd
//   overlapped(c, x) = max(c, x) + (γ − 1)·min(c, x);   busy = 2·gather + reduce_scatter.
Zero3LayerComm zero3_layer_comm(double gather_s, double reduce_scatter_s, double neighbour_fwd_s,
                                double neighbour_bwd_s, double overlap_slowdown);

}  // namespace strata::cost
