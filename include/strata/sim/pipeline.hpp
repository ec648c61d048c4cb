// sim/pipeline: a training iteration as abstract, plain inputs (durations, bytes, flows over link resources)
// → task graph → simulated timeline, busy/idle, bubble and memory over time. The cost adapter
// (sim/from_cost.hpp) fills these inputs from the cost model; tests fill them directly.
//
// Workers: one per (pipeline rank r, dp rank d), index r·dp + d; a worker is the tp group of devices that run in
// lockstep. Pipeline rank r holds local chunks c = 0..v−1, i.e. global chunks c·p + r (Megatron interleaving).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "strata/cost/strategy.hpp"
#include "strata/sim/engine.hpp"
#include "strata/cost/program.hpp"

namespace strata::sim {

// A transfer or collective: its duration alone on idle links (from cost/comm), the latency part of it, and the
// link resources (indices into PipelineInput::resource_bw) it occupies.
struct Flow {
  double time_s = 0;
  double latency_s = 0;
  std::vector<int> resources;
};

// One chunk on one worker; times per micro-batch.
struct ChunkWork {
  double fwd_s = 0;              // forward compute
  double bwd_s = 0;              // backward compute (recompute excluded)
  double recompute_s = 0;        // forward re-run before the backward (0 = no recompute)
  double tp_fwd_s = 0;           // TP collectives in the forward (blocking, on the compute stream; with
                                 //   tp_blocks_fwd > 0 those of the chunk's layers that do not overlap)
  double tp_bwd_s = 0;           // ... in the backward (and recompute)
  // Overlapped TP (Oases, overlap=on; docs/simulator.md): blocks per pass (0 = blocking TP above) and one
  // sub-batch's collectives per pass. The chunk then runs as two sub-batches whose per-block compute (fwd_s,
  // bwd_s, recompute_s split evenly over blocks and halves) alternates on the compute stream while each
  // sub-batch's block collective runs on the worker's TP stream.
  int tp_blocks_fwd = 0, tp_blocks_bwd = 0;
  double tp_sub_fwd_s = 0, tp_sub_bwd_s = 0;
  double act_bytes = 0;          // stored from the forward's start until the backward's end
  double recompute_bytes = 0;    // re-materialised from the recompute's start until the backward's end
  Flow send_next;                // activation to the next chunk's worker (unused on the last chunk)
  Flow send_prev;                // gradient to the previous chunk's worker (unused on the first chunk)
};

struct WorkerInput {
  std::vector<int> devices;      // physical devices (for reports and the trace)
  std::vector<ChunkWork> chunks; // size v
  double static_bytes = 0;       // weights (one version) + gradients + optimizer states + buffers
  double weight_bytes = 0;       // one weight version (pipedream/2bw stash more)
  double optimizer_s = 0;        // one optimizer step
};

// Data-parallel traffic of one pipeline rank's dp group, per local chunk; each entry is a list of concurrent
// flows (one per tp rank's dp group).
struct StageSync {
  std::vector<std::vector<std::vector<Flow>>> grad_buckets;  // [chunk][bucket][tp]: all-reduce / reduce-scatter
  std::vector<std::vector<Flow>> param_gather;               // [chunk][tp]: ZeRO-1/2 all-gather after the step
  std::vector<std::vector<Flow>> zero3_gather;               // [chunk][tp]: ZeRO-3 gather before each pass
};

struct PipelineInput {
  cost::Schedule schedule = cost::Schedule::one_f_one_b;
  int p = 1, v = 1, dp = 1;
  std::int64_t m = 1;
  int iterations = 1;
  int zero_stage = 0;
  std::vector<WorkerInput> workers;    // size p·dp
  std::vector<StageSync> sync;         // size p (may be empty: no DP traffic)
  std::vector<double> resource_bw;     // link resources (bytes/s)
  std::vector<std::string> resource_names;
  double overlap_slowdown = 1.0;       // compute slowed by this factor while its stage's DP traffic runs
  // Aggregated runs (sim/from_cost, docs/simulator.md §Scale): [d] how many identical dp replicas simulated dp
  // rank d stands for (empty = 1 each); flow_contention_s and overlap_extra_s count its tasks that many times.
  std::vector<int> replica_count;
};

// A task of the simulated timeline, for reports and the trace.
enum class TaskTag : std::uint8_t { forward, backward, recompute, tp_comm, optimizer, send_fwd, send_bwd, dp_sync,
                                    param_gather, zero3_gather };
std::string_view to_string(TaskTag t);
enum class StreamRole : std::uint8_t { compute, send_fwd, send_bwd, dp, tp };

struct TaskInfo {
  TaskTag tag;
  std::int32_t worker;   // owning worker (dp flows: the worker of the tp rank's first member)
  std::int32_t tp_rank;  // dp flows: which tp rank's group; else -1
  std::int64_t micro;    // micro-batch (optimizer/param gather: window)
  std::int32_t chunk;    // global chunk index
};

struct WorkerStats {
  double busy_s = 0;              // compute-stream busy time inside the measured window
  double idle_s = 0;
  double bubble_fraction = 0;     // idle / window
  double peak_memory_bytes = 0;
  double peak_memory_time_s = 0;
  int max_weight_versions = 1;    // weight versions alive at once (weight stashing)
  std::int64_t max_in_flight = 0; // micro-batches whose activations were held at once
  bool version_rule_ok = true;    // every forward found its weight version alive (2bw rule; pipedream latest)
};

struct SimResult {
  double iteration_time_s = 0;    // per batch: flush schedules total/iterations; async the steady state
                                  // (end of batch 0 → end of batch N−2, the last batch drains)
  double makespan_s = 0;          // end of the whole simulated run
  double window_begin_s = 0, window_end_s = 0;  // measured window
  double bubble_fraction = 0;     // mean over workers of idle/window on the compute stream
  std::vector<double> iteration_end_s;          // end of each batch (max over workers)
  std::vector<WorkerStats> workers;
  std::int64_t events = 0;
  std::int64_t tasks = 0;
  // Why a run may differ from a formula: time flows lost to link sharing (Σ actual − alone) and the largest
  // stretch of one flow (actual / alone); compute time lost to the overlap slowdown.
  double flow_contention_s = 0;
  double max_flow_stretch = 1;
  double overlap_extra_s = 0;
  // Timeline (kept for the trace).
  TaskGraph graph;
  std::vector<TaskInfo> info;
  std::vector<StreamRole> stream_role;
  std::vector<std::int32_t> stream_worker, stream_tp;
  EngineResult engine;
};

struct SimOptions {
  bool keep_timeline = false;          // keep graph/info/engine for a trace
  bool record_memory_timeline = false;
};

// Checks the input's shape (sizes, schedule rules) and simulates it. std::invalid_argument on a malformed input.
SimResult simulate_pipeline(const PipelineInput& in, const SimOptions& opt = {});

// Convenience for tests and benchmarks: p·dp workers with identical chunks (per-chunk times and act bytes),
// no communication.
PipelineInput uniform_pipeline(cost::Schedule s, int p, std::int64_t m, int v, double fwd_s, double bwd_s,
                               int iterations = 1, int dp = 1);

}  // namespace strata::sim
