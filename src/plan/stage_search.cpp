// plan/stage_search: the per-stage planner's exact dynamic program (stage_search.hpp; docs/planner.md §Per-stage
// search).
//
// Every closed form of cost/per_stage is F = max_i q_i + Σ_i h_i over stages and boundaries (StageTables::stage_q/h,
// boundary_q/h; pipedream and 2bw have h = 0). State (d, a, u, c): the suffix of the chain from layer a split into
// d stages, the first with configuration c, using u devices per GPU type (mixed-radix index). Its value is the
// Pareto set of (Q = max q, S = Σ h) over such suffixes: a pair dominated in both is never part of an optimum,
// since a prefix adds max(Q, ·) and + S monotonically (the min-max + sum generalisation of PipeDream's A(j, m),
// notes_003 §1.3). Memory: a stage fits at depth d (stages from it to the end: 1F1B in-flight micro-batches and
// PipeDream's weight versions) when fit_depth ≥ d. Pruning (fastest objective): a suffix whose
// max(Q, q_min) + S + (Σ of the cheapest per-layer time of the prefix) reaches the best complete chain found is
// dropped — a valid lower bound (h is a sum of per-layer times plus non-negative boundary terms).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <unordered_map>

#include "stage_tables.hpp"
#include "strata/core/error.hpp"
#include "strata/core/units.hpp"

namespace strata::plan {
namespace {

using core::kInf;

struct Entry {
  int u = 0, c = 0;
  double Q = 0, S = 0;
  int pj = -1, pidx = -1;  // the next stage: entry pidx of level d−1 at layer pj (−1 = last stage)
};

bool entry_less(const Entry& x, const Entry& y) {
  if (x.Q != y.Q) return x.Q < y.Q;
  if (x.S != y.S) return x.S < y.S;
  if (x.pj != y.pj) return x.pj < y.pj;
  return x.pidx < y.pidx;
}

// Groups by (u, c) in increasing key order (a counting sort over the U·C keys; scratch reused) and keeps, per
// group, the pairs whose S strictly decreases as Q grows (ties broken by the next stage: deterministic).
struct ParetoScratch {
  std::vector<int> count;   // per key u·C + c
  std::vector<int> touched;
  std::vector<Entry> tmp;
};

void pareto(std::vector<Entry>& v, int C, ParetoScratch& w) {
  if (v.size() < 2) return;
  w.touched.clear();
  for (const Entry& e : v) {
    const int key = e.u * C + e.c;
    if (w.count[key]++ == 0) w.touched.push_back(key);
  }
  std::sort(w.touched.begin(), w.touched.end());
  int offset = 0;
  for (int key : w.touched) {
    const int n = w.count[key];
    w.count[key] = offset;
    offset += n;
  }
  w.tmp.resize(v.size());
  for (const Entry& e : v) w.tmp[w.count[e.u * C + e.c]++] = e;
  std::size_t out = 0, begin = 0;
  for (int key : w.touched) {
    const std::size_t end = static_cast<std::size_t>(w.count[key]);
    w.count[key] = 0;
    std::sort(w.tmp.begin() + static_cast<std::ptrdiff_t>(begin), w.tmp.begin() + static_cast<std::ptrdiff_t>(end),
              entry_less);
    double last_s = kInf;
    for (std::size_t i = begin; i < end; ++i)
      if (w.tmp[i].S < last_s) v[out++] = w.tmp[i], last_s = w.tmp[i].S;
    begin = end;
  }
  v.resize(out);
}

// u + the devices of configuration c, or −1 when the type has too few devices left.
int add_usage(const StageTables& T, int u, int c) {
  const int slot = T.type_slot[T.cfg[c].gpu_type];
  const int digit = (u / T.stride[slot]) % (T.type_count[slot] + 1);
  if (digit + T.cfg[c].devices() > T.type_count[slot]) return -1;
  return u + T.cfg[c].devices() * T.stride[slot];
}

struct Solve {
  std::vector<std::vector<std::vector<Entry>>> level;  // [d][a]
  std::vector<double> best;                            // per usage u: optimum F
  std::vector<std::pair<int, int>> best_at;            // (d, index in level[d][0])
  std::int64_t states = 0;
};

// An upper bound to start pruning with: the best chain of one or two stages (every configuration pair and cut),
// by candidate_time (the same closed form as the DP's).
double one_or_two_stages(const StageTables& T) {
  double best = kInf;
  for (int a = 0; a < T.C(); ++a) {
    best = std::min(best, candidate_time(T, {a}, {T.L}));
    for (int b = 0; b < T.C(); ++b)
      for (int cut = 1; cut < T.L; ++cut) best = std::min(best, candidate_time(T, {a, b}, {cut, T.L - cut}));
  }
  return best;
}

// Lower bounds for pruning. Prefix [0, a): Σ h ≥ lb_prefix[a] (cheapest per-layer times; flush schedules), and
// its largest q: a stage of type τ with n_i devices has t_i/r_i = t_i·tp_i/n_i ≥ W_i/n_i, W_i = Σ over its layers
// of w_τ(l) (the cheapest t·tp of a layer on τ). With s_τ = max_l w(l)/w_τ(l) (w = the cheapest over types; τ's
// best relative speed), P = max_i t_i/r_i satisfies P·Σ_τ left_τ·s_τ ≥ Σ_i W_i·s_τi ≥ Σ_l w(l) (the mediant
// inequality), so P ≥ work[a] / capacity(u); q_i ≥ (M − min(n_left, widest dp))·t_i/r_i for gpipe/1f1b and
// M·t_i/r_i for 2bw/pipedream.
struct Bounds {
  const StageTables& T;
  std::vector<double> lb_prefix, work, capacity;
  std::vector<int> left;
  int widest = 1;

  explicit Bounds(const StageTables& tables) : T(tables) {
    const int C = T.C(), L = T.L, slots = static_cast<int>(T.types.size());
    lb_prefix.assign(static_cast<std::size_t>(L) + 1, 0.0);
    work = lb_prefix;
    std::vector<std::vector<double>> w_type(slots, std::vector<double>(L, kInf));
    std::vector<double> w_min(L, kInf);
    for (int l = 0; l < L; ++l) {
      double best = kInf;
      for (int c = 0; c < C; ++c) {
        const double t = T.t[c][T.range(l, l + 1)];
        best = std::min(best, t);
        auto& w = w_type[T.type_slot[T.cfg[c].gpu_type]][l];
        w = std::min(w, t * T.cfg[c].tp);
        w_min[l] = std::min(w_min[l], w);
      }
      lb_prefix[l + 1] = lb_prefix[l] + (best == kInf || !T.flush() ? 0.0 : best);
      work[l + 1] = work[l] + (w_min[l] == kInf ? 0.0 : w_min[l]);
    }
    std::vector<double> speed(slots, 0.0);
    for (int k = 0; k < slots; ++k)
      for (int l = 0; l < L; ++l)
        if (w_type[k][l] < kInf && w_type[k][l] > 0) speed[k] = std::max(speed[k], w_min[l] / w_type[k][l]);
    left.assign(static_cast<std::size_t>(T.U), 0);
    capacity.assign(static_cast<std::size_t>(T.U), 0.0);
    for (int u = 0; u < T.U; ++u)
      for (int k = 0; k < slots; ++k) {
        const int n = T.type_count[k] - (u / T.stride[k]) % (T.type_count[k] + 1);
        left[u] += n;
        capacity[u] += n * speed[k];
      }
    for (const auto& k : T.cfg) widest = std::max(widest, k.dp);
  }
  // A lower bound on every whole chain that ends with the suffix `e` starting at layer a.
  double lower(const Entry& e, int a) const {
    if (a == 0) return e.Q + e.S;
    if (left[e.u] <= 0 || capacity[e.u] <= 0) return kInf;  // no device left for the prefix
    const double M = static_cast<double>(T.M);
    const double factor = T.flush() ? std::max(0.0, M - std::min(left[e.u], widest)) : M;
    return std::max(e.Q, factor * work[a] / capacity[e.u]) + e.S + lb_prefix[a];
  }
};

// The dynamic program. prune: only the overall best is wanted (fastest objective); `bound` = an upper bound on it
// (a chain costing at most that exists, or +inf): chains above it are dropped.
class Dp {
 public:
  Dp(const StageTables& T, bool prune, double bound)
      : T_(T), prune_(prune), bounds_(T),
        // Slack: the DP adds its terms in another order than candidate_time, so an equal chain may differ by
        // rounding.
        incumbent_(prune ? bound * (1 + 1e-9) : kInf) {
    s_.level.assign(T.D, std::vector<std::vector<Entry>>(static_cast<std::size_t>(T.L) + 1));
    s_.best.assign(T.U, kInf);
    s_.best_at.assign(T.U, {-1, -1});
    scratch_.count.assign(static_cast<std::size_t>(T.U) * T.C(), 0);
    frontier_.resize(static_cast<std::size_t>(T.L) + 1);
  }

  Solve run() {
    // The whole chain on every device, as a prefix of an empty suffix: when even that bound exceeds the
    // incumbent, nothing here can win (a micro-batch size skipped without its DP).
    if (prune_ && bounds_.lower(Entry{0, 0, 0.0, 0.0, -1, -1}, T_.L) > incumbent_) return std::move(s_);
    for (int c = 0; c < T_.C(); ++c) {
      const int u = add_usage(T_, 0, c);
      for (int a = T_.L - 1; a >= 0 && u >= 0; --a) {
        if (T_.fit_depth[c][T_.range(a, T_.L)] < 1) break;
        emit(0, a, {u, c, T_.stage_q(c, a, T_.L), T_.stage_h(c, a, T_.L), -1, -1});
      }
    }
    for (int d = 0; d < T_.D; ++d) {
      for (int a = 0; a <= T_.L; ++a) filter(d, a);
      if (d + 1 < T_.D)
        for (int j = T_.L - 1; j >= 1; --j) extend(d, j);
    }
    for (int d = 0; d < T_.D; ++d)
      for (std::size_t i = 0; i < s_.level[d][0].size(); ++i) {
        const Entry& e = s_.level[d][0][i];
        if (e.Q + e.S < s_.best[e.u]) s_.best[e.u] = e.Q + e.S, s_.best_at[e.u] = {d, static_cast<int>(i)};
      }
    return std::move(s_);
  }

 private:
  void emit(int d, int a, const Entry& e) {
    if (prune_ && bounds_.lower(e, a) > incumbent_) return;
    if (prune_ && a == 0) incumbent_ = std::min(incumbent_, e.Q + e.S);
    s_.level[d][a].push_back(e);
  }

  // Pareto filter of level d at layer a; across depths too: a suffix with fewer stages leaves more memory to the
  // stages before it (their depth is smaller), so (d ≤ d', Q ≤ Q', S ≤ S') at the same (a, u, c) dominates.
  void filter(int d, int a) {
    const int C = T_.C();
    auto& lv = s_.level[d][a];
    pareto(lv, C, scratch_);
    auto& F = frontier_[a];
    std::size_t kept = 0;
    for (const Entry& e : lv) {
      const auto it = F.find(e.u * C + e.c);
      bool dominated = false;
      if (it != F.end())
        for (const auto& [q, sum] : it->second) dominated = dominated || (q <= e.Q && sum <= e.S);
      if (!dominated) lv[kept++] = e;
    }
    lv.resize(kept);
    for (const Entry& e : lv) F[e.u * C + e.c].push_back({e.Q, e.S});
    s_.states += static_cast<std::int64_t>(lv.size());
  }

  // Every d+1-stage suffix made of a new stage [a, j) in front of a d-stage suffix starting at j.
  void extend(int d, int j) {
    const auto& src = s_.level[d][j];
    if (src.empty()) return;
    in_.clear();
    for (std::size_t i = 0; i < src.size(); ++i)
      for (int c2 = 0; c2 < T_.C(); ++c2) {
        const int u2 = add_usage(T_, src[i].u, c2);
        if (u2 < 0 || T_.fit_depth[c2][T_.range(j - 1, j)] < d + 2) continue;
        const double e = T_.boundary(c2, src[i].c, j);
        const Entry x{u2, c2, std::max(src[i].Q, T_.boundary_q(e)), src[i].S + T_.boundary_h(e), j,
                      static_cast<int>(i)};
        if (!prune_ || may_win(x, d, j)) in_.push_back(x);
      }
    pareto(in_, T_.C(), scratch_);
    for (const Entry& x : in_)
      for (int a = j - 1; a >= 0; --a) {
        if (T_.fit_depth[x.c][T_.range(a, j)] < d + 2) break;  // longer ranges fit no better
        Entry y = x;
        y.Q = std::max(x.Q, T_.stage_q(x.c, a, j));
        y.S = x.S + T_.stage_h(x.c, a, j);
        emit(d + 1, a, y);
      }
  }

  // The new stage covers [a, j): a = 0 is a whole chain; a ≥ 1 covers at least layer j − 1 and leaves a prefix of
  // at least [0, 1) (lower() is non-decreasing in the prefix and the stage's range).
  bool may_win(const Entry& x, int d, int j) const {
    const int c = x.c;
    const double whole = std::max(x.Q, T_.stage_q(c, 0, j)) + x.S + T_.stage_h(c, 0, j);
    if (T_.fit_depth[c][T_.range(0, j)] >= d + 2 && whole <= incumbent_) return true;
    const Entry part{x.u, c, std::max(x.Q, T_.stage_q(c, j - 1, j)), x.S + T_.stage_h(c, j - 1, j), 0, 0};
    return j >= 2 && bounds_.lower(part, 1) <= incumbent_;
  }

  const StageTables& T_;
  bool prune_;
  Bounds bounds_;
  double incumbent_;
  Solve s_;
  ParetoScratch scratch_;
  std::vector<Entry> in_;
  std::vector<std::unordered_map<int, std::vector<std::pair<double, double>>>> frontier_;
};

Solve solve(const StageTables& T, bool prune, double bound = kInf) { return Dp(T, prune, bound).run(); }

// The chain of (configuration, layers) of the optimum for usage u.
std::vector<std::pair<int, int>> trace(const StageTables& T, const Solve& s, int u) {
  std::vector<std::pair<int, int>> out;
  auto [d, i] = s.best_at[u];
  int a = 0;
  while (d >= 0 && i >= 0) {
    const Entry& e = s.level[d][a][i];
    const int next = e.pj < 0 ? T.L : e.pj;
    out.push_back({e.c, next - a});
    if (e.pj < 0) break;
    a = e.pj;
    i = e.pidx;
    --d;
  }
  return out;
}

double usd_per_hour_of(const StageTables& T, int u, const std::vector<double>& price) {
  double total = 0;
  for (std::size_t slot = 0; slot < T.types.size(); ++slot) {
    const int n = (u / T.stride[slot]) % (T.type_count[slot] + 1);
    if (n > 0) total += n * price[T.types[slot]];
  }
  return total;
}

// The plan of a chain of (configuration, layers): completed (devices dealt by type), estimated, idle devices and
// price.
void fill_result(const model::Model& m, const hw::Cluster& c, const StageSearchOptions& opt, const StageTables& T,
                 const std::vector<std::pair<int, int>>& chain, const std::vector<double>& price,
                 StageSearchResult& res) {
  cost::Strategy s;
  s.micro_batch = T.mbs;
  s.global_batch = opt.global_batch;
  s.schedule = opt.schedule;
  s.zero_stage = opt.zero_stage;
  s.recompute = opt.recompute;
  s.dtype = opt.dtype;
  s.eager_elementwise = opt.eager_elementwise;
  for (const auto& [k, layers] : chain) {
    cost::StageChoice st;
    st.gpu = c.gpu_types[T.cfg[k].gpu_type].name;
    st.dp = T.cfg[k].dp;
    st.tp = T.cfg[k].tp;
    st.layers = layers;
    s.stages.push_back(st);
  }
  s.pp = static_cast<int>(s.stages.size());
  s.dp = s.tp = 0;
  res.strategy = cost::complete_strategy(s, m, c);
  res.estimate = cost::estimate(m, c, res.strategy, opt.cost);
  res.found = true;
  res.micro_batch = T.mbs;
  std::vector<char> used(c.num_devices(), 0);
  for (const auto& v : cost::stage_views(res.strategy, c))
    for (int d : v.devices) used[d] = 1;
  for (int d = 0; d < c.num_devices(); ++d) {
    if (!used[d]) res.idle_devices.push_back(d);
    else if (price[c.devices[d].gpu_type] > 0) res.usd_per_hour += price[c.devices[d].gpu_type];
  }
  if (res.estimate.samples_per_s > 0) res.usd_per_sample = res.usd_per_hour / 3600.0 / res.estimate.samples_per_s;
}

}  // namespace

double dp_best_time(const StageTables& T) {
  const Solve s = solve(T, true, one_or_two_stages(T));
  double best = kInf;
  for (double x : s.best) best = std::min(best, x);
  return best;
}

StageSearchResult search_per_stage(const model::Model& m, const hw::Cluster& c, const StageSearchOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  if (opt.global_batch < 1) throw core::InputError("--gbs: required (global batch size)");
  if (opt.schedule == cost::Schedule::interleaved)
    throw core::InputError("--schedule: interleaved is not a per-stage schedule (gpipe, 1f1b, pipedream, 2bw)");
  if (const std::string why = cost::dtype_unsupported(opt.dtype, c); !why.empty())
    throw core::InputError("plan: --dtype: " + why);
  std::vector<std::int64_t> mbss = opt.micro_batches;
  if (mbss.empty())
    for (std::int64_t b : {1, 2, 4, 8})
      if (opt.global_batch % b == 0) mbss.push_back(b);
  const std::vector<double> price = gpu_type_prices(c, opt);
  const bool priced = opt.objective != StageObjective::fastest;
  if (priced)
    for (std::size_t t = 0; t < c.gpu_types.size(); ++t)
      if (price[t] < 0)
        throw core::InputError(fmt::format("--objective {}: GPU type '{}' has no price in data/gpu_prices.json (give "
                                           "--price {}=USD_PER_HOUR)", to_string(opt.objective),
                                           c.gpu_types[t].name, c.gpu_types[t].name));
  StageSearchResult res;
  double best_key = kInf;
  std::shared_ptr<const StageTables> best_tables;
  std::vector<std::pair<int, int>> best_chain;
  double best_time = 0;
  // Tables of every micro-batch size first, so that the fastest objective prunes every DP with the best one- or
  // two-stage chain over all of them.
  std::vector<std::shared_ptr<const StageTables>> tables;
  double start_bound = kInf;
  for (std::int64_t mbs : mbss) {
    tables.push_back(build_stage_tables(m, c, opt, mbs));
    res.configs += tables.back()->C();
    if (!priced) start_bound = std::min(start_bound, one_or_two_stages(*tables.back()));
  }
  for (const auto& T : tables) {
    const Solve s = priced ? solve(*T, false) : solve(*T, true, std::min(best_key, start_bound));
    ++res.passes;
    res.states += s.states;
    for (int u = 0; u < T->U; ++u) {
      if (s.best[u] == kInf) continue;
      const double rate = priced ? usd_per_hour_of(*T, u, price) : 0.0;
      if (opt.objective == StageObjective::budget && rate > opt.budget_usd_per_hour) continue;
      const double key = opt.objective == StageObjective::cheapest ? s.best[u] * rate : s.best[u];
      if (key < best_key) best_key = key, best_tables = T, best_chain = trace(*T, s, u), best_time = s.best[u];
    }
  }
  if (!best_tables) {
    if (opt.objective == StageObjective::budget)
      throw core::InputError(fmt::format("--budget: no per-stage plan that fits memory costs at most ${:.2f}/hour",
                                         opt.budget_usd_per_hour));
    throw core::InputError("--per-stage: no per-stage plan fits memory (try a smaller --mbs or recompute)");
  }
  fill_result(m, c, opt, *best_tables, best_chain, price, res);
  res.objective_s = best_time;
  res.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace strata::plan
