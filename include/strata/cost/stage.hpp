// cost/stage: the per-layer / per-stage building blocks of the cost model, shared by estimate(), the planner's
// exact layer-split DP and the simulator. estimate() is composed of exactly these functions, so a planner that
// sums layer_stage_costs over a contiguous range and calls pipeline_iteration_time gets the same number as
// estimate() for that split (tests/cost checks this identity).
//
//   stage time        t_i = Σ_{layers of stage i} (fwd_s + bwd_s)                         (per micro-batch)
//   stage memory      M_i = stage_memory(ctx, i, Σ layers)  (weights·versions + grads + optimizer
//                           + in_flight_micro_batches(...)·Σ activation_bytes + buffers + workspace, per device)
//   p2p               e_i = p2p_time(stage i devices, stage i+1 devices, output_bytes of the stage's last layer)
//   iteration         T   = iteration_time(schedule, m, v, t, e, sync), sync_i = dp_sync_exposed_time_i
//                           + optimizer_step_time_i  (= pipeline_time + max_i sync_i except PipeDream)
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {

// One layer of the chain placed on one stage (dp × tp devices), for one micro-batch.
struct LayerStageCost {
  double fwd_s = 0;                  // forward compute + exposed TP comm (+ exposed ZeRO-3 gather)
  double bwd_s = 0;                  // backward compute incl. recompute + exposed TP comm (+ ZeRO-3 gather/RS)
  double fwd_compute_s = 0;          // compute part of fwd_s
  double bwd_compute_s = 0;          // compute part of bwd_s (recompute included)
  double recompute_s = 0;            // recompute part of bwd_compute_s
  double tp_comm_fwd_s = 0;          // TP collectives in forward (Megatron: blocking; overlap=on: exposed part)
  double tp_comm_bwd_s = 0;          // TP collectives in backward (+ those re-run by recompute)
  int tp_blocks_fwd = 0, tp_blocks_bwd = 0;  // overlap=on: blocks per pass (cost/overlap); 0 = blocking TP
  double tp_sub_comm_fwd_s = 0;      // overlap=on: one sub-batch's TP collectives in forward (for the simulator)
  double tp_sub_comm_bwd_s = 0;      //   ... in backward
  double zero3_comm_s = 0;           // exposed ZeRO-3 parameter gather / gradient reduce-scatter per micro-batch
  double zero3_busy_s = 0;           // ZeRO-3 collectives' whole duration per micro-batch (cost/zero.hpp)
  double static_bytes = 0;           // weights + grads + optimizer states per device under ZeRO over dp
  double weight_bytes = 0;           //   of which weights (one version; PipeDream/2BW stash more)
  double grad_bytes = 0;             //   of which gradients
  double optimizer_bytes = 0;        //   of which optimizer states
  double activation_bytes = 0;       // stored per in-flight micro-batch per device (Korthikanti, by recompute/sp)
  double recomputed_bytes = 0;       // re-materialised by the layer's recompute during its backward (transient)
  double output_bytes = 0;           // activation sent to the next layer (the p2p message), whole tensor (not /tp)
  double params_per_device = 0;      // parameters held per device before ZeRO sharding (for DP grad sync bytes)
  double flops_fwd = 0;              // model FLOPs of the forward on one device (no recompute)
  double shared_static_bytes = 0;    // tied-head copy of the embedding matrix (weights+grads+optimizer) held by a
                                     // stage with the LM head but not the embedding; 0 elsewhere (not in static_bytes)
  double unsharded_weight_bytes = 0; // weights per tp rank before ZeRO-3 sharding (ZeRO-3 gather buffer size)
  double time_s() const { return fwd_s + bwd_s; }
};

// Sums over the layers of one stage (all its chunks), the inputs of stage_memory.
struct StageSums {
  double fwd_s = 0, bwd_s = 0;
  double weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;
  double activation_bytes = 0;
  double params_per_device = 0;
  double shared_static_bytes = 0;    // counted only when the stage does not hold the embedding itself
  double max_unsharded_weight_bytes = 0;
  double max_recomputed_bytes = 0;   // the largest recomputed_bytes of the stage's layers
  bool holds_embedding = false;      // model::is_embedding of one of its layers
  // Transformer blocks of the stage and their activation bytes per micro-batch (what `offload=` moves to host
  // memory; set by the estimate's stage loop, 0 in the planner's prefix sums, which never offload).
  int blocks = 0;
  double block_activation_bytes = 0;
  void add(const LayerStageCost& l, bool is_embedding, bool is_block = false);
};

// Everything about one stage's device group that does not depend on the layer: its GPU (the slowest if mixed),
// tp/dp groups, the stage's constants and profile. Build once per device group, then cost layers cheaply.
struct StageContext {
  const Strategy* strategy = nullptr;
  const hw::Cluster* cluster = nullptr;
  const CostConstants* constants = nullptr;
  // The constants with the strategy's precision recipe applied (cost/precision.hpp) when its bytes differ from
  // `constants`' own; `constants` then points here (shared, so copies of the context stay valid).
  std::shared_ptr<const CostConstants> recipe_constants;
  const Profile* profile = nullptr;
  std::vector<int> devices;           // dp·cp × tp devices, rank order (dp_rank·tp + tp_rank), dp_rank over dp·cp
  int gpu_type = 0;                   // index into cluster->gpu_types of the slowest device
  double peak_flops = 0;              // of that GPU for strategy.dtype
  bool cpu = false;                   // that device is a CPU (vendor "cpu"): GEMMs priced without the GPU curve
  double memory_bw_bytes_per_s = 0;
  double memory_capacity_bytes = 0;   // the smallest capacity among the stage's devices
  double memory_usable_bytes = 0;     // of which a stage may use (capacity − CostOptions::memory_headroom)
  double tp_allreduce_s_per_byte = 0; // time per byte of a tp all-reduce (β part), worst tp group
  double tp_allreduce_latency_s = 0;  // α part of one tp all-reduce
  double tp_rs_s_per_byte = 0;        // reduce-scatter (= all-gather) per byte with sequence parallelism
  double tp_rs_latency_s = 0;
  double dp_allgather_s_per_byte = 0; // all-gather (= reduce-scatter) over dp (worst dp group), per byte of the
  double dp_allgather_latency_s = 0;  //   gathered output
  double dp_allreduce_s_per_byte = 0; // all-reduce over dp (worst dp group)
  double dp_allreduce_latency_s = 0;
  double cp_step_s_per_byte = 0;      // one ring-attention step over the cp group (worst), per byte sent per rank
  double cp_step_latency_s = 0;       //   and its latency (cost/context_parallel.hpp); 0 when cp = 1
  Zero3EngineKind zero3_engine = Zero3EngineKind::fsdp;  // CostOptions::zero3_engine
};
StageContext make_stage_context(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                std::span<const int> stage_devices, const CostOptions& opt = {});
namespace detail {
// The same, fitting every tp/dp/cp group of the stage (make_stage_context scans only the first two periods of a
// stage of whole identical nodes, cost/stage.cpp group_window): the reference its tests compare with.
StageContext make_stage_context_every_group(const hw::Cluster& c, const Strategy& s, std::span<const int> stage_devices,
                                            const CostOptions& opt = {});
}  // namespace detail

// What a caller that costs many strategies on the same stages (the planner) hands to estimate() through
// CostOptions::prebuilt, so that it neither rebuilds the contexts nor re-costs the layers: stage st's context is
// class_ctx[stage_class[st]] (built by make_stage_context for the same cluster, devices, dp, tp and dtype; its
// `strategy` is re-pointed), and when shape_cost is not empty, layer l under the strategy's own recompute mode
// costs shape_cost[stage_class[st]][shape_of[l]] (layer_stage_cost under the same mbs, sp, ZeRO, recompute).
// The estimate is then the same, bit for bit, as without it.
struct PrebuiltStages {
  std::span<const StageContext> class_ctx;
  std::span<const int> stage_class;
  std::span<const std::vector<LayerStageCost>> shape_cost;
  std::span<const int> shape_of;
  // Optional (issue 22: no per-device work per estimate). cut_time_s(st, bytes) = p2p_time(c, s, stage st's
  // devices, stage st+1's devices, bytes, opt), the caller's memo of it; empty = estimate() computes it.
  std::function<double(int boundary, double bytes)> cut_time_s;
  double peak_flops_sum = -1;  // hw::total_peak_flops(c, s.dtype) when the caller has it (< 0: computed)
  // false (with cut_time_s): StageEstimate::devices stay empty and s.placement is not read (it may be empty); the
  // caller fills both from its placement. Ignored on clusters with an oversubscribed CPU host (host_cpu_bound
  // reads the devices).
  bool stage_devices = true;
};

// Layers whose recompute mode follows Strategy::recompute_layers (the "blocks": transformer, encoder, decoder,
// conv, generic); embeddings, heads and the like always use strategy.recompute. estimate() and the simulator
// both classify with this.
bool is_block(model::LayerKind kind);

// Roofline time of one (batched) forward GEMM on the stage: max(FLOPs at the size curve's efficiency, bytes moved
// at the memory bandwidth), `elem_bytes` per operand element (docs/cost-model.md §Compute).
double gemm_time_s(const StageContext& ctx, const model::Gemm& g, double elem_bytes);

// Cost of one layer on the stage under recompute mode `mode` (per-stage recompute_layers pick the mode per
// layer; see layer_recompute_mode).
LayerStageCost layer_stage_cost(const model::Model& m, const model::LayerSpec& layer, const StageContext& ctx,
                                model::Recompute mode);
// Every layer of the model's chain as if placed on this stage, under strategy.recompute.
std::vector<LayerStageCost> layer_stage_costs(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                              std::span<const int> stage_devices, const CostOptions& opt = {});
// The recompute mode of the `index_in_stage`-th transformer-type layer of stage `stage`: strategy.recompute, or,
// when strategy.recompute_layers is given, strategy.recompute for the first recompute_layers[stage] such
// layers of the stage and none for the rest (Megatron --recompute-method block).
model::Recompute layer_recompute_mode(const Strategy& s, int stage, int index_in_stage);

// Tensor-parallel collectives a layer's recompute re-runs in backward, in the units of tp_allreduces_fwd (an
// all-reduce, or a reduce-scatter + all-gather pair under sequence parallelism): all of them under full recompute,
// all but the last (the reduce-scatter or all-reduce after the output projection) with early stop, none otherwise
// (per-op SAC's all-gathers are counted where it is costed).
double recomputed_tp_collectives(model::Recompute mode, const model::LayerCost& lc, bool sequence_parallel);

// ---- the per-stage layer loop ---------------------------------------------------------------------------------
// Sums of one local chunk of a stage (global chunk c·p + stage), per micro-batch: what the simulator schedules.
struct ChunkSums {
  double fwd_compute_s = 0, bwd_compute_s = 0;  // bwd_compute_s includes recompute_s
  double recompute_s = 0;
  double tp_comm_fwd_s = 0, tp_comm_bwd_s = 0, zero3_comm_s = 0;
  // Overlapped TP (cost/overlap): blocks and one sub-batch's collectives of the layers that overlap, and the
  // exposed TP time of those that do not (blocking).
  int tp_blocks_fwd = 0, tp_blocks_bwd = 0;
  double tp_sub_comm_fwd_s = 0, tp_sub_comm_bwd_s = 0, tp_blocking_fwd_s = 0, tp_blocking_bwd_s = 0;
  double activation_bytes = 0;         // stored per micro-batch
  double max_recomputed_bytes = 0;     // the largest re-materialisation of one of its layers
  double params_per_device = 0;        // for its DP gradient buckets
  double output_bytes = 0;             // the chunk's last layer's output (its p2p message)
};
struct StageLayerSums {
  StageSums sums;                      // the whole stage: time per micro-batch and stage_memory's input
  double compute_s = 0;                // Σ fwd_compute_s + bwd_compute_s
  double tp_comm_s = 0;                // Σ exposed TP (+ ZeRO-3) communication
  double zero3_busy_s = 0;             // Σ ZeRO-3 gather/reduce-scatter link time per micro-batch (cost/zero)
  double first_chunk_output_bytes = 0; // output of the first chunk's last layer (the stage's p2p message)
  std::vector<ChunkSums> chunks;       // [local chunk], filled only when asked for
};
// The one loop over a stage's layers (estimate, the planner and the simulator call it): chunk by chunk, each
// layer takes its recompute mode (layer_recompute_mode for blocks, strategy.recompute otherwise), its
// LayerStageCost from `cost_of(layer_index, mode)` (layer_stage_cost or a caller's cache of it; a reference or
// a value), and is added up. `bounds` = chunk_boundaries(s).
template <class CostOf>
StageLayerSums sum_stage_layers(const model::Model& m, const Strategy& s, std::span<const int> bounds, int stage,
                                bool want_chunks, CostOf&& cost_of) {
  StageLayerSums out;
  const int p = s.pp, chunks = static_cast<int>(bounds.size()) - 1;
  if (want_chunks) out.chunks.resize(static_cast<std::size_t>(std::max(0, (chunks - stage + p - 1) / p)));
  int block_index = 0;
  for (int ch = stage, local = 0; ch < chunks; ch += p, ++local) {
    for (int li = bounds[ch]; li < bounds[ch + 1]; ++li) {
      const model::LayerSpec& layer = m.layers[li];
      const model::Recompute mode = is_block(layer.kind) ? layer_recompute_mode(s, stage, block_index++) : s.recompute;
      const LayerStageCost& lc = cost_of(li, mode);
      out.sums.add(lc, model::is_embedding(layer.kind), model::is_attention_block(layer.kind));
      out.compute_s += lc.fwd_compute_s + lc.bwd_compute_s;
      out.tp_comm_s += lc.tp_comm_fwd_s + lc.tp_comm_bwd_s + lc.zero3_comm_s;
      out.zero3_busy_s += lc.zero3_busy_s;
      if (local == 0) out.first_chunk_output_bytes = lc.output_bytes;
      if (!want_chunks) continue;
      ChunkSums& c = out.chunks[local];
      c.fwd_compute_s += lc.fwd_compute_s;
      c.bwd_compute_s += lc.bwd_compute_s;
      c.recompute_s += lc.recompute_s;
      c.tp_comm_fwd_s += lc.tp_comm_fwd_s;
      c.tp_comm_bwd_s += lc.tp_comm_bwd_s;
      c.zero3_comm_s += lc.zero3_comm_s;
      c.tp_blocks_fwd += lc.tp_blocks_fwd;
      c.tp_blocks_bwd += lc.tp_blocks_bwd;
      c.tp_sub_comm_fwd_s += lc.tp_sub_comm_fwd_s;
      c.tp_sub_comm_bwd_s += lc.tp_sub_comm_bwd_s;
      if (lc.tp_blocks_fwd == 0) c.tp_blocking_fwd_s += lc.tp_comm_fwd_s;
      if (lc.tp_blocks_bwd == 0) c.tp_blocking_bwd_s += lc.tp_comm_bwd_s;
      c.activation_bytes += lc.activation_bytes;
      c.max_recomputed_bytes = std::max(c.max_recomputed_bytes, lc.recomputed_bytes);
      c.params_per_device += lc.params_per_device;
      c.output_bytes = lc.output_bytes;
    }
  }
  return out;
}

// Pipeline p2p time e_i for one micro-batch: activation forward + its gradient backward between two adjacent
// stages. Each (dp, tp) rank sends to its counterpart; across nodes with tp > 1 the message is split /tp
// (Megatron scatter-gather) and re-gathered on the receiving node. Concurrent sends share NICs.
double p2p_time(const hw::Cluster& c, const Strategy& s, std::span<const int> from_stage_devices,
                std::span<const int> to_stage_devices, double bytes, const CostOptions& opt = {});

// ---- schedules (cost/pipeline) -------------------------------------------------------------------------------
// Pipeline time of one iteration (without DP sync/optimizer) given per-stage times t_i (per micro-batch, all
// chunks of the stage) and p2p round-trip times e_i (size p−1; docs/cost-model.md §Pipeline schedules). What
// estimate() uses:
//   gpipe:         (m−1)·max(max t, max e) + Σ t + Σ e                    (AMP eq. 5; a link may be the bottleneck)
//   1f1b:          (m−1)·P + Σ t + Σ e,  P = one_f_one_b_period(t, e, m) ≥ max t (round trips in the steady state)
//   interleaved:   m·max t + (Σ t − max t)/v + E + max(0, m−p)·max(0, (Σ t + E)/(2p−1) − max t),
//                  E = v·Σ e + (v−1)·max e (links crossed by one micro-batch; v = 1: as 1f1b)
//   pipedream,2bw: m·max(max t, max e)                    (steady state, no flush: one micro-batch per max stage)
double pipeline_time(Schedule sched, std::int64_t m, int v, std::span<const double> stage_time_s,
                     std::span<const double> p2p_s);
// The separable objective the planner's exact split DP minimises: the same with p2p counted once (AMP eq. 5):
//   gpipe, 1f1b:   (m−1)·max t + Σ t + Σ e
//   interleaved:   m·max t + (Σ t − max t)/v + Σ e
//   pipedream,2bw: m·max(max t, max e)
// It is ≤ pipeline_time (equal without p2p, and always for pipedream/2bw), so a lower bound built on it stays
// valid; pipeline_time − pipeline_iteration_time is the round-trip exposure of the steady state.
double pipeline_iteration_time(Schedule sched, std::int64_t m, int v, std::span<const double> stage_time_s,
                               std::span<const double> p2p_s);
// Steady-state period of 1F1B with communication (one micro-batch per P): the maximum cycle mean of its
// dependency graph. Stage i runs F(k + p − i − 1), B(k) alternately; the chain B_i(k) → F_i → F_{i+1} … F_j →
// B_j → … → B_i(k + L) (L = j − i + 1 stages) competes with stage i's own L periods, so
//   P = max over windows [i, j] with L ≤ m − 1 of (Σ_{i..j} t + Σ_{i..j−1} e) / L        (≥ max t; ≤ max(t_i + e_i))
// For uniform stages P = t + e·(p−1)/p when m ≥ p + 1. O(p·min(p, m)).
double one_f_one_b_period(std::span<const double> stage_time_s, std::span<const double> p2p_s, std::int64_t m);
// The whole iteration: pipeline_time + max_i sync_i, where sync_i = dp_sync_exposed_time_i +
// optimizer_step_time_i of stage i — except vanilla PipeDream (notes_003 §1, no gradient accumulation), which
// syncs and steps after every micro-batch: m·max(max_i (t_i + sync_i), max e). 2BW keeps one sync per m
// micro-batches (double-buffered weights, gradient accumulation over the m micro-batches).
double iteration_time(Schedule sched, std::int64_t m, int v, std::span<const double> stage_time_s,
                      std::span<const double> p2p_s, std::span<const double> sync_s);
// Bubble fraction of a uniform pipeline: (p−1)/m, (p−1)/(v·m), 0 for pipedream/2bw.
double bubble_fraction(Schedule sched, int p, std::int64_t m, int v);
// Micro-batches whose activations stage `stage` (0-based) holds at its peak, in units of the stage's whole
// activation of one micro-batch: gpipe m; 1f1b/pipedream/2bw min(p − stage, m); interleaved (Megatron)
// min(m·v, 2(p − stage − 1) + (v − 1)·p + 1) / v  (stage 0: p·(1 + (p−1)/(p·v)), Korthikanti §4.2.3).
double in_flight_micro_batches(Schedule sched, int p, int stage, std::int64_t m, int v);
// Weight versions held: pipedream p − stage (weight stashing), 2bw 2, otherwise 1.
int weight_versions(Schedule sched, int p, int stage);

// ---- per-stage terms that are not per-layer ------------------------------------------------------------------
// Memory per device of stage `stage` (0-based) from its layer sums (cost/memory.cpp, docs/cost-model.md §Memory):
//   weights × weight_versions + grads + optimizer (+ tied-head copy) ; activations × in_flight_micro_batches;
//   buffers = ZeRO-3 gather buffers (2 × the largest layer's unsharded weights);
//   recompute = the largest layer's re-materialised activations (max_recomputed_bytes);
//   workspace = workspace_bytes. It fits when ≤ ctx.memory_usable_bytes (capacity − headroom).
MemoryBreakdown stage_memory(const StageContext& ctx, int stage, const StageSums& sums);
// DP gradient buckets (PyTorch DDP / Megatron bucketing): `grad_bytes` of gradients in
//   count = clamp(⌈grad_bytes / dp_bucket_bytes⌉, 1, dp_max_buckets) equal buckets of grad_bytes / count.
// The one bucket model: dp_sync_exposed_time and the simulator (per chunk) both use it.
struct BucketPartition {
  int count = 0;                       // 0 when there is nothing to reduce
  double bytes_per_bucket = 0;
};
BucketPartition dp_bucket_partition(double grad_bytes, const CostConstants& k);
// Exposed data-parallel gradient synchronisation of a stage per sync: gradients of `grad_params` parameters are
// all-reduced (ZeRO 0) or reduce-scattered (ZeRO 1/2) over each dp group in buckets of dp_bucket_bytes (at most
// dp_max_buckets) released as the last micro-batch's backward `overlap_window_s` runs, with the contention slowdown
// (Galvatron ≈1.3) while they overlap; the last bucket starts when the backward ends, so it is always exposed.
// ZeRO 1/2 then all-gather the updated weights after the optimizer step (exposed). ZeRO-3 syncs per layer inside
// layer_stage_cost and returns 0 here.
double dp_sync_exposed_time(const StageContext& ctx, double grad_params, double overlap_window_s);
// Optimizer step of a stage: reads/writes the (sharded) states at the GPU's memory bandwidth.
double optimizer_step_time(const StageContext& ctx, double params_per_device);
// A lower bound on dp_sync_exposed_time(ctx, P, w) + optimizer_step_time(ctx, P) over every P ≥ min_params and
// every window w ≤ max_window_s: the planner's bound on a stage's sync before the split is chosen (plan/bounds).
// Each term is bounded by a function that increases in P, evaluated at min_params (derivation at the definition).
double stage_sync_lower_bound_s(const StageContext& ctx, double min_params, double max_window_s);

}  // namespace strata::cost
