// exec/host_memory: the host memory a run needs before any rank allocates it, and the refusal when this host
// does not have it (`strata run` with gpt3-175b once allocated until the machine ran out). No torch here.
//
// Per rank and model chunk, as src/exec/worker_setup.cpp allocates them (fp32, 4 bytes each): the flat parameter
// buffer (P elements, the rank's tensor-parallel slice), its flat gradient (P), Adam's exp_avg and exp_avg_sq
// (2·P, or 2·P/dp when ZeRO >= 1 shards them) and under ZeRO-3 the rank's parameter shard (P/dp; the full buffer
// is re-gathered for compute, so it still counts). Activations: one micro-batch in flight (schedules keep up to
// pp or m of them, so this is the least any schedule needs), per transformer block from Korthikanti et al. 2022,
// "Reducing Activation Recomputation in Large Transformer Models", Table 2 — s·b·h·(34 + 5·a·s/h) bytes for
// 16-bit activations without parallelism, s·b·h·(10 + 24/t + 5·a·s/(h·t)) with tensor parallelism t,
// s·b·h/t·(34 + 5·a·s/h) with sequence parallelism, 2·s·b·h for full recomputation, the 5·a·s/h term dropped
// for selective — doubled for fp32; plus the fp32 logits and their gradient (2·b·s·vocab·4) on the head's chunk.
// Extra weight versions (PipeDream, 2BW) and transient copies at initialisation are left out: the figure is a
// lower bound, so a run refused by it cannot fit.
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/per_stage.hpp"
#include "strata/exec/run.hpp"

namespace strata::exec {
namespace {

// Parameters (elements) of chain entry `e` held by one tensor-parallel rank (src/exec/nn.cpp init_entry).
double entry_params(const GptDims& d, int e, int tp) {
  const double h = static_cast<double>(d.hidden), v = static_cast<double>(d.vocab);
  if (e == 0) return v * h + (d.learned_positions ? static_cast<double>(d.seq) * h : 0.0);
  if (e == d.chain_length() - 1) return 2 * h + v * h;  // final LayerNorm + head (a copy when tied)
  const double hl = h / tp, fl = static_cast<double>(d.ffn) / tp;
  const double weights = 3 * h * hl + h * hl + fl * h + h * fl;  // qkv, out-proj, fc1, fc2 slices
  const double biases = d.bias ? 3 * hl + h + fl + h : 0.0;
  return 4 * h + weights + biases;  // + two LayerNorms (weight, bias)
}

// Activation bytes of one micro-batch through chain entry `e` on one tensor-parallel rank (see the file comment).
double entry_activation_bytes(const GptDims& d, const cost::Strategy& s, int e) {
  const double b = static_cast<double>(s.micro_batch), sq = static_cast<double>(d.seq);
  const double h = static_cast<double>(d.hidden), a = static_cast<double>(d.heads), t = s.tp;
  constexpr double kFp32 = 2.0;  // the paper's figures are for 16-bit activations
  if (e == 0) return b * sq * h * 4;
  if (e == d.chain_length() - 1) return 2 * b * sq * static_cast<double>(d.vocab) * 4;
  if (s.recompute == model::Recompute::full) return kFp32 * 2 * sq * b * h;
  const double attention = s.recompute == model::Recompute::selective ? 0.0 : 5 * a * sq / h;
  if (s.sequence_parallel && s.tp > 1) return kFp32 * sq * b * h / t * (34 + attention);
  if (s.tp > 1) return kFp32 * sq * b * h * (10 + 24 / t + attention / t);
  return kFp32 * sq * b * h * (34 + attention);
}

// Bytes one rank holding the chunk of chain entries [first, last) needs under the (uniform) strategy s.
double chunk_rank_bytes(const RunOptions& o, const cost::Strategy& s, int first, int last) {
  double params = 0, activations = 0;
  for (int e = first; e < last; ++e) {
    params += entry_params(o.model, e, s.tp);
    activations += entry_activation_bytes(o.model, s, e);
  }
  const double shard = params / s.dp;
  const double optimizer = o.optimizer == Optimizer::adam ? 2 * (s.zero_stage >= 1 ? shard : params) : 0.0;
  const double zero3_shard = s.zero_stage == 3 ? shard : 0.0;
  return 4 * (2 * params + optimizer + zero3_shard) + activations;
}

// Per-stage strategies: stage i's ranks hold its layers at its own dp and tp (the stage-local view they run).
HostMemoryNeed per_stage_need(const RunOptions& o) {
  HostMemoryNeed need;
  const auto& s = o.strategy;
  const auto bounds = cost::chunk_boundaries(s);
  for (int i = 0; i < static_cast<int>(s.stages.size()); ++i) {
    const double b = chunk_rank_bytes(o, cost::stage_local_strategy(s, i), bounds[i], bounds[i + 1]);
    need.largest_rank_bytes = std::max(need.largest_rank_bytes, b);
    need.all_ranks_bytes += b * s.stages[i].dp * s.stages[i].tp;
  }
  return need;
}

}  // namespace

HostMemoryNeed host_memory_need(const RunOptions& o) {
  if (!cost::is_uniform(o.strategy)) return per_stage_need(o);
  HostMemoryNeed need;
  const auto& s = o.strategy;
  const int stages = s.pp;
  std::vector<double> stage_bytes(stages, 0.0);
  int first = 0;
  for (std::size_t k = 0; k < s.split.size(); ++k) {  // chunk k runs on stage k mod pp (interleaved order)
    const int last = first + s.split[k];
    stage_bytes[k % stages] += chunk_rank_bytes(o, s, first, last);
    first = last;
  }
  for (double b : stage_bytes) {
    need.largest_rank_bytes = std::max(need.largest_rank_bytes, b);
    need.all_ranks_bytes += b * s.dp * s.tp;
  }
  return need;
}

double available_host_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key, unit;
    double kib = 0;
    if (in >> key >> kib >> unit && key == "MemAvailable:") return kib * 1024;
  }
  return -1;
}

void check_host_memory(const RunOptions& o, int local_ranks) {
  const double available = available_host_memory_bytes();
  if (available < 0) return;  // no /proc/meminfo (not Linux): nothing to compare with
  const auto need = host_memory_need(o);
  const int world = cost::devices_used(o.strategy);
  // Under torchrun this host runs local_ranks of the world; their share of the total (ranks differ by stage).
  const double local_bytes = need.all_ranks_bytes * local_ranks / std::max(1, world);
  if (local_bytes <= available) return;
  throw core::InputError(fmt::format(
      "run: model '{}' needs at least {} of host memory for {} local rank(s) ({} on the largest: fp32 weights, "
      "gradients{} and one micro-batch's activations) but this host has {} available (MemAvailable in "
      "/proc/meminfo)",
      o.model.name, core::format_bytes(local_bytes), local_ranks, core::format_bytes(need.largest_rank_bytes),
      o.optimizer == Optimizer::adam ? ", Adam states" : "", core::format_bytes(available)));
}

}  // namespace strata::exec
