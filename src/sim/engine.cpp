// sim/engine: event loop of the simulator (see engine.hpp). Flat per-task arrays; the only allocation per event
// is the priority queue's storage (reserved up front). Rates change when flows start/stop on a shared link
// (equal share per link; a flow runs at the smallest share among the links it crosses, relative to its
// bottleneck alone) or when an overlap group starts/stops communicating; a rate change re-times the task and
// invalidates its pending event through a version counter (lazy deletion).
#include "strata/sim/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>

namespace strata::sim {

// ---- builder ---------------------------------------------------------------------------------------------------
int TaskGraphBuilder::add_stream() {
  stream_lists_.emplace_back();
  return static_cast<int>(stream_lists_.size()) - 1;
}
int TaskGraphBuilder::add_resource(double bw) {
  if (!(bw > 0)) throw std::logic_error("sim: link resource with non-positive bandwidth");
  g_.resource_bw.push_back(bw);
  return static_cast<int>(g_.resource_bw.size()) - 1;
}
int TaskGraphBuilder::add_memory_account(double initial_bytes) {
  g_.initial_memory.push_back(initial_bytes);
  return static_cast<int>(g_.initial_memory.size()) - 1;
}
int TaskGraphBuilder::add_overlap_group() { return g_.num_overlap_groups++; }

int TaskGraphBuilder::add_task(int stream, TaskKind kind, double work, double latency, int group) {
  if (stream < 0 || stream >= static_cast<int>(stream_lists_.size())) throw std::logic_error("sim: bad stream");
  const int id = num_tasks();
  g_.work_s.push_back(std::max(0.0, work));
  g_.latency_s.push_back(std::max(0.0, latency));
  g_.stream.push_back(stream);
  g_.kind.push_back(kind);
  g_.overlap_group.push_back(group);
  g_.mem_owner.push_back(-1);
  g_.mem_at_start.push_back(0);
  g_.mem_at_end.push_back(0);
  task_res_.emplace_back();
  stream_lists_[stream].push_back(id);
  return id;
}
int TaskGraphBuilder::add_compute(int stream, double duration_s, int group) {
  return add_task(stream, TaskKind::compute, duration_s, 0.0, group);
}
int TaskGraphBuilder::add_comm(int stream, double total_s, double latency_s, const std::vector<int>& resources,
                               int group) {
  const double lat = std::min(std::max(0.0, latency_s), std::max(0.0, total_s));
  const int id = add_task(stream, TaskKind::comm, total_s - lat, lat, group);
  auto& r = task_res_[id];
  r.assign(resources.begin(), resources.end());
  std::sort(r.begin(), r.end());
  r.erase(std::unique(r.begin(), r.end()), r.end());
  return id;
}
void TaskGraphBuilder::add_edge(int from, int to) {
  if (from < 0 || to < 0 || from == to) return;
  edges_.emplace_back(from, to);
}
void TaskGraphBuilder::set_memory(int task, int account, double at_start, double at_end) {
  g_.mem_owner[task] = account;
  g_.mem_at_start[task] = at_start;
  g_.mem_at_end[task] = at_end;
}

TaskGraph TaskGraphBuilder::build() {
  const int n = num_tasks();
  std::sort(edges_.begin(), edges_.end());
  edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
  g_.succ_begin.assign(n + 1, 0);
  g_.num_preds.assign(n, 0);
  for (auto [a, b] : edges_) {
    ++g_.succ_begin[a + 1];
    ++g_.num_preds[b];
  }
  for (int i = 0; i < n; ++i) g_.succ_begin[i + 1] += g_.succ_begin[i];
  g_.succ.resize(edges_.size());
  {
    std::vector<std::int32_t> pos(g_.succ_begin.begin(), g_.succ_begin.end() - 1);
    for (auto [a, b] : edges_) g_.succ[pos[a]++] = b;
  }
  g_.res_begin.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) g_.res_begin[i + 1] = g_.res_begin[i] + static_cast<int>(task_res_[i].size());
  g_.res.clear();
  for (auto& r : task_res_) g_.res.insert(g_.res.end(), r.begin(), r.end());
  g_.stream_begin.assign(1, 0);
  g_.stream_tasks.clear();
  for (auto& s : stream_lists_) {
    g_.stream_tasks.insert(g_.stream_tasks.end(), s.begin(), s.end());
    g_.stream_begin.push_back(static_cast<int>(g_.stream_tasks.size()));
  }
  g_.overlap_slowdown = slowdown_;
  TaskGraph out = std::move(g_);
  *this = TaskGraphBuilder{};
  return out;
}

// ---- engine ----------------------------------------------------------------------------------------------------
namespace {

struct EngineEvent {
  double t;
  std::uint64_t seq;
  std::int32_t task;
  std::uint32_t version;  // low bit: phase (0 = work done, 1 = latency done)
};
struct Later {
  bool operator()(const EngineEvent& a, const EngineEvent& b) const {
    return a.t > b.t || (a.t == b.t && a.seq > b.seq);
  }
};

class Engine {
 public:
  Engine(const TaskGraph& g, const EngineOptions& opt) : g_(g), opt_(opt) {
    const int n = g.num_tasks();
    remaining_.assign(n, 0);
    rate_.assign(n, 1);
    last_.assign(n, 0);
    version_.assign(n, 0);
    preds_left_.assign(g.num_preds.begin(), g.num_preds.end());
    res_.start_s.assign(n, -1);
    res_.end_s.assign(n, -1);
    head_.assign(g.stream_begin.begin(), g.stream_begin.end() - 1);
    running_.assign(g.num_streams(), -1);
    active_.assign(g.resource_bw.size(), {});
    group_active_.assign(g.num_overlap_groups, 0);
    group_streams_.assign(g.num_overlap_groups, {});
    for (int t = 0; t < n; ++t) {
      if (g.kind[t] == TaskKind::compute && g.overlap_group[t] >= 0) {
        auto& v = group_streams_[g.overlap_group[t]];
        if (std::find(v.begin(), v.end(), g.stream[t]) == v.end()) v.push_back(g.stream[t]);
      }
    }
    mem_.assign(g.initial_memory.begin(), g.initial_memory.end());
    res_.memory.resize(mem_.size());
    for (std::size_t a = 0; a < mem_.size(); ++a) {
      res_.memory[a].peak_bytes = mem_[a];
      if (opt_.record_memory_timeline) res_.memory[a].timeline.emplace_back(0.0, mem_[a]);
    }
    std::vector<EngineEvent> storage;
    storage.reserve(static_cast<std::size_t>(g.num_streams()) * 2 + 64);
    queue_ = std::priority_queue<EngineEvent, std::vector<EngineEvent>, Later>(Later{}, std::move(storage));
  }

  EngineResult run() {
    for (int s = 0; s < g_.num_streams(); ++s) try_start(s, 0.0);
    while (!queue_.empty()) {
      const EngineEvent e = queue_.top();
      queue_.pop();
      ++res_.events;
      if ((e.version >> 1) != version_[e.task]) continue;  // re-timed since
      if ((e.version & 1u) == 0) work_done(e.task, e.t);
      else complete(e.task, e.t);
    }
    for (int t = 0; t < g_.num_tasks(); ++t) {
      if (res_.end_s[t] < 0) throw std::logic_error("sim: deadlock, task " + std::to_string(t) + " never ran");
    }
    return std::move(res_);
  }

 private:
  void push(int t, double time, int phase) {
    queue_.push(EngineEvent{time, seq_++, t, (version_[t] << 1) | static_cast<std::uint32_t>(phase)});
  }
  double speed(int t) const {
    if (g_.kind[t] == TaskKind::compute) {
      const int grp = g_.overlap_group[t];
      return (grp >= 0 && group_active_[grp] > 0) ? 1.0 / g_.overlap_slowdown : 1.0;
    }
    double alone = std::numeric_limits<double>::infinity(), shared = alone;
    for (int i = g_.res_begin[t]; i < g_.res_begin[t + 1]; ++i) {
      const int r = g_.res[i];
      const double bw = g_.resource_bw[r];
      alone = std::min(alone, bw);
      shared = std::min(shared, bw / static_cast<double>(std::max<std::size_t>(1, active_[r].size())));
    }
    return std::isinf(alone) ? 1.0 : shared / alone;
  }
  void retime(int t, double now) {
    const double s = speed(t);
    if (s == rate_[t]) return;
    remaining_[t] = std::max(0.0, remaining_[t] - (now - last_[t]) * rate_[t]);
    last_[t] = now;
    rate_[t] = s;
    ++version_[t];
    push(t, now + remaining_[t] / s, 0);
  }
  void retime_links_of(int t, double now) {
    for (int i = g_.res_begin[t]; i < g_.res_begin[t + 1]; ++i)
      for (int f : active_[g_.res[i]]) retime(f, now);
  }
  void retime_group(int grp, double now) {
    for (int s : group_streams_[grp]) {
      const int t = running_[s];
      if (t >= 0 && g_.kind[t] == TaskKind::compute && g_.overlap_group[t] == grp) retime(t, now);
    }
  }
  void add_memory(int t, double delta, double now) {
    const int a = g_.mem_owner[t];
    if (a < 0 || delta == 0) return;
    mem_[a] += delta;
    auto& m = res_.memory[a];
    if (mem_[a] > m.peak_bytes) {
      m.peak_bytes = mem_[a];
      m.peak_time_s = now;
    }
    if (opt_.record_memory_timeline) m.timeline.emplace_back(now, mem_[a]);
  }
  void try_start(int s, double now) {
    if (running_[s] >= 0 || head_[s] >= g_.stream_begin[s + 1]) return;
    const int t = g_.stream_tasks[head_[s]];
    if (preds_left_[t] > 0) return;
    running_[s] = t;
    res_.start_s[t] = now;
    add_memory(t, g_.mem_at_start[t], now);
    remaining_[t] = g_.work_s[t];
    last_[t] = now;
    if (g_.kind[t] == TaskKind::comm) {
      for (int i = g_.res_begin[t]; i < g_.res_begin[t + 1]; ++i) active_[g_.res[i]].push_back(t);
      const int grp = g_.overlap_group[t];
      if (grp >= 0 && group_active_[grp]++ == 0) retime_group(grp, now);
    }
    rate_[t] = speed(t);
    push(t, now + remaining_[t] / rate_[t], 0);
    if (g_.kind[t] == TaskKind::comm) retime_links_of(t, now);  // the others now share with t
  }
  void work_done(int t, double now) {
    if (g_.kind[t] == TaskKind::comm) {
      for (int i = g_.res_begin[t]; i < g_.res_begin[t + 1]; ++i) {
        auto& v = active_[g_.res[i]];
        v.erase(std::find(v.begin(), v.end(), t));
      }
      retime_links_of(t, now);
      const int grp = g_.overlap_group[t];
      if (grp >= 0 && --group_active_[grp] == 0) retime_group(grp, now);
    }
    ++version_[t];  // no more re-timing
    if (g_.latency_s[t] > 0) push(t, now + g_.latency_s[t], 1);
    else complete(t, now);
  }
  void complete(int t, double now) {
    res_.end_s[t] = now;
    res_.makespan_s = std::max(res_.makespan_s, now);
    add_memory(t, g_.mem_at_end[t], now);
    const int s = g_.stream[t];
    running_[s] = -1;
    ++head_[s];
    for (int i = g_.succ_begin[t]; i < g_.succ_begin[t + 1]; ++i) {
      const int u = g_.succ[i];
      if (--preds_left_[u] == 0) try_start(g_.stream[u], now);
    }
    try_start(s, now);
  }

  const TaskGraph& g_;
  EngineOptions opt_;
  std::vector<double> remaining_, rate_, last_;
  std::vector<std::uint32_t> version_;
  std::vector<std::int32_t> preds_left_, head_, running_;
  std::vector<std::vector<std::int32_t>> active_;        // flows on each resource
  std::vector<int> group_active_;
  std::vector<std::vector<std::int32_t>> group_streams_;  // compute streams slowed by each group
  std::vector<double> mem_;
  std::priority_queue<EngineEvent, std::vector<EngineEvent>, Later> queue_;
  std::uint64_t seq_ = 0;
  EngineResult res_;
};

}  // namespace

EngineResult run(const TaskGraph& g, const EngineOptions& opt) { return Engine(g, opt).run(); }

}  // namespace strata::sim
