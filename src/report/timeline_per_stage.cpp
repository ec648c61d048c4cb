// report/timeline_per_stage: the timeline and memory sections of a per-stage plan whose stages have different
// widths (report_internal.hpp). The pipeline program of sim::simulate has one width for every stage, so these
// plans are replayed by sim::simulate_per_stage (docs/simulator.md §Per-stage widths): GPipe / 1F1B one flushed
// iteration, every replica's forward, backward and sync as Gantt boxes; PipeDream / 2BW the steady-state iteration
// time only (no boxes). Memory per stage is the cost model's (the replay tracks none): no curve, the peak only.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report_internal.hpp"
#include "strata/core/text.hpp"
#include "strata/sim/pipeline.hpp"
#include "strata/sim/replicated.hpp"

namespace strata::report::detail {
namespace {

int tag_of(sim::ReplicaOp::Kind k) {
  using K = sim::ReplicaOp::Kind;
  const sim::TaskTag t = k == K::forward ? sim::TaskTag::forward
                         : k == K::backward ? sim::TaskTag::backward : sim::TaskTag::optimizer;
  return static_cast<int>(t);
}

// One Gantt worker per (stage, replica): its compute ops as [start delta, duration, tag, micro, chunk] groups.
OJson workers_json(const cost::Strategy& s, const hw::Cluster& c, const sim::PerStageSimulation& r, double tick,
                   const std::vector<cost::StageView>& views) {
  std::vector<int> first(views.size() + 1, 0);
  for (std::size_t i = 0; i < views.size(); ++i) first[i + 1] = first[i] + s.stages[i].dp;
  std::vector<OJson> compute(first.back(), OJson::array());
  std::vector<long long> prev(first.back(), 0);
  for (const auto& op : r.result.ops) {
    const int w = first[op.stage] + op.replica;
    const long long b = ticks(op.start_s, tick), e = ticks(op.end_s, tick);
    for (long long x : {b - prev[w], e - b, static_cast<long long>(tag_of(op.kind)),
                        static_cast<long long>(op.micro), 0LL})
      compute[w].push_back(x);
    prev[w] = b;
  }
  OJson out = OJson::array();
  for (std::size_t st = 0; st < views.size(); ++st) {
    const auto& v = views[st];
    for (int d = 0; d < s.stages[st].dp; ++d) {
      OJson wj;
      wj["worker"] = first[st] + d;
      wj["stage"] = static_cast<int>(st);
      wj["dp"] = d;
      wj["devices"] = std::vector<int>(v.devices.begin() + d * v.tp, v.devices.begin() + (d + 1) * v.tp);
      wj["gpu"] = c.gpu_of(v.devices[d * v.tp]).name;
      wj["compute"] = std::move(compute[first[st] + d]);
      wj["comm"] = OJson::array();
      out.push_back(std::move(wj));
    }
  }
  return out;
}

OJson memory_json(const cost::Estimate& e, const std::vector<int>& first_worker) {
  OJson stages = OJson::array();
  for (std::size_t st = 0; st < e.stages.size(); ++st) {
    const auto& se = e.stages[st];
    OJson j;
    j["stage"] = static_cast<int>(st);
    j["worker"] = first_worker[st];
    j["gpu"] = se.gpu;
    j["capacity_bytes"] = se.memory_capacity_bytes;
    j["peak_bytes"] = se.memory_bytes;
    j["peak_time_ticks"] = 0;
    j["peak_text"] = fmt::format("{} of {} (cost model)", core::format_bytes(se.memory_bytes),
                                 core::format_bytes(se.memory_capacity_bytes));
    OJson bd;
    bd["weights"] = se.memory.weights_bytes;
    bd["gradients"] = se.memory.gradients_bytes;
    bd["optimizer"] = se.memory.optimizer_bytes;
    bd["activations"] = se.memory.activations_bytes + se.memory.recompute_bytes;
    bd["buffers"] = se.memory.buffers_bytes + se.memory.workspace_bytes;
    j["breakdown"] = bd;
    j["points"] = OJson::array();
    stages.push_back(std::move(j));
  }
  return stages;
}

}  // namespace

OJson per_stage_timeline_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c,
                                 const ReportOptions& opt) {
  const cost::Strategy& s = pv.best;
  const cost::Estimate e = cost::estimate(m, c, s, opt.cost);
  const bool flush = s.schedule == cost::Schedule::gpipe || s.schedule == cost::Schedule::one_f_one_b;
  sim::PerStageSimulation r;
  if (flush) {  // the flushed iteration with its ops kept (sim::simulate_per_stage without them)
    r.input = sim::replicated_from_estimate(s, e);
    r.input.record_ops = true;
    r.micro_batches = r.input.micro_batches;
    r.result = sim::simulate_replicated_flush(r.input, s.schedule);
    r.iteration_time_s = r.result.makespan_s;
    r.estimate_iteration_time_s = e.pipeline_time_s;
  } else {
    r = sim::simulate_per_stage(s, e);
  }
  const auto views = cost::stage_views(s, c);
  const double makespan = flush ? r.result.makespan_s : r.iteration_time_s;
  const double tick = tick_length_s(makespan);
  int max_dp = 0;
  std::vector<int> first_worker(s.stages.size(), 0);
  for (std::size_t i = 0; i < s.stages.size(); ++i) {
    max_dp = std::max(max_dp, s.stages[i].dp);
    if (i > 0) first_worker[i] = first_worker[i - 1] + s.stages[i - 1].dp;
  }
  double busy = 0, replicas = 0;
  for (std::size_t i = 0; i < r.result.stage_busy_s.size(); ++i)
    busy += r.result.stage_busy_s[i] * s.stages[i].dp, replicas += s.stages[i].dp;
  OJson j;
  j["tick_s"] = tick;
  j["iteration_time_s"] = r.iteration_time_s;
  j["iteration_time_text"] = core::format_seconds(r.iteration_time_s);
  j["makespan_ticks"] = ticks(makespan, tick);
  j["iterations"] = 1;
  j["bubble_fraction"] = flush && replicas > 0 && makespan > 0 ? 1 - busy / (replicas * makespan) : 0.0;
  j["p"] = s.pp;
  j["dp"] = max_dp;
  j["v"] = 1;
  j["m"] = r.micro_batches;
  j["rows"] = cost::devices_used(s) <= opt.device_rows_max ? "device" : "stage";
  OJson tags = OJson::array();
  for (int t = 0; t <= static_cast<int>(sim::TaskTag::zero3_gather); ++t)
    tags.push_back(std::string(sim::to_string(static_cast<sim::TaskTag>(t))));
  j["tags"] = tags;
  j["replicas_included"] = max_dp;
  j["comm_lane"] = false;
  j["workers"] = flush ? workers_json(s, c, r, tick, views) : OJson::array();
  j["memory"] = memory_json(e, first_worker);
  j["peak_memory_bytes"] = e.peak_memory_bytes;
  j["peak_memory_text"] = core::format_bytes(e.peak_memory_bytes) + " (cost model)";
  j["analytical_iteration_time_s"] = e.iteration_time_s;
  j["replay"] = flush ? "per-stage flushed iteration (compute ops per replica; no communication lanes)"
                      : "per-stage steady state (iteration time only)";
  return j;
}

}  // namespace strata::report::detail
