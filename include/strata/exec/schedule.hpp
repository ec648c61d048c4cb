// exec/schedule: the order in which one pipeline stage runs its forward and backward passes under GPipe, 1F1B
// (PipeDream-Flush), interleaved 1F1B (Megatron PTD-P) and the flush-free 1F1B of PipeDream / 2BW, plus a
// checker that a set of per-stage orders cannot deadlock with asynchronous sends and blocking receives.
// Sources: Narayanan thesis (notes_003) §PipeDream-Flush, §2BW, PTD-P interleaved schedule; Huang et al. GPipe.
#pragma once
#include <string>
#include <vector>

#include "strata/cost/strategy.hpp"

namespace strata::exec {

struct PipeOp {
  bool forward = true;
  int micro_batch = 0;  // index within the step (or within the whole run for pipedream/2bw)
  int chunk = 0;        // local chunk index 0..v-1; global chunk = chunk·pp + stage
  bool operator==(const PipeOp&) const = default;
};

// Ops of `stage` for one step of m micro-batches over pp stages with v chunks per stage.
//  gpipe:       all forwards (chunk-major order of the interleaved pattern when v > 1), then all backwards.
//  1f1b:        min(pp−stage−1, m) warm-up forwards, then one forward + one backward, then cool-down backwards.
//  interleaved: Megatron's schedule (m % pp == 0): warm-up (pp−stage−1)·2 + (v−1)·pp, forward k runs chunk
//               ⌊(k mod pp·v)/pp⌋ of micro-batch ⌊k/(pp·v)⌋·pp + k mod pp, backwards mirror the chunks.
//  pipedream/2bw: 1f1b over all m micro-batches of the run without flushes (m = steps · micro-batches).
std::vector<PipeOp> stage_schedule(cost::Schedule schedule, int pp, int v, int m, int stage);

// Simulates the per-stage op lists (index = stage) with sends that never block and receives that block: a
// forward of global chunk g > 0 needs the forward of g−1, a backward of g needs its own forward and the
// backward of g+1. Returns "" when every op runs, else a description of the stuck state.
std::string check_schedule(const std::vector<std::vector<PipeOp>>& per_stage, int pp, int v, int m);

}  // namespace strata::exec
