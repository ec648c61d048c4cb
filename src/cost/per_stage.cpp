// cost/per_stage: estimate() of per-stage strategies and the schedules' closed forms for unequal stage widths
// (per_stage.hpp; docs/cost-model.md §Per-stage strategies).
#include "strata/cost/per_stage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/program.hpp"
#include "strata/cost/reshard.hpp"
#include "strata/cost/stage.hpp"

namespace strata::cost {
namespace {

double max_of(std::span<const double> x) { return x.empty() ? 0.0 : *std::max_element(x.begin(), x.end()); }

}  // namespace

double per_stage_iteration_time(Schedule sched, std::int64_t total_micro, std::span<const int> r,
                                std::span<const double> t, std::span<const double> e, std::span<const double> sync) {
  const double M = static_cast<double>(total_micro);
  const std::size_t p = t.size();
  auto sync_of = [&](std::size_t i) { return i < sync.size() ? sync[i] : 0.0; };
  switch (sched) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b: {
      double sum = 0, worst = 0;
      for (std::size_t i = 0; i < p; ++i) {
        sum += t[i];
        worst = std::max(worst, (M / r[i] - 1.0) * t[i] + sync_of(i));
      }
      for (double x : e) sum += x;
      return sum + worst;
    }
    case Schedule::pipedream: {
      double worst = max_of(e);
      for (std::size_t i = 0; i < p; ++i) worst = std::max(worst, (t[i] + sync_of(i)) / r[i]);
      return M * worst;
    }
    case Schedule::two_bw: {
      double worst = M * max_of(e);
      for (std::size_t i = 0; i < p; ++i) worst = std::max(worst, M / r[i] * t[i] + sync_of(i));
      return worst;
    }
    case Schedule::interleaved: break;
  }
  throw core::InputError(
      "strategy: schedule: rule 'stages need v = 1' violated: interleaved is not a per-stage schedule");
}

double per_stage_pipeline_time(Schedule sched, std::int64_t total_micro, std::span<const int> r,
                               std::span<const double> t, std::span<const double> e) {
  return per_stage_iteration_time(sched, total_micro, r, t, e, {});
}

namespace {

// Every stage as wide as the first: micro-batch k runs on replica k mod r of every stage, so the flushed iteration is
// r independent pipelines of m = M/r micro-batches each — the uniform pipeline program.
bool equal_widths(const StageTimes& x) {
  return !x.replicas.empty() && x.total_micro % x.replicas[0] == 0 &&
         std::all_of(x.replicas.begin(), x.replicas.end(), [&](int w) { return w == x.replicas[0]; });
}

// The pipeline program of one replica pipeline (cost/program: the order the simulator and the executor run), timed
// by its dependency-only replay: a stage's sync + step is its `optimizer` op, so it starts at the stage's own last
// backward (later stages finish first) instead of after the whole drain.
PerStageTiming program_timing(const StageTimes& x) {
  const int p = static_cast<int>(x.fwd.size());
  ProgramShape sh;
  sh.schedule = x.schedule;
  sh.p = p;
  sh.m = x.total_micro / x.replicas[0];
  const PipelineProgram prog = build_program(sh);
  ProgramDurations d;
  for (int i = 0; i < p; ++i) {
    d.fwd_s.push_back({x.fwd[i]});
    d.bwd_s.push_back({x.bwd[i]});
    // e_i is the boundary's round trip; the program charges each direction its own p2p time.
    d.p2p_s.push_back({i + 1 < p ? x.e[i] / 2 : 0.0});
  }
  d.optimizer_s.assign(p, 0.0);
  PerStageTiming out;
  out.pipeline_s = time_program(prog, d).makespan_s;
  for (int i = 0; i < p; ++i) d.optimizer_s[i] = i < static_cast<int>(x.sync.size()) ? x.sync[i] : 0.0;
  out.iteration_s = time_program(prog, d).makespan_s;
  return out;
}

}  // namespace

PerStageTiming per_stage_timing(const StageTimes& x) {
  const bool flushed = x.schedule == Schedule::gpipe || x.schedule == Schedule::one_f_one_b;
  if (flushed && equal_widths(x)) return program_timing(x);
  std::vector<double> t(x.fwd.size());
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = x.fwd[i] + x.bwd[i];
  PerStageTiming out;
  out.pipeline_s = per_stage_pipeline_time(x.schedule, x.total_micro, x.replicas, t, x.e);
  out.iteration_s = per_stage_iteration_time(x.schedule, x.total_micro, x.replicas, t, x.e, x.sync);
  if (!flushed) return out;
  // Unequal widths (no one program of one width): the same fact as the program's, in closed form — stage j's last
  // backward ends before stage 0's by the drain below it, D_j = Σ_{k<j} (b_k + e_k/2) (its gradient still crosses
  // those stages and links), and its sync + step starts there.
  double iteration = out.pipeline_s, drain = 0;
  for (std::size_t j = 0; j < t.size(); ++j) {
    const double sync = j < x.sync.size() ? x.sync[j] : 0.0;
    iteration = std::max(iteration, out.pipeline_s - drain + sync);
    drain += x.bwd[j] + (j < x.e.size() ? x.e[j] / 2 : 0.0);
  }
  out.iteration_s = iteration;
  return out;
}

Strategy stage_local_strategy(const Strategy& s, int stage) {
  Strategy l = s;
  l.dp = s.stages[stage].dp;
  l.tp = s.stages[stage].tp;
  l.pp = static_cast<int>(s.stages.size());
  l.virtual_stages = 1;
  l.split.clear();
  for (const auto& st : s.stages) l.split.push_back(st.layers);
  l.placement.clear();
  l.stages.clear();
  return l;
}

namespace {

// The per-stage part of estimate_per_stage: times, memory and sync of stage `st` on its own devices and widths.
StageEstimate stage_estimate(const model::Model& m, const hw::Cluster& c, const Strategy& local, int st,
                             std::span<const int> devices, const CostOptions& opt, double& output_bytes) {
  const StageContext ctx = make_stage_context(m, c, local, devices, opt);
  const auto bounds = chunk_boundaries(local);
  const StageLayerSums ls = sum_stage_layers(m, local, bounds, st, false, [&](int li, model::Recompute mode) {
    return layer_stage_cost(m, m.layers[li], ctx, mode);
  });
  StageEstimate se;
  se.devices.assign(devices.begin(), devices.end());
  se.gpu = c.gpu_types[ctx.gpu_type].name;
  for (int li = bounds[st]; li < bounds[st + 1]; ++li) se.layers.push_back(li);
  se.fwd_s = ls.sums.fwd_s;
  se.bwd_s = ls.sums.bwd_s;
  se.time_s = se.fwd_s + se.bwd_s;
  se.compute_s = ls.compute_s;
  se.tp_comm_s = ls.tp_comm_s;
  se.zero3_busy_s = ls.zero3_busy_s * static_cast<double>(local.num_micro_batches());
  se.memory = stage_memory(ctx, st, ls.sums);
  se.memory_bytes = se.memory.total_bytes();
  se.memory_capacity_bytes = ctx.memory_capacity_bytes;
  se.memory_usable_bytes = ctx.memory_usable_bytes;
  se.fits = se.memory_bytes <= se.memory_usable_bytes;
  se.dp_comm_s = dp_sync_exposed_time(ctx, ls.sums.params_per_device, ls.sums.bwd_s);
  se.optimizer_s = optimizer_step_time(ctx, ls.sums.params_per_device);
  output_bytes = ls.first_chunk_output_bytes;
  return se;
}

}  // namespace

Estimate estimate_per_stage(const model::Model& m, const hw::Cluster& c, const Strategy& s, const CostOptions& opt) {
  for (const auto& st : s.stages)
    if (!st.layer_choices.empty())
      throw core::InputError("strategy: per-layer choices (layers=): costing them is not supported yet "
                             "(Galvatron-BMW per-layer strategies, Oases overlapped TP)");
  const int p = static_cast<int>(s.stages.size());
  if (p < 1 || s.pp != p || s.micro_batch < 1)
    throw std::invalid_argument("estimate: strategy is not complete (call complete_strategy first)");
  for (const auto& st : s.stages)
    if (static_cast<int>(st.devices.size()) != st.dp * st.tp)
      throw std::invalid_argument("estimate: strategy is not complete (stage devices)");
  const std::int64_t M = s.global_batch / s.micro_batch;
  Estimate est;
  est.stages.resize(p);
  std::vector<double> t(p), fwd(p), bwd(p), e(p > 1 ? p - 1 : 0, 0.0), sync(p), out_bytes(p);
  std::vector<int> r(p);
  for (int st = 0; st < p; ++st) {
    const Strategy local = stage_local_strategy(s, st);
    est.stages[st] = stage_estimate(m, c, local, st, s.stages[st].devices, opt, out_bytes[st]);
    t[st] = est.stages[st].time_s;
    fwd[st] = est.stages[st].fwd_s;
    bwd[st] = est.stages[st].bwd_s;
    r[st] = s.stages[st].dp;
    sync[st] = est.stages[st].dp_comm_s + est.stages[st].optimizer_s;
  }
  for (int st = 0; st + 1 < p; ++st) {
    const auto& a = s.stages[st];
    const auto& b = s.stages[st + 1];
    e[st] = reshard_time(c, {a.devices, a.dp, a.tp}, {b.devices, b.dp, b.tp}, out_bytes[st], opt);
    est.stages[st].p2p_s = e[st];
  }
  const StageTimes times{s.schedule, M, r, fwd, bwd, e, sync};
  const PerStageTiming timing = per_stage_timing(times);
  const double pipe = timing.pipeline_s;
  est.pipeline_time_s = timing.iteration_s;
  std::int64_t max_micro = 0;
  for (int st = 0; st < p; ++st) max_micro = std::max<std::int64_t>(max_micro, M / r[st]);
  est.host = host_cpu_bound(c, est.stages, max_micro);
  est.iteration_time_s = std::max(est.pipeline_time_s, est.host.bound_s);
  for (int st = 0; st < p; ++st)
    est.stages[st].bubble_s = std::max(0.0, pipe - static_cast<double>(M / r[st]) * t[st]);
  // FLOP rates over the devices the strategy uses (idle devices are not part of the run).
  double peak_sum = 0;
  for (const auto& st : s.stages)
    for (int d : st.devices) peak_sum += c.gpu_of(d).peak(s.dtype);
  finish_estimate(est, m, s, opt, devices_used(s), peak_sum);
  return est;
}

}  // namespace strata::cost
