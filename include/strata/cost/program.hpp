// cost/program: the pipeline program — one plain-data description of a training run per pipeline stage: the
// ordered ops (ZeRO-3 gathers, activation receive, forward, activation send, gradient receive, backward, gradient
// send, gradient-sync release, optimizer step, ZeRO-1/2 parameter all-gather) with their micro-batch, chunk,
// weight version and update window. Built once here (below sim and exec); the simulator replays it with
// durations from the cost model (sim/pipeline), the executor interprets it with libtorch (exec/train), and
// `time_program` replays it on a dependency-only backend (the critical path the analytical closed forms of
// cost/pipeline must match). Models: ASTRA-sim's workload layer (the workload is data, replayed by backends) and
// XLA auto-sharding's flat solver request.
//
// Orders per schedule (p stages, m micro-batches per iteration, v chunks per stage; sources in program.cpp):
//   gpipe        all m forwards, then all m backwards, last micro-batch first (GPipe, Huang et al. 2019, Fig. 2c).
//   1f1b         min(p−r−1, m) warm-up forwards, then one forward / one backward, then the cool-down backwards
//                (PipeDream-Flush; Megatron's non-interleaved schedule; notes_003 §3.3).
//   interleaved  v > 1: Megatron's interleaved 1F1B (warm-up (p−r−1)·2 + (v−1)·p virtual micro-batches, all m·v
//                when m == p); v == 1 is the 1f1b order (what Megatron runs without virtual stages).
//   pipedream    1F1B over all iterations without flush, a weight update after every backward (weight stashing).
//   2bw          1F1B over all iterations without flush, one update per m micro-batches (double buffering).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/core/json.hpp"
#include "strata/cost/strategy.hpp"

namespace strata::cost {

enum class ProgramOpKind : std::uint8_t {
  zero3_gather,     // ZeRO-3: gather the chunk's full parameters before a forward or backward
  recv_activation,  // receive the previous chunk's output (blocking)
  forward,          // forward compute of (micro, chunk), TP collectives inside
  send_activation,  // send the output to the next chunk's stage (asynchronous)
  recv_gradient,    // receive the gradient of the output from the next chunk's stage (blocking)
  backward,         // backward compute (recompute inside when the chunk recomputes), TP collectives inside
  send_gradient,    // send the input gradient to the previous chunk's stage (asynchronous)
  grad_sync,        // the chunk's update window is complete: every remaining DP gradient bucket is released
  optimizer,        // the weight update (flush schedules: all chunks; waits for the window's gradient sync)
  param_gather,     // ZeRO-1/2: all-gather the updated parameter shards after the step
};
std::string_view to_string(ProgramOpKind k);
ProgramOpKind parse_program_op_kind(std::string_view text, const core::JsonWhere& where);  // InputError otherwise

struct ProgramOp {
  ProgramOpKind kind = ProgramOpKind::forward;
  std::int64_t micro = -1;           // global micro-batch index (iteration·m + k); -1 for optimizer/param_gather
  int chunk = -1;                    // local chunk 0..v−1 (global chunk = chunk·p + stage); -1 = every chunk
  int peer_stage = -1;               // sends and receives: the other stage
  std::int64_t iteration = 0;        // the batch the op belongs to (forward/backward: micro / m)
  std::int64_t weight_version = -1;  // forward/backward: weights used; optimizer: the version it produces
  std::int64_t window = -1;          // backward/grad_sync/optimizer: the update window (pipedream: the micro-batch)
  bool opens_window = false;         // backward: the first of its chunk in its window (gradients start at zero)
  bool closes_window = false;        // backward: the last of its chunk in its window (releases the DP buckets)
  bool operator==(const ProgramOp&) const = default;
};

// JSON form of one op (the executor's record of what it ran): {"op": "forward", "micro": 3, "chunk": 0, ...};
// fields at their defaults are left out.
nlohmann::ordered_json to_json(const ProgramOp& op);
ProgramOp program_op_from_json(const nlohmann::json& j, const core::JsonWhere& where);

struct StageProgram {
  int stage = 0;
  std::vector<ProgramOp> ops;
  int max_weight_versions = 1;       // weight versions alive at once (weight stashing / double buffering)
  std::int64_t max_in_flight = 0;    // forwards whose backward had not yet run, at most (chunk-micro-batches)
};

struct ProgramShape {
  Schedule schedule = Schedule::one_f_one_b;
  int p = 1, v = 1;
  std::int64_t m = 1;                // micro-batches per iteration (per pipeline)
  int iterations = 1;
  std::int64_t first_iteration = 0;  // global index of the first iteration (a resumed run): shifts micro-batch
                                     // indices and weight versions
  int zero_stage = 0;
  bool operator==(const ProgramShape&) const = default;
};

struct PipelineProgram {
  ProgramShape shape;
  std::vector<StageProgram> stages;  // size p
};

// JSON form of the whole program: {"shape": {...}, "stages": [{"stage": 0, "max_weight_versions": 1,
// "max_in_flight": 4, "ops": [...]}, ...]} (`strata simulate --program-out`).
nlohmann::ordered_json to_json(const PipelineProgram& prog);

// The shape of a (complete) strategy's run.
ProgramShape program_shape(const Strategy& s, int iterations, std::int64_t first_iteration = 0);

// Builds the program. std::invalid_argument on a malformed shape (p, v, m, iterations < 1; v > 1 without the
// interleaved schedule; interleaving with m % p != 0).
PipelineProgram build_program(const ProgramShape& shape);

// Weight version a forward of global micro-batch k uses under 2BW: max(⌊k/m⌋ − 1, 0), i.e. W(t−1) for a
// micro-batch of iteration t (notes_003 §2.1, W(t+1) = W(t) − ν∇f(W(t−1))).
std::int64_t two_bw_version(std::int64_t k, std::int64_t m);

// Replays the program with blocking receives and non-blocking sends and reports the first rule it breaks: a
// deadlock (every stage waits on a receive that no stage can still send), an op run twice or never, a forward
// whose weight version does not exist yet or was already dropped, a send without its receive. "" when valid.
std::string check_program(const PipelineProgram& prog);

// Durations for the dependency-only replay: per stage and local chunk, one micro-batch's forward and backward
// (recompute included) and the p2p time of the chunk's output to the next chunk's stage (and of its gradient
// back), plus one optimizer step per stage.
struct ProgramDurations {
  std::vector<std::vector<double>> fwd_s, bwd_s;  // [stage][chunk]
  std::vector<std::vector<double>> p2p_s;         // [stage][chunk]: to the next chunk (unused on the last chunk)
  std::vector<double> optimizer_s;                // [stage]
};
// Uniform stages: every chunk fwd_s/v, bwd_s/v, no p2p, no optimizer time.
ProgramDurations uniform_durations(const ProgramShape& shape, double fwd_s, double bwd_s);

struct ProgramTiming {
  double makespan_s = 0;                      // end of the last op
  std::vector<double> iteration_end_s;        // per iteration: its last op's end (max over stages)
  std::vector<double> stage_busy_s;           // per stage: compute time
};
// Critical path of the program: every op starts when the previous op of its stage and its data dependency (the
// producing chunk's op plus the p2p time) have finished. Compute and optimizer take their durations; sends,
// receives, gathers and sync releases take none (the simulator models links and DP traffic).
ProgramTiming time_program(const PipelineProgram& prog, const ProgramDurations& d);

}  // namespace strata::cost
