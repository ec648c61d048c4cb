// sim/replicated: the event replay of pipelines with per-stage widths (replicated.hpp).
#include "strata/sim/replicated.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace strata::sim {
namespace {

enum class Op { fwd, bwd, sync, link };

struct Event {
  double time;
  std::int64_t seq;  // insertion order: deterministic ties
  Op op;
  int stage, replica;  // link: stage = boundary, replica = 0 activation / 1 gradient
  std::int64_t micro;
  bool operator>(const Event& o) const { return std::tie(time, seq) > std::tie(o.time, o.seq); }
};

struct Replica {
  std::deque<std::int64_t> fwd_ready, bwd_ready, sync_queue;
  bool busy = false, sync_busy = false;
  std::int64_t admitted = 0, in_flight = 0;  // input stage
  std::int64_t syncs_done = 0, backwards_started = 0;
};

struct Link {
  std::deque<std::int64_t> activations, gradients;  // gradients first (backward-first, as the compute)
  bool busy = false;
};

struct Sim {
  const ReplicatedInput& in;
  std::vector<std::vector<Replica>> rep;
  std::vector<Link> links;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events;
  std::int64_t seq = 0;
  int noam = 1;
  ReplicatedResult res;

  explicit Sim(const ReplicatedInput& i) : in(i) {}
  void push(double t, Op op, int st, int r, std::int64_t k) { events.push({t, seq++, op, st, r, k}); }
  int owner(int st, std::int64_t k) const { return static_cast<int>(k % in.stages[st].replicas); }

  void try_compute(double now, int st, int r) {
    Replica& x = rep[st][r];
    const auto& S = in.stages[st];
    if (x.busy) return;
    // Overlapping sync: the backward of the replica's j-th micro-batch waits for the sync of its (j−2)-th.
    const bool sync_gate = S.sync_overlaps && S.sync_s > 0 && x.backwards_started - x.syncs_done >= 2;
    if (!x.bwd_ready.empty() && !sync_gate) {
      const std::int64_t k = x.bwd_ready.front();
      x.bwd_ready.pop_front();
      x.busy = true;
      ++x.backwards_started;
      push(now + S.bwd_s + (S.sync_overlaps ? 0.0 : S.sync_s), Op::bwd, st, r, k);
      return;
    }
    if (st == 0 && x.in_flight < noam) {
      const std::int64_t k = x.admitted * S.replicas + r;
      if (k < in.micro_batches) x.fwd_ready.push_back(k), ++x.admitted, ++x.in_flight;
    }
    if (!x.fwd_ready.empty()) {
      const std::int64_t k = x.fwd_ready.front();
      x.fwd_ready.pop_front();
      x.busy = true;
      push(now + S.fwd_s, Op::fwd, st, r, k);
    }
  }
  void try_link(double now, int b) {
    Link& l = links[b];
    if (l.busy || (l.activations.empty() && l.gradients.empty())) return;
    const int dir = l.gradients.empty() ? 0 : 1;
    auto& q = dir == 1 ? l.gradients : l.activations;
    const std::int64_t k = q.front();
    q.pop_front();
    l.busy = true;
    push(now + in.link_s[b], Op::link, b, dir, k);
  }
  void try_sync(double now, int st, int r) {
    Replica& x = rep[st][r];
    if (x.sync_busy || x.sync_queue.empty()) return;
    const std::int64_t k = x.sync_queue.front();
    x.sync_queue.pop_front();
    x.sync_busy = true;
    push(now + in.stages[st].sync_s, Op::sync, st, r, k);
  }
  void finish_micro(double t, int r, std::int64_t k) {
    res.done_s[k] = t;
    --rep[0][r].in_flight;
  }

  void handle(const Event& e) {
    const int p = static_cast<int>(in.stages.size());
    const double t = e.time;
    switch (e.op) {
      case Op::fwd: {
        rep[e.stage][e.replica].busy = false;
        if (e.stage + 1 < p) links[e.stage].activations.push_back(e.micro), try_link(t, e.stage);
        else rep[e.stage][e.replica].bwd_ready.push_back(e.micro);
        try_compute(t, e.stage, e.replica);
        break;
      }
      case Op::bwd: {
        Replica& x = rep[e.stage][e.replica];
        x.busy = false;
        const bool own_sync = in.stages[e.stage].sync_overlaps && in.stages[e.stage].sync_s > 0;
        if (own_sync) x.sync_queue.push_back(e.micro), try_sync(t, e.stage, e.replica);
        if (e.stage > 0) links[e.stage - 1].gradients.push_back(e.micro), try_link(t, e.stage - 1);
        else if (!own_sync) finish_micro(t, e.replica, e.micro);
        try_compute(t, e.stage, e.replica);
        break;
      }
      case Op::sync: {
        Replica& x = rep[e.stage][e.replica];
        x.sync_busy = false;
        ++x.syncs_done;
        if (e.stage == 0) finish_micro(t, e.replica, e.micro);
        try_sync(t, e.stage, e.replica);
        try_compute(t, e.stage, e.replica);
        break;
      }
      case Op::link: {
        links[e.stage].busy = false;
        const int to = e.replica == 0 ? e.stage + 1 : e.stage;
        const int r = owner(to, e.micro);
        if (e.replica == 0) rep[to][r].fwd_ready.push_back(e.micro);
        else rep[to][r].bwd_ready.push_back(e.micro);
        try_link(t, e.stage);
        try_compute(t, to, r);
        break;
      }
    }
  }
};

}  // namespace

ReplicatedResult simulate_replicated(const ReplicatedInput& in) {
  const int p = static_cast<int>(in.stages.size());
  if (p < 1 || static_cast<int>(in.link_s.size()) != p - 1 || in.micro_batches < 1)
    throw std::invalid_argument("simulate_replicated: stages, links (p − 1) and micro-batches must be given");
  Sim sim(in);
  int total = 0;
  for (const auto& s : in.stages) total += s.replicas;
  // Default admission: PipeDream's NOAM ⌈Σ r_i / r_0⌉, raised to twice what Little's law needs to keep the
  // bottleneck busy (round trip / (closed-form period · r_0), rounded up, + 1): replicas of unequal widths
  // deliver out of order and queue, so the bare Little bound throttles.
  double round_trip = 0;
  for (const auto& s : in.stages) round_trip += s.fwd_s + s.bwd_s + s.sync_s;
  for (double l : in.link_s) round_trip += 2 * l;
  const double period = replicated_period_closed_form(in);
  const int little = period > 0 ? static_cast<int>(std::ceil(round_trip / (period * in.stages[0].replicas))) + 1 : 1;
  sim.noam = in.in_flight > 0 ? in.in_flight
                              : std::max((total + in.stages[0].replicas - 1) / in.stages[0].replicas, 2 * little);
  sim.rep.resize(p);
  for (int i = 0; i < p; ++i) sim.rep[i].resize(in.stages[i].replicas);
  sim.links.resize(p - 1);
  sim.res.done_s.assign(in.micro_batches, 0.0);
  for (int r = 0; r < in.stages[0].replicas; ++r) sim.try_compute(0.0, 0, r);
  while (!sim.events.empty()) {
    const Event e = sim.events.top();
    sim.events.pop();
    sim.handle(e);
  }
  auto& res = sim.res;
  res.makespan_s = *std::max_element(res.done_s.begin(), res.done_s.end());
  // Completions in time order (replicas of unequal widths finish micro-batches out of index order).
  std::vector<double> sorted = res.done_s;
  std::sort(sorted.begin(), sorted.end());
  // The steady state of a max-plus system is periodic: completions repeat every c micro-batches shifted by c·P
  // (c the cyclicity). Find the smallest c whose last four shifts agree, and measure P over it; fall back to a
  // window of whole round-robin periods (lcm of the widths) ending at 3/4 of the run.
  const std::int64_t last = in.micro_batches * 3 / 4;
  for (std::int64_t c = 1; c <= std::min<std::int64_t>(512, last / 5) && res.period_s == 0; ++c) {
    const double d0 = sorted[last] - sorted[last - c];
    bool same = d0 > 0;
    for (int j = 1; j < 4 && same; ++j)
      same = std::abs(sorted[last - j * c] - sorted[last - (j + 1) * c] - d0) <= 1e-12 * d0;
    if (same) res.period_s = d0 / static_cast<double>(c);
  }
  std::int64_t window = 1;
  for (const auto& s : in.stages) window = std::lcm(window, static_cast<std::int64_t>(s.replicas));
  const std::int64_t count = std::max<std::int64_t>(1, (in.micro_batches / 4) / window) * window;
  if (res.period_s == 0 && last - count >= 0)
    res.period_s = (sorted[last] - sorted[last - count]) / static_cast<double>(count);
  return res;
}

double replicated_period_closed_form(const ReplicatedInput& in) {
  double p = 0;
  for (const auto& s : in.stages) {
    const double t = s.fwd_s + s.bwd_s;
    p = std::max(p, (s.sync_overlaps ? std::max(t, s.sync_s) : t + s.sync_s) / s.replicas);
  }
  for (double l : in.link_s) p = std::max(p, 2 * l);
  return p;
}

ReplicatedInput replicated_from_estimate(const cost::Strategy& s, const cost::Estimate& e) {
  ReplicatedInput in;
  const int p = static_cast<int>(e.stages.size());
  for (int i = 0; i < p; ++i) {
    ReplicatedStage st;
    st.replicas = cost::is_uniform(s) ? s.dp : s.stages[i].dp;
    st.fwd_s = e.stages[i].fwd_s;
    st.bwd_s = e.stages[i].bwd_s;
    st.sync_s = e.stages[i].dp_comm_s + e.stages[i].optimizer_s;
    st.sync_overlaps = false;  // cost/per_stage: the exposed sync adds to the replica's cycle
    in.stages.push_back(st);
    if (i + 1 < p) in.link_s.push_back(e.stages[i].p2p_s / 2);
  }
  in.micro_batches = s.global_batch / s.micro_batch;
  return in;
}

}  // namespace strata::sim
