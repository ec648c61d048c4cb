// exec/schedule: per-stage op orders of the pipeline schedules and the deadlock checker (no torch here).
#include "strata/exec/schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace strata::exec {
namespace {

// Megatron's mapping of the k-th forward (or backward) of a stage to (micro-batch, chunk) in the interleaved
// schedule: groups of pp micro-batches go through chunk 0, then chunk 1, ... (PTD-P §2.2).
PipeOp interleaved_op(int k, int pp, int v, bool forward) {
  const int group = pp * v;
  const int in_group = k % group;
  int chunk = in_group / pp;
  if (!forward) chunk = v - 1 - chunk;
  return PipeOp{forward, (k / group) * pp + in_group % pp, chunk};
}

std::vector<PipeOp> one_f_one_b(int pp, int m, int stage) {
  std::vector<PipeOp> ops;
  const int warmup = std::min(pp - stage - 1, m);
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) ops.push_back({true, next_f, 0});
  while (next_f < m) {
    ops.push_back({true, next_f++, 0});
    ops.push_back({false, next_b++, 0});
  }
  for (; next_b < m; ++next_b) ops.push_back({false, next_b, 0});
  return ops;
}

}  // namespace

std::vector<PipeOp> stage_schedule(cost::Schedule schedule, int pp, int v, int m, int stage) {
  if (pp < 1 || v < 1 || m < 1 || stage < 0 || stage >= pp)
    throw std::logic_error(fmt::format("stage_schedule: bad shape pp={} v={} m={} stage={}", pp, v, m, stage));
  std::vector<PipeOp> ops;
  switch (schedule) {
    case cost::Schedule::gpipe: {
      if (v == 1) {
        for (int i = 0; i < m; ++i) ops.push_back({true, i, 0});
        for (int i = 0; i < m; ++i) ops.push_back({false, i, 0});
      } else {
        if (m % pp != 0) throw std::logic_error("gpipe with v > 1 needs m % pp == 0");
        for (int k = 0; k < m * v; ++k) ops.push_back(interleaved_op(k, pp, v, true));
        for (int k = 0; k < m * v; ++k) ops.push_back(interleaved_op(k, pp, v, false));
      }
      return ops;
    }
    case cost::Schedule::one_f_one_b:
    case cost::Schedule::pipedream:
    case cost::Schedule::two_bw:
      if (v != 1) throw std::logic_error("1f1b/pipedream/2bw need v == 1");
      return one_f_one_b(pp, m, stage);
    case cost::Schedule::interleaved: {
      if (v == 1) return one_f_one_b(pp, m, stage);
      if (m % pp != 0) throw std::logic_error("interleaved schedule needs m % pp == 0");
      const int total = m * v;
      const int warmup = std::min((pp - stage - 1) * 2 + (v - 1) * pp, total);
      for (int k = 0; k < warmup; ++k) ops.push_back(interleaved_op(k, pp, v, true));
      for (int k = 0; k < total - warmup; ++k) {
        ops.push_back(interleaved_op(warmup + k, pp, v, true));
        ops.push_back(interleaved_op(k, pp, v, false));
      }
      for (int k = total - warmup; k < total; ++k) ops.push_back(interleaved_op(k, pp, v, false));
      return ops;
    }
  }
  return ops;
}

std::string check_schedule(const std::vector<std::vector<PipeOp>>& per_stage, int pp, int v, int m) {
  const int chunks = pp * v;
  // done[(fwd, mb, global chunk)]
  std::map<std::tuple<bool, int, int>, bool> done;
  std::vector<std::size_t> pos(per_stage.size(), 0);
  std::size_t remaining = 0;
  for (const auto& ops : per_stage) remaining += ops.size();
  if (remaining != static_cast<std::size_t>(2 * m * chunks))
    return fmt::format("expected {} ops in total, got {}", 2 * m * chunks, remaining);
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < static_cast<int>(per_stage.size()); ++s) {
      while (pos[s] < per_stage[s].size()) {
        const auto& op = per_stage[s][pos[s]];
        const int g = op.chunk * pp + s;
        bool ready;
        if (op.forward)
          ready = g == 0 || done.count({true, op.micro_batch, g - 1});
        else
          ready = done.count({true, op.micro_batch, g}) && (g == chunks - 1 || done.count({false, op.micro_batch, g + 1}));
        if (!ready) break;
        if (done.count({op.forward, op.micro_batch, g}))
          return fmt::format("stage {} runs {}({}, chunk {}) twice", s, op.forward ? "F" : "B", op.micro_batch, g);
        done[{op.forward, op.micro_batch, g}] = true;
        ++pos[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      std::string stuck;
      for (int s = 0; s < static_cast<int>(per_stage.size()); ++s)
        if (pos[s] < per_stage[s].size()) {
          const auto& op = per_stage[s][pos[s]];
          stuck += fmt::format("{}stage {} waits at {}({}, chunk {})", stuck.empty() ? "" : "; ", s,
                               op.forward ? "F" : "B", op.micro_batch, op.chunk * pp + s);
        }
      return "deadlock: " + stuck;
    }
  }
  return "";
}

}  // namespace strata::exec
