// cost/layerwise: costing per-layer strategies (Galvatron-BMW, seed_001 §3–4; docs/cost-model.md §Per-layer
// strategies). Inside a stage of dp_i·tp_i = G devices every layer picks a LayerChoice {tp, DP or SDP over the
// other G/tp ranks, recompute, consecutive or strided tp groups}. A layer with its choice costs exactly what
// layer_stage_cost gives for the uniform strategy "dp = G/tp, tp, zero = 3 if SDP, micro-batch = the stage's
// samples per round / dp" on the group's devices in the layer's rank order; consecutive layers with different
// layouts pay the Slice-Gather transformation (seed_001 §7, notes_001 §4.2), priced with cost/comm.
//
// A round of the stage processes dp_i·mbs samples (one micro-batch per replica of the stage, docs/strategy.md
// "Micro-batches"); a layer whose data-parallel degree is dp_l = G/tp holds dp_i·mbs/dp_l of them per device.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/strategy.hpp"

namespace strata::cost {

// The uniform strategy one layer runs under `choice` inside a stage group of `group` devices that processes
// `group_batch` samples per round (s supplies dtype, sp, schedule, gbs, the zero stage of plain-DP layers, capped
// at 2). InputError when the layer's data parallelism does not divide the round's samples.
Strategy layer_choice_strategy(const Strategy& s, int group, std::int64_t group_batch, const LayerChoice& choice);
// The group's devices in the layer's rank order (dp_rank·tp + tp_rank): consecutive tp groups = the group as
// listed; strided = tp ranks G/tp apart (Galvatron's tp_consecutive_flag = 0).
std::vector<int> layer_choice_devices(std::span<const int> group, int tp, TpOrder order);
// Which dp rank holds device position `pos` of the group under a layout (the interval of the round's samples it
// holds is [rank/dp, (rank+1)/dp)).
int layout_dp_rank(int pos, int group, int tp, TpOrder order);

// Slice-Gather between two consecutive layers of a stage: the forward moves the activation (full hidden, batch
// split over the layer's dp ranks, as Megatron leaves it after the row-parallel all-reduce) from the previous
// layer's layout to the next one's, the backward moves its gradient back. Where a device's new batch share is
// inside its old one it slices (free); otherwise it gathers the missing samples from the devices that hold them
// (all-gather over those devices, or one p2p transfer when it holds none of them). The slowest device sets the
// time (every device transforms at once).
struct TransformCost {
  double fwd_s = 0, bwd_s = 0;
  double time_s() const { return fwd_s + bwd_s; }
};
TransformCost slice_gather_cost(const hw::Cluster& c, std::span<const int> group, std::int64_t group_batch,
                                const LayerChoice& from, const LayerChoice& to, double bytes_per_sample,
                                const CostOptions& opt = {});

// Per-(layer shape, choice) costs of one stage group, memoised: what estimate_layerwise and the planner's
// per-layer DP read. `s` is the stage-level strategy (uniform fields: dp = dp_i, tp = tp_i, mbs, gbs, pp,
// schedule, zero, dtype, sp); it must outlive the coster.
struct LayerwiseCoster {
  LayerwiseCoster(const model::Model& m, const hw::Cluster& c, const Strategy& s, std::span<const int> group,
                  std::int64_t group_batch, const CostOptions& opt = {});
  // Cost of layer `li` of the chain under `choice` (for one round of the stage).
  const LayerStageCost& cost(int li, const LayerChoice& choice);
  // The layer's context (devices in its rank order, its derived strategy).
  const StageContext& context(const LayerChoice& choice);
  TransformCost transform(const LayerChoice& from, const LayerChoice& to, double bytes_per_sample);
  // Output bytes of layer `li` per sample (what a Slice-Gather after it moves).
  double output_bytes_per_sample(int li, const LayerChoice& choice);

  const model::Model* model;
  const hw::Cluster* cluster;
  const Strategy* stage_strategy;
  std::vector<int> group;
  std::int64_t group_batch = 0;
  CostOptions options;

 private:
  struct ChoiceCtx {
    LayerChoice choice;
    std::unique_ptr<Strategy> strategy;  // stable address: ctx.strategy points here
    StageContext ctx;
  };
  struct Entry {
    int layer;
    int choice;
    LayerStageCost cost;
  };
  struct Transform {
    LayerChoice from, to;
    double bytes;
    TransformCost cost;
  };
  int choice_index(const LayerChoice& choice);
  std::vector<ChoiceCtx> choices_;
  std::vector<Entry> entries_;
  std::vector<Transform> transforms_;
};

// The choice a layer of a stage without layer choices runs: the stage's tp, SDP when zero = 3 (else DP), its
// recompute mode (rlayers for blocks, layer_recompute_mode), consecutive (docs/strategy.md).
LayerChoice stage_layer_choice(const model::Model& m, const Strategy& s, const StageView& v, int stage, int li,
                               int& block_index);

// True for the per-layer form estimate() costs here: a per-stage strategy whose stages all have the same (dp, tp),
// use every device of the cluster, and that has per-layer choices.
bool is_layerwise(const Strategy& s, const hw::Cluster& c);
// Per stage of such a strategy: its estimate fields (per micro-batch times, memory, p2p to the next stage, DP
// sync and optimizer per iteration; zero3_busy_s per micro-batch) and its layer sums as one chunk (the Slice-Gather
// times counted in the TP communication), what the simulator replays.
struct LayerwiseStageSums {
  StageEstimate stage;
  ChunkSums chunk;
};
std::vector<LayerwiseStageSums> layerwise_stages(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                                 const CostOptions& opt = {});
// estimate() of such a strategy (cost::estimate calls it): per stage the layers' costs under their choices plus
// the transformations between them, DP sync per layout of the plain-DP layers, stage_memory over the sums (SDP
// gather buffers for the SDP layers only), p2p and the pipeline schedule as for the uniform form.
Estimate estimate_layerwise(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                            const CostOptions& opt = {});

}  // namespace strata::cost
