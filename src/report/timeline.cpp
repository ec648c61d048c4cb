// report/timeline: the simulated iteration for the Gantt chart and the memory-over-time chart. Runs
// sim::simulate on the plan's best strategy (timeline and memory kept), then flattens each worker's tasks into
// integer ticks (compact and exact enough to draw) and each stage's memory curve (the worker with the highest
// peak; downsampled to min/max per bucket, so the peak is always kept) with the breakdown at the peak.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report_internal.hpp"
#include "strata/core/text.hpp"
#include "strata/sim/from_cost.hpp"

namespace strata::report::detail {
namespace {

// Streams drawn for a worker: its compute stream, and (with_comm) its sends and the DP collectives of tp rank 0
// (the other tp ranks' run alongside).
bool drawn(const sim::SimResult& r, int s, int w, bool with_comm) {
  if (r.stream_worker[s] != w) return false;
  const auto role = r.stream_role[s];
  if (role == sim::StreamRole::compute) return true;
  return with_comm && !(role == sim::StreamRole::dp && r.stream_tp[s] > 0);
}

// Worker's tasks as flat [start, duration, tag, micro, chunk] groups, the start as the difference to the previous
// group's start (small numbers: the page is a third of the size; the script adds them up).
void worker_tasks(const sim::SimResult& r, int w, double tick, bool with_comm, OJson& compute, OJson& comm) {
  const auto& g = r.graph;
  long long prev_compute = 0, prev_comm = 0;
  for (int s = 0; s < g.num_streams(); ++s) {
    if (!drawn(r, s, w, with_comm)) continue;
    const bool is_compute = r.stream_role[s] == sim::StreamRole::compute;
    OJson& out = is_compute ? compute : comm;
    long long& prev = is_compute ? prev_compute : prev_comm;
    for (int i = g.stream_begin[s]; i < g.stream_begin[s + 1]; ++i) {
      const int t = g.stream_tasks[i];
      const long long b = ticks(r.engine.start_s[t], tick), e = ticks(r.engine.end_s[t], tick);
      const auto& info = r.info[t];
      out.push_back(b - prev);
      prev = b;
      out.push_back(e - b);
      out.push_back(static_cast<int>(info.tag));
      out.push_back(info.micro);
      out.push_back(info.chunk);
    }
  }
}

// (time ticks, bytes) pairs; at most max_points, keeping each bucket's min and max (so the peak survives).
OJson memory_points(const std::vector<std::pair<double, double>>& tl, double tick, int max_points) {
  OJson out = OJson::array();
  const std::size_t n = tl.size();
  const std::size_t bucket = std::max<std::size_t>(1, (2 * n + max_points - 1) / std::max(2, max_points));
  for (std::size_t b = 0; b < n; b += bucket) {
    const std::size_t end = std::min(n, b + bucket);
    std::size_t lo = b, hi = b;
    for (std::size_t i = b; i < end; ++i) {
      if (tl[i].second < tl[lo].second) lo = i;
      if (tl[i].second > tl[hi].second) hi = i;
    }
    for (std::size_t i : {std::min(lo, hi), std::max(lo, hi)}) {
      if (bucket == 1 && i != b) continue;
      out.push_back(ticks(tl[i].first, tick));
      out.push_back(tl[i].second);
      if (lo == hi) break;
    }
  }
  return out;
}

OJson memory_section(const sim::Simulation& sim, const sim::PipelineInput& in, double tick, int max_points) {
  const auto& r = sim.result;
  OJson stages = OJson::array();
  for (int st = 0; st < in.p; ++st) {
    int w = st * in.dp;
    for (int d = 1; d < in.dp; ++d)
      if (r.workers[st * in.dp + d].peak_memory_bytes > r.workers[w].peak_memory_bytes) w = st * in.dp + d;
    const auto& ws = r.workers[w];
    const auto& se = sim.estimate.stages[st];
    OJson j;
    j["stage"] = st;
    j["worker"] = w;
    j["gpu"] = se.gpu;
    j["capacity_bytes"] = se.memory_capacity_bytes;
    j["peak_bytes"] = ws.peak_memory_bytes;
    j["peak_time_ticks"] = ticks(ws.peak_memory_time_s, tick);
    j["peak_text"] = fmt::format("{} of {}", core::format_bytes(ws.peak_memory_bytes),
                                 core::format_bytes(se.memory_capacity_bytes));
    const auto& wi = in.workers[w];
    OJson bd;  // the breakdown at the peak: static parts from the cost model, the rest is live activations
    bd["weights"] = wi.weight_bytes;
    bd["gradients"] = se.memory.gradients_bytes;
    bd["optimizer"] = se.memory.optimizer_bytes;
    bd["activations"] = std::max(0.0, ws.peak_memory_bytes - wi.static_bytes);
    bd["buffers"] = se.memory.buffers_bytes + se.memory.workspace_bytes;
    j["breakdown"] = bd;
    j["points"] = w < static_cast<int>(r.engine.memory.size())
                      ? memory_points(r.engine.memory[w].timeline, tick, max_points) : OJson::array();
    stages.push_back(j);
  }
  return stages;
}

}  // namespace

OJson timeline_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c, const ReportOptions& opt) {
  const cost::Strategy& s = pv.best;
  sim::CostSimOptions co;
  co.cost = opt.cost;
  sim::SimOptions so;
  so.keep_timeline = true;
  so.record_memory_timeline = true;
  const double passes = 2.0 * (s.num_devices() / std::max(1, s.tp)) * s.num_micro_batches() * s.virtual_stages;
  if (opt.progress && passes > 2e5)
    opt.progress(fmt::format("report: simulating {:.0f} micro-batch passes...", passes));
  const sim::Simulation sim = sim::simulate(m, c, s, co, so);
  const auto& r = sim.result;
  const auto& in = sim.input;
  const double tick = tick_length_s(r.makespan_s);
  OJson j;
  j["tick_s"] = tick;
  j["iteration_time_s"] = r.iteration_time_s;
  j["iteration_time_text"] = core::format_seconds(r.iteration_time_s);
  j["makespan_ticks"] = ticks(r.makespan_s, tick);
  j["iterations"] = in.iterations;
  j["bubble_fraction"] = r.bubble_fraction;
  j["p"] = in.p;
  j["dp"] = in.dp;
  j["v"] = in.v;
  j["m"] = in.m;
  j["rows"] = c.num_devices() <= opt.device_rows_max ? "device" : "stage";
  OJson tags = OJson::array();
  for (int t = 0; t <= static_cast<int>(sim::TaskTag::zero3_gather); ++t)
    tags.push_back(std::string(sim::to_string(static_cast<sim::TaskTag>(t))));
  j["tags"] = tags;
  // Whole timeline when small enough; otherwise dp replica 0 of each stage (replicas run the same schedule);
  // when even that is too much, its compute streams only.
  std::vector<std::int64_t> compute_tasks(in.workers.size(), 0), comm_tasks(in.workers.size(), 0);
  for (int s = 0; s < r.graph.num_streams(); ++s) {
    const int w = r.stream_worker[s];
    if (w < 0 || !drawn(r, s, w, true)) continue;
    (r.stream_role[s] == sim::StreamRole::compute ? compute_tasks : comm_tasks)[w] +=
        r.graph.stream_begin[s + 1] - r.graph.stream_begin[s];
  }
  std::int64_t all_tasks = 0, first_replica = 0, first_replica_compute = 0;
  for (std::size_t w = 0; w < in.workers.size(); ++w) {
    all_tasks += compute_tasks[w] + comm_tasks[w];
    if (w % in.dp == 0) first_replica += compute_tasks[w] + comm_tasks[w], first_replica_compute += compute_tasks[w];
  }
  const bool all = all_tasks <= opt.max_timeline_tasks;
  const bool with_comm = all || first_replica <= opt.max_timeline_tasks;
  j["replicas_included"] = all ? in.dp : 1;
  j["comm_lane"] = with_comm;
  OJson workers = OJson::array();
  for (int w = 0; w < static_cast<int>(in.workers.size()); ++w) {
    if (!all && w % in.dp != 0) continue;
    OJson wj, compute = OJson::array(), comm = OJson::array();
    worker_tasks(r, w, tick, with_comm, compute, comm);
    wj["worker"] = w;
    wj["stage"] = w / in.dp;
    wj["dp"] = w % in.dp;
    wj["devices"] = in.workers[w].devices;
    wj["gpu"] = c.gpu_of(in.workers[w].devices.front()).name;
    wj["compute"] = compute;
    wj["comm"] = comm;
    workers.push_back(wj);
  }
  j["workers"] = workers;
  // Memory samples: at most max_memory_points per stage and about 16 × that over all stages (deep pipelines).
  j["memory"] = memory_section(sim, in, tick, std::min(opt.max_memory_points,
                                                      std::max(200, 16 * opt.max_memory_points / std::max(1, in.p))));
  double peak = 0;
  for (const auto& ws : r.workers) peak = std::max(peak, ws.peak_memory_bytes);
  j["peak_memory_bytes"] = peak;
  j["peak_memory_text"] = core::format_bytes(peak);
  j["analytical_iteration_time_s"] = sim.estimate.iteration_time_s;
  return j;
}

}  // namespace strata::report::detail
