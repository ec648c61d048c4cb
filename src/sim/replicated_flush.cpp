// sim/replicated_flush: the event replay of one flushed iteration (GPipe, 1F1B) of a pipeline whose stages have
// different widths (replicated.hpp, docs/simulator.md §Per-stage widths).
#include <algorithm>
#include <deque>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "strata/cost/program.hpp"
#include "strata/sim/replicated.hpp"

namespace strata::sim {
namespace {

enum class FlushOp { fwd, bwd, sync, link };

struct FlushEvent {
  double time;
  std::int64_t seq;  // insertion order: deterministic ties
  FlushOp op;
  int stage, replica;  // link: stage = boundary, replica = 0 activation / 1 gradient
  std::int64_t micro;
  bool operator>(const FlushEvent& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

// One compute step of a replica's fixed order: a forward or a backward of global micro-batch `micro`.
struct FlushStep {
  bool backward = false;
  std::int64_t micro = 0;
};

struct FlushReplica {
  std::deque<std::int64_t> fwd_ready, bwd_ready;
  std::vector<FlushStep> order;  // equal widths: the pipeline program's order (program_orders); empty = greedy
  std::size_t next = 0;     // the next step of `order`
  bool busy = false, synced = false;
  std::int64_t assigned = 0, fwd_done = 0, bwd_done = 0, fwd_started = 0, most_in_flight = 0;
  double busy_s = 0, done_s = 0;
};

struct FlushLink {
  std::deque<std::int64_t> activations, gradients;  // gradients first, as the compute
  bool busy = false;
};

struct FlushSim {
  const ReplicatedInput& in;
  cost::Schedule schedule;
  std::vector<std::vector<FlushReplica>> rep;
  std::vector<FlushLink> links;
  std::vector<std::int64_t> limit;  // 1F1B: micro-batches in flight per replica of each stage
  std::vector<int> stage_done;      // replicas of each stage past their last backward
  std::priority_queue<FlushEvent, std::vector<FlushEvent>, std::greater<>> events;
  std::int64_t seq = 0;
  ReplicatedResult res;

  FlushSim(const ReplicatedInput& i, cost::Schedule s) : in(i), schedule(s) {}
  int p() const { return static_cast<int>(in.stages.size()); }
  void push(double t, FlushOp op, int st, int r, std::int64_t k) { events.push({t, seq++, op, st, r, k}); }
  int owner(int st, std::int64_t k) const { return static_cast<int>(k % in.stages[st].replicas); }
  void run_op(double now, FlushOp op, int st, int r, std::int64_t k, double d) {
    rep[st][r].busy = true;
    rep[st][r].busy_s += d;
    push(now + d, op, st, r, k);
    if (!in.record_ops) return;
    const auto kind = op == FlushOp::fwd ? ReplicaOp::Kind::forward
                      : op == FlushOp::bwd ? ReplicaOp::Kind::backward : ReplicaOp::Kind::sync;
    res.ops.push_back({st, r, kind, k, now, now + d});
  }

  // GPipe: every forward of the replica before its first backward. 1F1B: backward first, and at most limit[i]
  // micro-batches forwarded but not yet backwarded on a replica of stage i.
  void try_compute(double now, int st, int r) {
    FlushReplica& x = rep[st][r];
    const auto& S = in.stages[st];
    if (x.busy || x.synced) return;
    if (x.bwd_done == x.assigned) {
      // The stage's gradient all-reduce (and then each replica's step) is a collective over its replicas: it
      // starts when the last of them has run its last backward, and blocks them all (once per iteration).
      x.synced = true;
      if (++stage_done[st] < in.stages[st].replicas) return;
      for (int q = 0; q < in.stages[st].replicas; ++q) run_op(now, FlushOp::sync, st, q, -1, S.sync_s);
      return;
    }
    if (!x.order.empty()) return run_in_order(now, st, r);
    const bool gpipe = schedule == cost::Schedule::gpipe;
    const bool may_bwd = !x.bwd_ready.empty() && (!gpipe || x.fwd_done == x.assigned);
    const bool may_fwd = !x.fwd_ready.empty() && (gpipe || x.fwd_started - x.bwd_done < limit[st]);
    if (may_bwd && (!gpipe || !may_fwd)) {
      const std::int64_t k = x.bwd_ready.front();
      x.bwd_ready.pop_front();
      run_op(now, FlushOp::bwd, st, r, k, S.bwd_s);
    } else if (may_fwd) {
      const std::int64_t k = x.fwd_ready.front();
      x.fwd_ready.pop_front();
      ++x.fwd_started;
      x.most_in_flight = std::max(x.most_in_flight, x.fwd_started - x.bwd_done);
      run_op(now, FlushOp::fwd, st, r, k, S.fwd_s);
    }
  }
  // The replica's next step of the program's order, once its input (activation or gradient) has arrived.
  void run_in_order(double now, int st, int r) {
    FlushReplica& x = rep[st][r];
    if (x.next >= x.order.size()) return;
    const FlushStep step = x.order[x.next];
    auto& q = step.backward ? x.bwd_ready : x.fwd_ready;
    const auto it = std::find(q.begin(), q.end(), step.micro);
    if (it == q.end()) return;
    q.erase(it);
    ++x.next;
    if (step.backward) return run_op(now, FlushOp::bwd, st, r, step.micro, in.stages[st].bwd_s);
    ++x.fwd_started;
    x.most_in_flight = std::max(x.most_in_flight, x.fwd_started - x.bwd_done);
    run_op(now, FlushOp::fwd, st, r, step.micro, in.stages[st].fwd_s);
  }
  void try_link(double now, int b) {
    FlushLink& l = links[b];
    if (l.busy || (l.activations.empty() && l.gradients.empty())) return;
    const int dir = l.gradients.empty() ? 0 : 1;
    auto& q = dir == 1 ? l.gradients : l.activations;
    const std::int64_t k = q.front();
    q.pop_front();
    l.busy = true;
    push(now + in.link_s[b], FlushOp::link, b, dir, k);
  }

  void handle(const FlushEvent& e) {
    const double t = e.time;
    if (e.op == FlushOp::link) {
      links[e.stage].busy = false;
      const int to = e.replica == 0 ? e.stage + 1 : e.stage;
      const int r = owner(to, e.micro);
      (e.replica == 0 ? rep[to][r].fwd_ready : rep[to][r].bwd_ready).push_back(e.micro);
      try_link(t, e.stage);
      try_compute(t, to, r);
      return;
    }
    FlushReplica& x = rep[e.stage][e.replica];
    x.busy = false;
    if (e.op == FlushOp::fwd) {
      ++x.fwd_done;
      if (e.stage + 1 < p()) links[e.stage].activations.push_back(e.micro), try_link(t, e.stage);
      else x.bwd_ready.push_back(e.micro);
    } else if (e.op == FlushOp::bwd) {
      ++x.bwd_done;
      if (e.stage > 0) links[e.stage - 1].gradients.push_back(e.micro), try_link(t, e.stage - 1);
      else res.done_s[e.micro] = t;
    } else {
      x.done_s = t;
    }
    try_compute(t, e.stage, e.replica);
  }
};

// Every stage r wide (and r dividing M): micro-batch k runs on replica k mod r of every stage, so each replica
// pipeline is the uniform pipeline program of M/r micro-batches, and each replica runs its stage's order from
// cost::build_program (local micro-batch l = global r·l + replica) — the one generator of schedule orders that
// cost/per_stage times and the executor interprets. Unequal widths have no program of one width: the greedy order.
void program_orders(FlushSim& sim, cost::Schedule schedule) {
  const auto& in = sim.in;
  const int r = in.stages.front().replicas;
  for (const auto& st : in.stages)
    if (st.replicas != r) return;
  if (in.micro_batches % r != 0) return;
  cost::ProgramShape sh;
  sh.schedule = schedule;
  sh.p = sim.p();
  sh.m = in.micro_batches / r;
  const cost::PipelineProgram prog = cost::build_program(sh);
  for (int i = 0; i < sim.p(); ++i)
    for (const auto& op : prog.stages[i].ops) {
      if (op.kind != cost::ProgramOpKind::forward && op.kind != cost::ProgramOpKind::backward) continue;
      const bool bwd = op.kind == cost::ProgramOpKind::backward;
      for (int j = 0; j < r; ++j) sim.rep[i][j].order.push_back({bwd, op.micro * r + j});
    }
}

}  // namespace

ReplicatedResult simulate_replicated_flush(const ReplicatedInput& in, cost::Schedule schedule) {
  const int p = static_cast<int>(in.stages.size());
  if (p < 1 || static_cast<int>(in.link_s.size()) != p - 1 || in.micro_batches < 1)
    throw std::invalid_argument("simulate_replicated_flush: stages, links (p − 1) and micro-batches must be given");
  if (schedule != cost::Schedule::gpipe && schedule != cost::Schedule::one_f_one_b)
    throw std::invalid_argument("simulate_replicated_flush: gpipe or 1f1b only");
  FlushSim sim(in, schedule);
  sim.rep.resize(p);
  for (int i = 0; i < p; ++i) {
    const int w = in.stages[i].replicas;
    if (w < 1) throw std::invalid_argument("simulate_replicated_flush: a stage has no replica");
    sim.rep[i].resize(w);
    for (std::int64_t k = 0; k < in.micro_batches; ++k) ++sim.rep[i][k % w].assigned;
  }
  sim.links.resize(p - 1);
  program_orders(sim, schedule);
  // 1F1B's warm-up depth per replica of stage i: PipeDream's NOAM over the stages from i on, ⌈Σ_{j≥i} r_j / r_i⌉
  // (notes_003 §1.4) — p − i for equal widths (Megatron's 1F1B). Fewer starve a narrow stage whose successors are
  // wider: its replica's round trip then holds more micro-batches than p − i.
  sim.stage_done.assign(p, 0);
  sim.limit.assign(p, 1);
  for (int i = p - 1, below = 0; i >= 0; --i) {
    below += in.stages[i].replicas;
    sim.limit[i] = (below + in.stages[i].replicas - 1) / in.stages[i].replicas;
  }
  sim.res.done_s.assign(in.micro_batches, 0.0);
  for (std::int64_t k = 0; k < in.micro_batches; ++k) sim.rep[0][sim.owner(0, k)].fwd_ready.push_back(k);
  for (int i = 0; i < p; ++i)
    for (int r = 0; r < in.stages[i].replicas; ++r) sim.try_compute(0.0, i, r);
  while (!sim.events.empty()) {
    const FlushEvent e = sim.events.top();
    sim.events.pop();
    sim.handle(e);
  }
  auto& res = sim.res;
  res.stage_busy_s.assign(p, 0.0);
  res.stage_max_in_flight.assign(p, 0);
  for (int i = 0; i < p; ++i) {
    for (const auto& x : sim.rep[i]) {
      res.stage_max_in_flight[i] = std::max(res.stage_max_in_flight[i], x.most_in_flight);
      if (!x.synced || x.bwd_done != x.assigned) throw std::logic_error("simulate_replicated_flush: deadlock");
      res.makespan_s = std::max(res.makespan_s, x.done_s);
      res.stage_busy_s[i] += x.busy_s / in.stages[i].replicas;
    }
  }
  return res;
}

PerStageSimulation simulate_per_stage(const cost::Strategy& s, const cost::Estimate& e) {
  PerStageSimulation out;
  out.input = replicated_from_estimate(s, e);
  out.micro_batches = out.input.micro_batches;
  out.estimate_iteration_time_s = e.pipeline_time_s;
  const double M = static_cast<double>(out.micro_batches);
  switch (s.schedule) {
    case cost::Schedule::gpipe:
    case cost::Schedule::one_f_one_b:
      out.result = simulate_replicated_flush(out.input, s.schedule);
      out.iteration_time_s = out.result.makespan_s;
      return out;
    case cost::Schedule::two_bw:
      for (auto& st : out.input.stages) st.sync_s *= st.replicas / M;  // one sync per iteration, spread
      break;
    case cost::Schedule::pipedream: break;  // a sync per micro-batch (cost/per_stage's closed form)
    case cost::Schedule::interleaved:
      throw std::invalid_argument("simulate_per_stage: interleaved is not a per-stage schedule");
  }
  out.input.micro_batches = std::max<std::int64_t>(out.micro_batches, 4000);  // reach the periodic steady state
  out.result = simulate_replicated(out.input);
  out.iteration_time_s = out.result.period_s * M;
  return out;
}

}  // namespace strata::sim
