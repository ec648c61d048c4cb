// plan/stage_search: the per-stage planner's exact dynamic program and objective sweep (stage_search.hpp;
// docs/planner.md §Per-stage search).
//
// State (d, j, u, c): the suffix of the chain from layer j is split into d stages, the first of which has
// configuration c, and the suffix uses u devices per GPU type (a mixed-radix index). Every closed form of
// cost/per_stage is max_i q_i + Σ_i h_i over stages and boundaries (StageTables::stage_q/h, boundary_q/h), so:
//   pipedream, 2bw (h = 0):  one min-max pass gives the optimum per u;
//   gpipe, 1f1b:             for a bound B on every q, a min-sum pass gives S(B, u) = min Σ h; the optimum is
//                            min_B B + S(B, u) over the q values B of feasible stages (AMP's bound sweep, as
//                            plan/split), swept upwards from the min-max optimum and stopped once B + S(∞, u)
//                            reaches the best found for every u.
// Memory: a stage fits at depth d (stages from it to the end; 1F1B in-flight and PipeDream's weight versions
// depend on it) when fit_depth ≥ d — the reason the state carries d.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "stage_tables.hpp"
#include "strata/core/error.hpp"

namespace strata::plan {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct DpWork {
  std::vector<double> V;        // [d][j][u][c]
  std::vector<std::int32_t> par;  // next stage (j·C + c), −1 = last stage
  std::vector<double> in_v;     // [u][c] best continuation into a new first stage
  std::vector<std::int32_t> in_c;
  std::vector<double> fin;      // [u] best over d and c of a whole chain
  std::vector<std::pair<int, int>> fin_arg;  // (d, c)
  std::int64_t states = 0;
};

std::size_t at(const StageTables& T, int d, int j, int u, int c) {
  return ((static_cast<std::size_t>(d) * (T.L + 1) + j) * T.U + u) * T.C() + c;
}

// u + the devices of configuration c, or −1 when the type has too few devices left.
int add_usage(const StageTables& T, int u, int c) {
  const int slot = T.type_slot[T.cfg[c].gpu_type];
  const int digit = (u / T.stride[slot]) % (T.type_count[slot] + 1);
  if (digit + T.cfg[c].devices() > T.type_count[slot]) return -1;
  return u + T.cfg[c].devices() * T.stride[slot];
}

// Extends every d-stage suffix starting at j by one stage in front (placement phase of one (d, j)).
void extend(const StageTables& T, bool minmax, double B, DpWork& w, int d, int j) {
  const int C = T.C();
  std::fill(w.in_v.begin(), w.in_v.end(), kInf);
  bool any = false;
  for (int u = 0; u < T.U; ++u)
    for (int c = 0; c < C; ++c) {
      const double v = w.V[at(T, d - 1, j, u, c)];
      if (v == kInf) continue;
      for (int c2 = 0; c2 < C; ++c2) {
        const int u2 = add_usage(T, u, c2);
        if (u2 < 0) continue;
        const double e = T.boundary(c2, c, j);
        const double bq = T.boundary_q(e);
        if (!minmax && bq > B) continue;
        const double x = minmax ? std::max(v, bq) : v + T.boundary_h(e);
        auto& slot = w.in_v[static_cast<std::size_t>(u2) * C + c2];
        if (x < slot) slot = x, w.in_c[static_cast<std::size_t>(u2) * C + c2] = c, any = true;
      }
    }
  if (!any) return;
  for (int u2 = 0; u2 < T.U; ++u2)
    for (int c2 = 0; c2 < C; ++c2) {
      const double in = w.in_v[static_cast<std::size_t>(u2) * C + c2];
      if (in == kInf) continue;
      for (int a = j - 1; a >= 0; --a) {
        if (T.fit_depth[c2][T.range(a, j)] < d + 1) break;  // longer ranges fit no better
        const double q = T.stage_q(c2, a, j);
        if (!minmax && q > B) continue;
        const double x = minmax ? std::max(in, q) : in + T.stage_h(c2, a, j);
        auto& v = w.V[at(T, d, a, u2, c2)];
        if (x < v) {
          if (v == kInf) ++w.states;
          v = x;
          w.par[at(T, d, a, u2, c2)] = j * C + w.in_c[static_cast<std::size_t>(u2) * C + c2];
        }
      }
    }
}

// One pass: minmax (value = max q) or min Σh with every q ≤ B. Fills w.fin / w.fin_arg per usage u.
void run_pass(const StageTables& T, bool minmax, double B, DpWork& w) {
  const int C = T.C();
  w.V.assign(static_cast<std::size_t>(T.D) * (T.L + 1) * T.U * C, kInf);
  w.par.assign(w.V.size(), -1);
  w.in_v.assign(static_cast<std::size_t>(T.U) * C, kInf);
  w.in_c.assign(w.in_v.size(), -1);
  for (int c = 0; c < C; ++c) {
    const int u = add_usage(T, 0, c);
    for (int a = T.L - 1; a >= 0 && u >= 0; --a) {
      if (T.fit_depth[c][T.range(a, T.L)] < 1) break;
      const double q = T.stage_q(c, a, T.L);
      if (!minmax && q > B) continue;
      w.V[at(T, 0, a, u, c)] = minmax ? q : T.stage_h(c, a, T.L);
      ++w.states;
    }
  }
  for (int d = 1; d < T.D; ++d)
    for (int j = T.L - d; j >= 1; --j) extend(T, minmax, B, w, d, j);
  w.fin.assign(T.U, kInf);
  w.fin_arg.assign(T.U, {-1, -1});
  for (int d = 0; d < T.D; ++d)
    for (int u = 0; u < T.U; ++u)
      for (int c = 0; c < C; ++c)
        if (const double v = w.V[at(T, d, 0, u, c)]; v < w.fin[u]) w.fin[u] = v, w.fin_arg[u] = {d, c};
}

struct Sweep {
  std::vector<double> best;     // per u: optimum iteration time
  std::vector<double> bound;    // per u: the B (flush) at which it was found (min-max: the optimum)
  std::int64_t passes = 0, states = 0;
};

// per_usage: every usage's optimum is needed (cheapest / budget); otherwise only the overall best.
Sweep sweep(const StageTables& T, bool per_usage) {
  Sweep s;
  DpWork w;
  run_pass(T, true, kInf, w);
  ++s.passes;
  s.best = w.fin;
  s.bound = w.fin;
  s.states += w.states;
  if (!T.flush()) return s;
  const std::vector<double> mm = w.fin;
  run_pass(T, false, kInf, w);
  ++s.passes;
  const std::vector<double> lb = w.fin;  // S(∞, u)
  double lo = kInf;
  for (double x : mm) lo = std::min(lo, x);
  std::vector<double> bounds;
  for (int c = 0; c < T.C(); ++c)
    for (int a = 0; a < T.L; ++a)
      for (int b = a + 1; b <= T.L && T.fit_depth[c][T.range(a, b)] > 0; ++b)
        if (const double q = T.stage_q(c, a, b); q >= lo) bounds.push_back(q);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  std::fill(s.best.begin(), s.best.end(), kInf);
  double lb_min = kInf;
  for (double x : lb) lb_min = std::min(lb_min, x);
  for (double B : bounds) {
    bool done = true;
    if (per_usage) {
      for (int u = 0; u < T.U && done; ++u)
        if (lb[u] < kInf && B + lb[u] < s.best[u]) done = false;
    } else {
      done = B + lb_min >= *std::min_element(s.best.begin(), s.best.end());
    }
    if (done) break;
    run_pass(T, false, B, w);
    ++s.passes;
    s.states += w.states;
    for (int u = 0; u < T.U; ++u)
      if (w.fin[u] < kInf && B + w.fin[u] < s.best[u]) s.best[u] = B + w.fin[u], s.bound[u] = B;
  }
  return s;
}

// The chain of (configuration, layers) of the optimum for usage u, re-solved at its bound.
std::vector<std::pair<int, int>> trace(const StageTables& T, int u, double bound) {
  DpWork w;
  run_pass(T, !T.flush(), bound, w);
  std::vector<std::pair<int, int>> out;
  auto [d, c] = w.fin_arg[u];
  int j = 0;
  while (d >= 0 && c >= 0) {
    const std::int32_t p = w.par[at(T, d, j, u, c)];
    const int next_j = p < 0 ? T.L : p / T.C();
    out.push_back({c, next_j - j});
    if (p < 0) break;
    const int slot = T.type_slot[T.cfg[c].gpu_type];
    u -= T.cfg[c].devices() * T.stride[slot];
    c = p % T.C();
    j = next_j;
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

}  // namespace

double dp_best_time(const StageTables& T) {
  const Sweep s = sweep(T, false);
  double best = kInf;
  for (double x : s.best) best = std::min(best, x);
  return best;
}

StageSearchResult search_per_stage(const model::Model& m, const hw::Cluster& c, const StageSearchOptions& opt) {
  const auto start = std::chrono::steady_clock::now();
  if (opt.global_batch < 1) throw core::InputError("--gbs: required (global batch size)");
  if (opt.schedule == cost::Schedule::interleaved)
    throw core::InputError("--schedule: interleaved is not a per-stage schedule (gpipe, 1f1b, pipedream, 2bw)");
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
  int best_u = -1;
  double best_bound = 0, best_time = 0;
  for (std::int64_t mbs : mbss) {
    auto T = build_stage_tables(m, c, opt, mbs);
    res.configs += T->C();
    const Sweep s = sweep(*T, priced);
    res.passes += s.passes;
    res.states += s.states;
    for (int u = 0; u < T->U; ++u) {
      if (s.best[u] == kInf) continue;
      const double rate = priced ? usd_per_hour_of(*T, u, price) : 0.0;
      if (opt.objective == StageObjective::budget && rate > opt.budget_usd_per_hour) continue;
      const double key = opt.objective == StageObjective::cheapest ? s.best[u] * rate : s.best[u];
      if (key < best_key) best_key = key, best_tables = T, best_u = u, best_bound = s.bound[u], best_time = s.best[u];
    }
  }
  if (!best_tables) {
    if (opt.objective == StageObjective::budget)
      throw core::InputError(fmt::format("--budget: no per-stage plan that fits memory costs at most ${:.2f}/hour",
                                         opt.budget_usd_per_hour));
    throw core::InputError("--per-stage: no per-stage plan fits memory (try a smaller --mbs or recompute)");
  }
  const StageTables& T = *best_tables;
  cost::Strategy s;
  s.micro_batch = T.mbs;
  s.global_batch = opt.global_batch;
  s.schedule = opt.schedule;
  s.zero_stage = opt.zero_stage;
  s.recompute = opt.recompute;
  s.dtype = opt.dtype;
  for (const auto& [k, layers] : trace(T, best_u, best_bound)) {
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
  res.objective_s = best_time;
  res.micro_batch = T.mbs;
  std::vector<char> used(c.num_devices(), 0);
  for (const auto& v : cost::stage_views(res.strategy, c))
    for (int d : v.devices) used[d] = 1;
  for (int d = 0; d < c.num_devices(); ++d)
    if (!used[d]) res.idle_devices.push_back(d);
  for (int d = 0; d < c.num_devices(); ++d)
    if (used[d] && price[c.devices[d].gpu_type] > 0) res.usd_per_hour += price[c.devices[d].gpu_type];
  if (res.estimate.samples_per_s > 0) res.usd_per_sample = res.usd_per_hour / 3600.0 / res.estimate.samples_per_s;
  res.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace strata::plan
