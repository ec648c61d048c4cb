// cost/estimate: the analytical cost model's entry point — time and memory of one strategy on one cluster —
// and its result types. Every consumer (plan, sim, sched, exec, export, cli) reads these.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/host.hpp"
#include "strata/cost/memory.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/cost/zero.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {

struct Profile;           // measured per-layer times (cost/profile.hpp), optional
struct CostConstants;     // fitted efficiencies/overheads (cost/constants.hpp, data/cost_constants.json)

// Peak memory of one device (cost/memory.hpp, docs/cost-model.md §Memory).
struct MemoryBreakdown {
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0;
  double activations_bytes = 0;        // stored activations × micro-batches in flight
  double buffers_bytes = 0;            // ZeRO-3 gather buffers
  double recompute_bytes = 0;          // one layer's activations re-materialised by its recompute
  double workspace_bytes = 0;          // CUDA context, cuBLAS/NCCL workspaces
  // The optimizer step's temporaries beyond the activations it finds freed (optim=foreach/forloop; 0 when fused,
  // the default): cost::optimizer_step_temp_bytes.
  double optimizer_step_bytes = 0;
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buffers_bytes + recompute_bytes +
           workspace_bytes + optimizer_step_bytes;
  }
};

// One pipeline stage (all its chunks when interleaved). Times are per micro-batch unless noted.
struct StageEstimate {
  std::vector<int> devices;            // every device of the stage (dp × tp)
  std::string gpu;                     // GPU type name (the slowest one if mixed)
  std::vector<int> layers;             // layer indices held (all chunks)
  double fwd_s = 0;                    // forward of one micro-batch (compute + exposed TP comm)
  double bwd_s = 0;                    // backward incl. recompute (compute + exposed TP comm)
  double time_s = 0;                   // t_i = fwd_s + bwd_s
  double compute_s = 0;                // compute part of time_s
  double tp_comm_s = 0;                // exposed TP communication part of time_s
  double p2p_s = 0;                    // e_i: send activation to the next stage + gradient back (0 on last)
  double dp_comm_s = 0;                // exposed data-parallel communication per iteration
  double zero3_busy_s = 0;             // ZeRO-3 gathers + reduce-scatters per iteration, whole duration (the
                                       //   exposed part is in tp_comm_s)
  double optimizer_s = 0;              // optimizer step per iteration
  double bubble_s = 0;                 // idle time per iteration
  MemoryBreakdown memory;              // per device of this stage (the peak one)
  double memory_bytes = 0;             // memory.total_bytes()
  double memory_capacity_bytes = 0;    // the device's capacity
  double memory_usable_bytes = 0;      // capacity − headroom (CostOptions::memory_headroom)
  bool fits = true;                    // memory_bytes ≤ memory_usable_bytes
};

struct Estimate {
  double iteration_time_s = 0;         // max(pipeline_time_s, host.bound_s)
  double pipeline_time_s = 0;          // the schedule's time with one dedicated device per rank (+ DP sync, optimizer)
  HostBound host;                      // shared-CPU-host bound (cost/host.hpp); host.node = -1 when none applies
  double samples_per_s = 0, tokens_per_s = 0;
  double tflops_per_gpu = 0;           // model FLOPs (PTD-P count for GPT) / time / GPUs / 1e12
  double mfu = 0;                      // model FLOP/s over peak FLOP/s summed over devices
  bool fits = true;
  double peak_memory_bytes = 0;        // max over devices
  std::string not_fit_reason;          // empty when it fits
  std::vector<StageEstimate> stages;
};

struct CostOptions {
  const Profile* profile = nullptr;          // overrides the roofline when given
  const CostConstants* constants = nullptr;  // nullptr = the built-in fitted constants
  MemoryHeadroom memory_headroom;            // memory kept free per device (default: cost/memory.hpp)
  // Per-GPU memory budget (Galvatron-BMW's 8/12/16 GB caps): a device counts as having min(capacity, budget)
  // bytes, the headroom applies to that. 0 = the capacity.
  double memory_budget_bytes = 0;
  // model::sample_flops(m) of the estimated model when the caller already has it (the planner estimates one
  // model thousands of times); nullptr = computed by estimate().
  const model::SampleFlops* sample_flops = nullptr;
  // Stage contexts (and optionally layer costs) the caller already built for this strategy's stages (the
  // planner: one per stage class, cost/stage.hpp PrebuiltStages); nullptr = estimate() builds them.
  const struct PrebuiltStages* prebuilt = nullptr;
  // Whose ZeRO-3 collectives zero=3 costs (cost/zero.hpp): FSDP2/FSDP (default) or DeepSpeed ZeRO-3.
  Zero3EngineKind zero3_engine = Zero3EngineKind::fsdp;
};

// Estimates one complete, valid strategy (see complete_strategy). Deterministic and allocation-light.
Estimate estimate(const model::Model& m, const hw::Cluster& c, const Strategy& s, const CostOptions& opt = {});
// The whole-run figures every form of the estimate (uniform, per-layer, per-stage) reports the same way, from its
// iteration time and stages: samples and tokens per second, TFLOP/s per GPU and MFU (one FLOPs source,
// model::sample_flops or opt.sample_flops; `peak_flops_sum` over the `devices` the run uses) and the memory verdict
// (peak over stages, fits, the first stage that does not fit).
void finish_estimate(Estimate& est, const model::Model& m, const Strategy& s, const CostOptions& opt, int devices,
                     double peak_flops_sum);

nlohmann::ordered_json to_json(const Estimate& e);
// What `strata estimate --json` prints (and the Python API's Estimate.to_dict()): model, seq, cluster, strategy,
// then the keys of to_json(e). cost/estimate_json.cpp.
nlohmann::ordered_json estimate_report_json(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                            const Estimate& e);

}  // namespace strata::cost
