// sched/simulate: the round-based, event-driven cluster simulator and its metrics/CSV/JSON output.
#include "strata/sched/simulate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "alloc_lp.hpp"
#include "strata/core/error.hpp"
#include "strata/sched/mechanism.hpp"

namespace strata::sched {
namespace {

struct JobState {
  double remaining = 0;
  bool arrived = false, done = false;
  int last_type = -1;  // GPU type of the last round it ran (type switches)
};

struct Lease {
  std::vector<int> jobs;  // trace job indices of the combination
  Assignment as;
};

// The allocation's combination index by its trace jobs (rebuilt only when the allocation changes: the lookup of
// every round's leases used to rebuild it each round).
using ComboIndex = std::map<std::vector<int>, int>;
ComboIndex index_combos(const Allocation& alloc, const std::vector<int>& active) {
  ComboIndex combo_of;
  for (std::size_t k = 0; k < alloc.combos.size(); ++k) {
    std::vector<int> jobs;
    for (int i : alloc.combos[k].jobs) jobs.push_back(active[i]);
    combo_of.emplace(std::move(jobs), static_cast<int>(k));
  }
  return combo_of;
}

// Last round's leases, translated to this allocation's combination indices by job identity.
std::vector<Assignment> previous_leases(const ComboIndex& combo_of, const std::vector<Lease>& leases) {
  std::vector<Assignment> previous;
  for (const auto& l : leases) {
    auto it = combo_of.find(l.jobs);
    if (it == combo_of.end()) continue;
    previous.push_back(l.as);
    previous.back().combo = it->second;
  }
  return previous;
}

std::vector<RoundPlacement> placements_of(const Problem& trace, const std::vector<WorkerType>& types,
                                          const Allocation& alloc, const std::vector<Assignment>& assignments,
                                          const std::vector<int>& active) {
  std::vector<RoundPlacement> out;
  for (const auto& as : assignments)
    for (int i : alloc.combos[as.combo].jobs)
      out.push_back({trace.jobs[active[i]].name, types[as.type].name, alloc.combos[as.combo].scale_factor, as.renewed});
  return out;
}

// The round's placements for a back-end, with the moment the model finishes each job inside the round.
void report_round(const Problem& trace, const std::vector<WorkerType>& types, const Allocation& alloc,
                  const std::vector<Assignment>& assignments, const std::vector<int>& active, const SimResult& res,
                  double now, const SimOptions& opt) {
  std::vector<RoundPlacement> placed = placements_of(trace, types, alloc, assignments, active);
  std::size_t q = 0;
  for (const auto& as : assignments)
    for (int i : alloc.combos[as.combo].jobs) {
      const double done_s = res.jobs[active[i]].completion_s;
      if (done_s >= now) placed[q].end_s = done_s - now;
      ++q;
    }
  opt.on_round(now, placed);
}

SimResult initial_results(const Problem& trace) {
  SimResult res;
  res.jobs.resize(trace.num_jobs());
  for (int m = 0; m < trace.num_jobs(); ++m) {
    const JobSpec& j = trace.jobs[m];
    auto& r = res.jobs[m];
    r.name = j.name;
    r.job_type = j.job_type;
    r.scale_factor = j.scale_factor;
    r.arrival_s = j.arrival_s;
    r.steps = j.steps;
  }
  return res;
}

// One round of one placed combination: progress, completion, GPU time and cost. A spot preemption of its type
// inside the round (price trace) loses the round's progress (the last checkpoint is at the round start) and bills
// the GPUs until the preemption. Returns true when the combination was preempted (its lease ends).
bool run_assignment(const Problem& trace, const Problem& sub, const Allocation& alloc, const Assignment& as,
                    const std::vector<int>& active, const WorkerType& wt, double now, const SimOptions& opt,
                    std::vector<JobState>& st, SimResult& res, double& busy_gpu_s, int& finished) {
  const Combo& k = alloc.combos[as.combo];
  const PriceKind price = opt.policy_options.price;
  double cut = -1;
  if (opt.price_trace && price == PriceKind::kSpot) cut = preemption_in(*opt.price_trace, wt.name, now, now + opt.round_s);
  const double overhead = as.renewed ? 0.0 : opt.restart_overhead_s;
  const double run = std::max(0.0, opt.round_s - overhead);
  double busy = 0;
  for (int i : k.jobs) {
    const int m = active[i];
    const double tp = combo_throughput(sub, k, Column{as.type, as.consolidated}, i);
    auto& r = res.jobs[m];
    if (r.start_s < 0) r.start_s = now;
    if (st[m].last_type >= 0 && st[m].last_type != as.type) ++r.type_switches;
    st[m].last_type = as.type;
    double used = opt.round_s;
    if (cut >= 0) {
      used = cut - now;  // preempted: nothing of this round is kept
    } else if (tp > 0 && st[m].remaining <= tp * run) {
      used = overhead + st[m].remaining / tp;
      st[m].remaining = 0;
      st[m].done = true;
      r.completion_s = now + used;
      r.jct_s = r.completion_s - r.arrival_s;
      r.slowdown = r.jct_s / (r.steps / fastest_throughput(trace.jobs[m]));
      ++finished;
    } else if (tp > 0) {
      st[m].remaining -= tp * run;
    }
    busy = std::max(busy, used);
  }
  const double gpu_s = busy * k.scale_factor;
  busy_gpu_s += gpu_s;
  const double pr = price == PriceKind::kSpot ? wt.price_spot : wt.price_on_demand;
  for (int i : k.jobs) {
    auto& r = res.jobs[active[i]];
    r.gpu_seconds += gpu_s / k.jobs.size();
    if (pr > 0) r.cost_usd += pr * gpu_s / 3600.0 / k.jobs.size();
  }
  return cut >= 0;
}


// The policy's view of the running jobs: remaining steps, time in the system, pairs among them.
Problem active_problem(const Problem& trace, const std::vector<WorkerType>& types, const std::vector<int>& active,
                       const std::vector<JobState>& st, double now, double slo_slack_s, IsolatedShare share) {
  Problem sub;
  sub.types = types;
  sub.entities = trace.entities;
  std::vector<int> pos(trace.num_jobs(), -1);
  for (int i = 0; i < static_cast<int>(active.size()); ++i) {
    const int m = active[i];
    pos[m] = i;
    JobSpec j = trace.jobs[m];
    j.steps = st[m].remaining;
    j.elapsed_s = now - j.arrival_s;
    // The SLO is a deadline from arrival; the policy sees the time left less a slack of two rounds + 0.1 % (at
    // most half the time left): min-cost-slo plans a job to finish exactly at its deadline in the fluid
    // allocation, while the round-based mechanism realises X in whole rounds (lagging by up to a round, its
    // bookkeeping reset at every re-allocation) and pays restart costs, so without slack jobs missed their SLO by
    // < 0.3 % (20 % of them in bench_sched_thesis' cost row; one round of slack left 1 job late by 5 min in 16
    // days). A missed one no longer constrains.
    if (j.slo_s != kNoSlo) {
      const double left = j.slo_s - j.elapsed_s;
      j.slo_s = left > 0 ? std::max(left - slo_slack_s - 0.001 * left, 0.5 * left) : kNoSlo;
    }
    sub.jobs.push_back(std::move(j));
  }
  const auto iso = isolated_throughputs(sub, share);
  for (int i = 0; i < sub.num_jobs(); ++i) {
    const double done_steps = trace.jobs[active[i]].steps - sub.jobs[i].steps;
    sub.jobs[i].elapsed_isolated_s = iso[i] > 0 ? done_steps / iso[i] : 0.0;
  }
  for (const auto& ps : trace.pairs)
    if (pos[ps.a] >= 0 && pos[ps.b] >= 0) sub.pairs.push_back(PairSpec{pos[ps.a], pos[ps.b], ps.throughputs});
  return sub;
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

// The job metrics, on top of the loop's counters (`counts`: rounds, re-allocations, solves, cloud events).
SimMetrics metrics_of(const Problem& trace, const std::vector<JobResult>& jobs, const SimOptions& opt,
                      const std::vector<int>& order, double busy_gpu_s, const SimMetrics& counts) {
  SimMetrics m;
  m.rounds = counts.rounds;
  m.reallocations = counts.reallocations;
  m.lp_solves = counts.lp_solves;
  m.preemptions = counts.preemptions;
  m.price_changes = counts.price_changes;
  for (const auto& j : jobs) m.type_switches += j.type_switches;
  const int n = static_cast<int>(order.size());
  const int from = std::clamp(opt.measure_from, 0, n);
  const int to = opt.measure_to < 0 ? n : std::clamp(opt.measure_to, from, n);
  std::vector<double> jct, slow;
  for (int r = from; r < to; ++r) {
    const JobResult& j = jobs[order[r]];
    ++m.jobs_measured;
    const double slo = trace.jobs[order[r]].slo_s;
    if (slo != kNoSlo) {
      ++m.slo_jobs;
      if (j.completion_s < 0 || j.jct_s > slo) ++m.slo_violations;
    }
    if (j.completion_s < 0) continue;
    ++m.jobs_finished;
    jct.push_back(j.jct_s);
    slow.push_back(j.slowdown);
  }
  if (!jct.empty()) {
    m.avg_jct_s = std::accumulate(jct.begin(), jct.end(), 0.0) / jct.size();
    m.p50_jct_s = percentile(jct, 0.5);
    m.p90_jct_s = percentile(jct, 0.9);
    m.p99_jct_s = percentile(jct, 0.99);
    double s1 = 0, s2 = 0;
    for (double s : slow) s1 += s, s2 += s * s, m.max_slowdown = std::max(m.max_slowdown, s);
    m.avg_slowdown = s1 / slow.size();
    m.jain_fairness = s1 * s1 / (slow.size() * s2);  // Jain et al. 1984
  }
  double first = 1e300, last = 0;
  for (const auto& j : jobs) {
    first = std::min(first, j.arrival_s);
    if (j.completion_s >= 0) last = std::max(last, j.completion_s);
    m.total_cost_usd += j.cost_usd;
  }
  m.makespan_s = last > first ? last - first : 0;
  double gpus = 0;
  for (const auto& t : trace.types) gpus += t.count;
  m.utilization = m.makespan_s > 0 ? busy_gpu_s / (gpus * m.makespan_s) : 0;
  return m;
}

}  // namespace

namespace {

// The simulation's state between rounds.
struct Loop {
  std::vector<JobState> st;
  std::vector<int> order;        // trace indices by arrival
  std::vector<int> active;       // trace indices, arrival order
  std::vector<WorkerType> types; // prices change with a price trace
  Problem sub;                   // the policy's view of `active`
  std::vector<int> sub_trace;    // trace index of each of sub's jobs
  Allocation alloc;              // rows = combinations of `active` (carried over between solves)
  ComboIndex combo_of;           // index_combos(alloc, active)
  RoundBook book;
  std::vector<Lease> leases;
  PolicyOptions policy_options;  // opt.policy_options with the warm starts below
  WarmStarts warm;               // each policy LP's last basis, by job name (SimOptions::warm_start)
  int next_arrival = 0, finished = 0, preemptions = 0, price_changes = 0;
  double now = 0, busy_gpu_s = 0, last_solve_s = -1e300;
  bool set_changed = true;       // `active` differs from the allocation's rows
  bool need_solve = true;        // a job arrived or finished since the last solve
  bool force_solve = false;      // prices changed
};

// Between solves the policy's view only feeds the mechanism (throughputs, sizes, pairs), so a changed job set
// keeps the rows of the jobs still there (moved, not copied: a JobSpec holds strings and vectors; copying every
// running job's at each arrival and completion cost seconds on traces with ~1,000 running jobs) and copies only
// the arrivals; steps and times are refreshed at the next solve (active_problem).
void carry_problem(const Problem& trace, Loop& L) {
  std::vector<int> old_pos(trace.num_jobs(), -1), pos(trace.num_jobs(), -1);
  for (int i = 0; i < static_cast<int>(L.sub_trace.size()); ++i) old_pos[L.sub_trace[i]] = i;
  Problem sub;
  sub.types = L.types;
  sub.entities = trace.entities;
  sub.jobs.reserve(L.active.size());
  for (int m : L.active) {
    pos[m] = static_cast<int>(sub.jobs.size());
    if (old_pos[m] >= 0) {
      sub.jobs.push_back(std::move(L.sub.jobs[old_pos[m]]));
    } else {
      sub.jobs.push_back(trace.jobs[m]);
      sub.jobs.back().steps = L.st[m].remaining;
      sub.jobs.back().elapsed_s = L.now - trace.jobs[m].arrival_s;
    }
  }
  for (const auto& ps : trace.pairs)
    if (pos[ps.a] >= 0 && pos[ps.b] >= 0) sub.pairs.push_back(PairSpec{pos[ps.a], pos[ps.b], ps.throughputs});
  L.sub = std::move(sub);
}

// Carries X and the round bookkeeping over to the new `active` set without solving (Gavel between allocation
// resets): rows of jobs still there keep their values, new jobs get zero rows.
void carry_over(const SimOptions& opt, Loop& L) {
  Allocation next = detail::allocation_shape(L.sub, opt.policy_options);
  auto key = [](const Allocation& a, const std::vector<int>& act, std::size_t k) {
    std::vector<int> jobs;
    for (int i : a.combos[k].jobs) jobs.push_back(act[i]);
    return jobs;
  };
  const ComboIndex& old_row = L.combo_of;  // the old allocation's rows, by trace jobs
  next.x.assign(next.combos.size(), std::vector<double>(next.columns.size(), 0.0));
  RoundBook book;
  book.reset(next.combos.size(), L.sub.types.size());
  book.rounds = L.book.rounds;
  for (std::size_t k = 0; k < next.combos.size(); ++k) {
    auto it = old_row.find(key(next, L.active, k));
    if (it == old_row.end()) continue;
    next.x[k] = L.alloc.x[it->second];
    book.received[k] = L.book.received[it->second];
  }
  next.objective = L.alloc.objective;
  next.objective_name = L.alloc.objective_name;
  L.alloc = std::move(next);
  L.book = std::move(book);
}

// Re-solves the policy, or carries the allocation over to a changed job set (reset interval not elapsed).
void update_allocation(const Problem& trace, const SimOptions& opt, SimResult& res, Loop& L) {
  const bool due = L.now - L.last_solve_s >= opt.reset_interval_s - 1e-9;
  const bool solve = opt.reallocate == Reallocate::kEveryRound || L.force_solve || (L.need_solve && due);
  if (!solve && !L.set_changed) return;
  if (solve) L.sub = active_problem(trace, L.types, L.active, L.st, L.now, 2 * opt.round_s,
                                     opt.policy_options.isolated_share);
  else carry_problem(trace, L);
  L.sub_trace = L.active;
  if (!solve) {
    carry_over(opt, L);
  } else {
    L.alloc = allocate(L.sub, opt.policy, L.policy_options);
    res.metrics.lp_solves += L.alloc.lp_solves;
    ++res.metrics.reallocations;
    L.book.reset(L.alloc.combos.size(), L.sub.types.size());
    L.last_solve_s = L.now;
    L.need_solve = L.force_solve = false;
    if (opt.progress) opt.progress(L.now, L.finished, trace.num_jobs());
  }
  L.set_changed = false;
  L.combo_of = index_combos(L.alloc, L.active);
}

// One round of the mechanism on the current allocation: placements, progress, completions.
void run_round(const Problem& trace, const SimOptions& opt, SimResult& res, Loop& L) {
  const std::vector<Assignment> previous = previous_leases(L.combo_of, L.leases);
  std::vector<bool> runnable(L.alloc.combos.size(), true);
  const RoundOptions ro{opt.place_leftover, opt.policy.agnostic};
  auto assignments = schedule_round(L.sub, L.alloc, L.book, runnable, previous, ro);
  L.leases.clear();
  for (const auto& as : assignments) {
    std::vector<int> jobs;
    for (int i : L.alloc.combos[as.combo].jobs) jobs.push_back(L.active[i]);
    L.leases.push_back(Lease{std::move(jobs), as});
  }
  record_round(L.book, assignments);
  ++res.metrics.rounds;
  const int finished_before = L.finished;
  std::vector<std::vector<int>> preempted;
  for (const auto& as : assignments)
    if (run_assignment(trace, L.sub, L.alloc, as, L.active, L.types[as.type], L.now, opt, L.st, res, L.busy_gpu_s,
                       L.finished)) {
      ++L.preemptions;
      preempted.push_back(L.leases[&as - assignments.data()].jobs);
    }
  if (opt.on_round) report_round(trace, L.types, L.alloc, assignments, L.active, res, L.now, opt);
  // A reclaimed instance: its jobs restart elsewhere (no lease renewal) next round.
  std::erase_if(L.leases, [&](const Lease& l) { return std::find(preempted.begin(), preempted.end(), l.jobs) != preempted.end(); });
  if (L.finished != finished_before) {
    L.need_solve = L.set_changed = true;
    std::erase_if(L.active, [&](int m) { return L.st[m].done; });
  }
}

// SimOptions::placement_affects_speed = false: every job's unconsolidated steps/s set to its consolidated ones.
bool spread_is_slower(const Problem& trace) {
  return std::any_of(trace.jobs.begin(), trace.jobs.end(),
                     [](const JobSpec& j) { return !j.unconsolidated.empty() && j.unconsolidated != j.throughputs; });
}
Problem consolidated_speeds(const Problem& trace) {
  Problem t = trace;
  for (auto& j : t.jobs) j.unconsolidated = j.throughputs;
  return t;
}

}  // namespace

SimResult simulate(const Problem& trace, const SimOptions& opt) {
  const bool ignore_placement = !opt.placement_affects_speed && !opt.policy_options.placement_sensitive;
  if (ignore_placement && spread_is_slower(trace)) return simulate(consolidated_speeds(trace), opt);
  const int n = trace.num_jobs();
  Loop L;
  L.order.resize(n);
  std::iota(L.order.begin(), L.order.end(), 0);
  std::stable_sort(L.order.begin(), L.order.end(),
                   [&](int x, int y) { return trace.jobs[x].arrival_s < trace.jobs[y].arrival_s; });
  L.st.resize(n);
  for (int m = 0; m < n; ++m) L.st[m].remaining = trace.jobs[m].steps;
  SimResult res = initial_results(trace);
  L.now = n > 0 ? trace.jobs[L.order[0]].arrival_s : 0;
  L.types = trace.types;
  L.policy_options = opt.policy_options;
  if (opt.warm_start) L.policy_options.warm = &L.warm;
  const int window_to = opt.measure_to < 0 ? n : std::clamp(opt.measure_to, 0, n);
  auto window_done = [&] {
    for (int r = std::clamp(opt.measure_from, 0, n); r < window_to; ++r)
      if (!L.st[L.order[r]].done) return false;
    return true;
  };
  int checked_at = -1;
  while (L.finished < n && L.now <= opt.max_sim_s) {
    if (opt.stop_after_window && L.finished != checked_at) {
      checked_at = L.finished;
      if (window_done()) break;
    }
    while (L.next_arrival < n && trace.jobs[L.order[L.next_arrival]].arrival_s <= L.now) {
      const int m = L.order[L.next_arrival++];
      L.st[m].arrived = true;
      L.active.push_back(m);
      L.need_solve = L.set_changed = true;
    }
    if (L.active.empty()) {  // idle cluster: jump to the next arrival
      L.now = trace.jobs[L.order[L.next_arrival]].arrival_s;
      continue;
    }
    // Prices in force this round (price trace); a change re-solves the policy (dynamic instance switching) unless
    // the decisions are to keep the prices they were made with.
    if (opt.price_trace && apply_prices(*opt.price_trace, L.now, L.types)) {
      ++L.price_changes;
      L.force_solve = L.force_solve || opt.switch_on_price_change;
    }
    update_allocation(trace, opt, res, L);
    run_round(trace, opt, res, L);
    L.now += opt.round_s;
  }
  res.metrics.preemptions = L.preemptions;
  res.metrics.price_changes = L.price_changes;
  res.metrics = metrics_of(trace, res.jobs, opt, L.order, L.busy_gpu_s, res.metrics);
  return res;
}

void apply_conventions(Conventions c, PolicyOptions& p) {
  const bool gavel = c == Conventions::kGavel;
  p.normalization = gavel ? Normalization::kProportional : Normalization::kEqualShare;
  p.agnostic_split = gavel ? AgnosticSplit::kProportional : AgnosticSplit::kFillOrder;
  p.isolated_share = gavel ? IsolatedShare::kPerJob : IsolatedShare::kBySize;
  p.water_filling = !gavel;  // Gavel's LAS experiments use max_min_fairness_perf, one LP
}

void apply_conventions(Conventions c, SimOptions& o) {
  apply_conventions(c, o.policy_options);
  o.policy_options.search_rel_tol = 1e-3;  // PolicyOptions::search_rel_tol
  const bool gavel = c == Conventions::kGavel;
  o.reset_interval_s = gavel ? 1920 : 0;
  o.place_leftover = gavel;
  o.placement_affects_speed = !gavel;
}

Conventions parse_conventions(const std::string& name, const std::string& flag) {
  if (name == "gavel") return Conventions::kGavel;
  if (name == "strata") return Conventions::kStrata;
  throw core::InputError(flag + ": '" + name + "' (valid: gavel, strata)");
}

core::OrderedJson to_json(const SimResult& r) {
  const SimMetrics& m = r.metrics;
  core::OrderedJson j;
  j["metrics"] = {{"jobs_measured", m.jobs_measured},   {"jobs_finished", m.jobs_finished},
                  {"avg_jct_s", m.avg_jct_s},           {"p50_jct_s", m.p50_jct_s},
                  {"p90_jct_s", m.p90_jct_s},           {"p99_jct_s", m.p99_jct_s},
                  {"makespan_s", m.makespan_s},         {"total_cost_usd", m.total_cost_usd},
                  {"utilization", m.utilization},       {"avg_slowdown", m.avg_slowdown},
                  {"max_slowdown", m.max_slowdown},     {"jain_fairness", m.jain_fairness},
                  {"rounds", m.rounds},                 {"reallocations", m.reallocations},
                  {"lp_solves", m.lp_solves},           {"slo_jobs", m.slo_jobs},
                  {"slo_violations", m.slo_violations}, {"preemptions", m.preemptions},
                  {"price_changes", m.price_changes},   {"type_switches", m.type_switches}};
  core::OrderedJson jobs = core::OrderedJson::array();
  for (const auto& x : r.jobs)
    jobs.push_back({{"name", x.name},         {"type", x.job_type},           {"scale_factor", x.scale_factor},
                    {"arrival_s", x.arrival_s}, {"start_s", x.start_s},       {"completion_s", x.completion_s},
                    {"jct_s", x.jct_s},         {"gpu_seconds", x.gpu_seconds}, {"cost_usd", x.cost_usd},
                    {"slowdown", x.slowdown}, {"type_switches", x.type_switches}});
  j["jobs"] = std::move(jobs);
  return j;
}

std::string jobs_csv(const SimResult& r) {
  std::string out = "name,job_type,scale_factor,arrival_s,start_s,completion_s,jct_s,gpu_seconds,cost_usd,slowdown\n";
  for (const auto& x : r.jobs)
    out += fmt::format("{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.6f},{:.6f}\n", x.name, x.job_type,
                       x.scale_factor, x.arrival_s, x.start_s, x.completion_s, x.jct_s, x.gpu_seconds, x.cost_usd,
                       x.slowdown);
  return out;
}

}  // namespace strata::sched
