// sched/policies: policy names, the agnostic view, and the single-LP / binary-search policies of thesis Table 5.1
// and ch. 6 (FIFO, SJF, makespan, finish-time fairness, max-throughput, min-cost, min-cost-slo, makespan-budget).
// The water-filling policies (max-min fairness, hierarchical) live in waterfill.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "alloc_lp.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "waterfill.hpp"

namespace strata::sched {
namespace {

using detail::AllocLp;
using detail::Terms;

struct NamedKind {
  const char* name;
  PolicyKind kind;
};
constexpr NamedKind kNames[] = {
    {"max-min-fairness", PolicyKind::kMaxMinFairness}, {"finish-time-fairness", PolicyKind::kFinishTimeFairness},
    {"makespan", PolicyKind::kMakespan},               {"fifo", PolicyKind::kFifo},
    {"sjf", PolicyKind::kSjf},                         {"max-throughput", PolicyKind::kMaxThroughput},
    {"min-cost", PolicyKind::kMinCost},                {"min-cost-slo", PolicyKind::kMinCostSlo},
    {"makespan-budget", PolicyKind::kMakespanBudget},  {"hierarchical", PolicyKind::kHierarchical},
};

// The agnostic baseline sees each job as equally fast on every type it can run on (its mean throughput there),
// keeping units so that steps and SLOs still mean something; pair and unconsolidated throughputs keep their
// ratio to the solo consolidated throughput.
Problem agnostic_view(const Problem& p) {
  Problem q = p;
  for (int m = 0; m < p.num_jobs(); ++m) {
    const JobSpec& j = p.jobs[m];
    double sum = 0;
    int n = 0;
    for (double t : j.throughputs)
      if (t > 0) sum += t, ++n;
    const double mean = sum / n;
    for (int t = 0; t < p.num_types(); ++t) {
      q.jobs[m].throughputs[t] = j.throughputs[t] > 0 ? mean : 0.0;
      if (!j.unconsolidated.empty())
        q.jobs[m].unconsolidated[t] = j.throughputs[t] > 0 ? j.unconsolidated[t] / j.throughputs[t] * mean : 0.0;
    }
  }
  for (auto& ps : q.pairs)
    for (int t = 0; t < p.num_types(); ++t)
      for (int i = 0; i < 2; ++i) {
        const int m = i == 0 ? ps.a : ps.b;
        const double solo = p.jobs[m].throughputs[t];
        ps.throughputs[t][i] = solo > 0 ? ps.throughputs[t][i] / solo * q.jobs[m].throughputs[t] : 0.0;
      }
  return q;
}

// A heterogeneity-agnostic scheduler decides how much GPU time each combination gets, not which type: the LP on
// the all-equal view leaves the split over types arbitrary (a simplex vertex), so it is fixed here.
// Proportional (Gavel's agnostic allocation, the central optimum of its interior-point solver; shared/gavel
// README): combination k gets each type j it can use in proportion to the type's count, X_kj = X_k·W_j/Σ_usable W.
// Fill-order (strata's earlier split): the total demand D = Σ_k sf_k·X_k is poured into the types in listed order
// and every combination gets the same share of each type, X_kj = X_k·used_j/D. Either way, where the split would
// break a constraint (a type over its count, or a share on a type the combination cannot use), the LP's own
// split is kept.
std::vector<double> fill_order_shares(const Problem& seen, double demand) {
  std::vector<double> share(seen.num_types(), 0.0);
  double left = demand;
  for (int j = 0; j < seen.num_types() && left > 0; ++j) {
    const double used = std::min<double>(left, seen.types[j].count);
    share[j] = used / demand;
    left -= used;
  }
  return share;
}

Allocation spread_over_types(const Problem& seen, PolicyOptions opt, Allocation a) {
  opt.warm = nullptr;  // only the shape is read: no warm-start keys
  const detail::AllocLp shape = detail::build_alloc_lp(seen, opt);
  // The column of each type that takes the spread: the consolidated one, else the unconsolidated one.
  auto takes = [&](std::size_t k, std::size_t c) {
    if (shape.var[k][c] < 0) return false;
    if (a.columns[c].consolidated) return true;
    return c == 0 || a.columns[c - 1].type != a.columns[c].type || shape.var[k][c - 1] < 0;
  };
  std::vector<double> total(a.combos.size(), 0.0);
  double demand = 0;
  for (std::size_t k = 0; k < a.combos.size(); ++k) {
    for (std::size_t c = 0; c < a.columns.size(); ++c) total[k] += a.x[k][c];
    demand += total[k] * a.combos[k].scale_factor;
  }
  if (demand <= 0) return a;
  const bool proportional = opt.agnostic_split == AgnosticSplit::kProportional;
  const std::vector<double> fill = proportional ? std::vector<double>{} : fill_order_shares(seen, demand);
  Allocation b = a;
  std::vector<double> used(seen.num_types(), 0.0);
  for (std::size_t k = 0; k < a.combos.size(); ++k) {
    double usable = 0;
    for (std::size_t c = 0; c < a.columns.size(); ++c)
      if (takes(k, c)) usable += seen.types[a.columns[c].type].count;
    double placed = 0;
    for (std::size_t c = 0; c < a.columns.size(); ++c) {
      const int j = a.columns[c].type;
      const double share = proportional ? seen.types[j].count / usable : fill[j];
      b.x[k][c] = takes(k, c) ? total[k] * share : 0.0;
      placed += b.x[k][c];
      used[j] += b.x[k][c] * a.combos[k].scale_factor;
    }
    if (placed < total[k] * (1 - 1e-9)) return a;  // a type this combination cannot use got a share
  }
  for (int j = 0; j < seen.num_types(); ++j)
    if (used[j] > seen.types[j].count * (1 + 1e-9) + 1e-9) return a;  // restricted jobs crowd one type
  return b;
}

void require_steps(const Problem& p, const std::string& policy) {
  for (const auto& j : p.jobs)
    if (j.steps <= 0)
      throw core::InputError(fmt::format("policy {}: job '{}' has no \"steps\" (remaining iterations), which this "
                                         "policy needs", policy, j.name));
}

// Σ_m coef_m · throughput(m, X) as an objective.
void set_throughput_objective(AllocLp& a, const std::vector<double>& coef) {
  for (std::size_t m = 0; m < coef.size(); ++m)
    for (const auto& [v, c] : a.tput[m]) a.lp.set_objective(v, a.lp.objective_coefficient(v) + coef[m] * c);
  a.lp.set_maximize(true);
}

Allocation solved(const AllocLp& a, const LpSolution& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error("sched: LP for " + what + " did not solve to optimality");
  return detail::read_allocation(a, s);
}

// FIFO / SJF (thesis Table 5.1): max Σ_m throughput(m,X)/throughput(m,X^fastest) · (M − rank_m).
Allocation rank_weighted(const Problem& p, const PolicyOptions& opt, const std::vector<int>& order,
                         const std::string& name) {
  AllocLp a = detail::build_alloc_lp(p, opt);
  std::vector<double> coef(p.num_jobs());
  const double M = p.num_jobs();
  for (int r = 0; r < p.num_jobs(); ++r) coef[order[r]] = (M - r) / fastest_throughput(p.jobs[order[r]]);
  set_throughput_objective(a, coef);
  const LpSolution s = detail::solve_once(a.lp, opt, name);
  Allocation out = solved(a, s, name);
  out.objective = s.objective;
  out.lp_solves = 1;
  out.objective_name = "rank_weighted_throughput_over_fastest";
  return out;
}

Allocation fifo(const Problem& p, const PolicyOptions& opt) {
  std::vector<int> order(p.num_jobs());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int x, int y) { return p.jobs[x].arrival_s < p.jobs[y].arrival_s; });
  return rank_weighted(p, opt, order, "fifo");
}

// SJF: the thesis' "min_X min_m steps/throughput" is not convex; as in practice it is a priority order, here by
// remaining time on the fastest type (ties: input order), solved like FIFO.
Allocation sjf(const Problem& p, const PolicyOptions& opt) {
  require_steps(p, "sjf");
  std::vector<int> order(p.num_jobs());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
    return p.jobs[x].steps / fastest_throughput(p.jobs[x]) < p.jobs[y].steps / fastest_throughput(p.jobs[y]);
  });
  return rank_weighted(p, opt, order, "sjf");
}

// Makespan: min_X max_m steps_m/throughput(m,X) ⇔ max t s.t. throughput(m,X) >= steps_m·t; makespan = 1/t.
// Then, at t >= (1 − 1e-7)·t*, the most normalised throughput: the same LP re-solved from the first optimum's basis
// (a pin row on t, free until then, and the new objective; primal simplex, as the old basis stays feasible).
Allocation makespan(const Problem& p, const PolicyOptions& opt) {
  require_steps(p, "makespan");
  AllocLp a = detail::build_alloc_lp(p, opt);
  const int t = a.lp.add_variable(0.0, kLpInf, 1.0);
  std::vector<int> rows(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m)
    rows[m] = a.lp.add_constraint(detail::concat(a.tput[m], {{t, -p.jobs[m].steps}}), 0.0, kLpInf);
  const int pin = a.lp.add_constraint({{t, 1.0}}, -kLpInf, kLpInf);
  a.lp.set_maximize(true);
  if (opt.warm != nullptr) a.lp.set_variable_key(t, lp_key("t")), a.lp.set_row_key(pin, lp_key("pin"));
  detail::key_job_rows(a, rows, 'S');
  IncrementalLp lp(a.lp);
  const LpSolution s1 = detail::solve_warm(lp, opt, "makespan", /*save=*/true);
  if (!s1.ok()) throw std::runtime_error("sched: makespan LP failed");
  const double tstar = s1.values[t];
  lp.set_row_bounds(pin, tstar - 1e-7 * std::abs(tstar) - 1e-15, kLpInf);
  std::vector<double> coef(a.lp.num_variables(), 0.0);  // t's stays 0
  for (int m = 0; m < p.num_jobs(); ++m) {
    const double ref = reference_throughput(p, p.jobs[m], opt.normalization);
    for (const auto& [v, c] : a.tput[m]) coef[v] += c / ref;
  }
  for (int v = 0; v < a.lp.num_variables(); ++v) lp.set_objective(v, coef[v]);
  const LpSolution s2 = detail::solve_again(lp, opt, "makespan/2");
  Allocation out = solved(a, s2.ok() ? s2 : s1, "makespan");
  out.objective = 1.0 / tstar;
  out.objective_name = "makespan_s";
  out.lp_solves = 2;
  return out;
}


// Finish-time fairness (Themis): ρ(m,X) = [t_m + S_m/throughput(m,X)] / [t_iso_m + S_m/throughput(m,X^iso)];
// min_X max_m ρ. For a fixed r, ρ <= r is linear: throughput(m,X) >= S_m/(r·D_m − t_m) with D_m the
// denominator; binary search on r (thesis: "reducible to a sequence of LPs").
Allocation finish_time_fairness(const Problem& p, const PolicyOptions& opt) {
  require_steps(p, "finish-time-fairness");
  const auto iso = isolated_throughputs(p, opt.isolated_share);
  std::vector<double> D(p.num_jobs());
  double hi = 0;
  for (int m = 0; m < p.num_jobs(); ++m) {
    const JobSpec& j = p.jobs[m];
    D[m] = j.elapsed_isolated_s + j.steps / iso[m];
    hi = std::max(hi, (j.elapsed_s + j.steps / iso[m]) / D[m]);
  }
  // One LP, its ρ rows re-bounded per attempt and re-solved from the last basis (incremental re-solves).
  AllocLp a = detail::build_alloc_lp(p, opt);
  std::vector<int> rho_row(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m) rho_row[m] = a.lp.add_constraint(a.tput[m], 0.0, kLpInf);
  detail::key_job_rows(a, rho_row, 'R');
  std::vector<double> coef(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m) coef[m] = 1.0 / reference_throughput(p, p.jobs[m], opt.normalization);
  set_throughput_objective(a, coef);  // secondary: most normalised throughput at this ρ
  IncrementalLp lp(a.lp);
  int solves = 0;
  auto attempt = [&](double r) {
    for (int m = 0; m < p.num_jobs(); ++m) {
      const double room = r * D[m] - p.jobs[m].elapsed_s;
      if (room <= 0) return LpSolution{LpStatus::kInfeasible, 0, {}};
      lp.set_row_bounds(rho_row[m], p.jobs[m].steps / room, kLpInf);
    }
    return ++solves == 1 ? detail::solve_warm(lp, opt, "ftf", false) : lp.solve();
  };
  LpSolution best_s = attempt(hi);
  for (int i = 0; i < 60 && !best_s.ok(); ++i) best_s = attempt(hi *= 2);  // X^iso is not representable
  if (!best_s.ok()) throw std::runtime_error("sched: finish-time fairness found no feasible ρ");
  double lo = 0;
  int it = 0;
  const double tol = opt.search_rel_tol > 0 ? opt.search_rel_tol : 1e-7;
  for (; it < 100 && hi - lo > tol * hi; ++it) {
    const double mid = 0.5 * (lo + hi);
    const LpSolution s = attempt(mid);
    if (s.ok()) hi = mid, best_s = s;
    else lo = mid;
  }
  // The last attempt's basis (feasible or not, it is next to the optimum) starts the next re-solve's search.
  if (opt.warm != nullptr) opt.warm->slots["ftf"] = lp.basis();
  Allocation out = solved(a, best_s, "finish-time-fairness");
  out.objective = hi;
  out.objective_name = "max_finish_time_fairness_rho";
  out.lp_solves = solves;
  out.iterations = it;
  return out;
}

// Max total throughput (thesis §6.1), each job's throughput normalised by its equal-share throughput so that
// jobs with different step units are comparable.
Allocation max_throughput(const Problem& p, const PolicyOptions& opt) {
  AllocLp a = detail::build_alloc_lp(p, opt);
  std::vector<double> coef(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m) coef[m] = 1.0 / reference_throughput(p, p.jobs[m], opt.normalization);
  set_throughput_objective(a, coef);
  const LpSolution s = detail::solve_once(a.lp, opt, "max-throughput");
  Allocation out = solved(a, s, "max-throughput");
  out.objective = s.objective;
  out.objective_name = "sum_normalized_throughput";
  out.lp_solves = 1;
  return out;
}

// Min cost (thesis §6.1; as Gavel implements it): max Σ_m Σ_j T_mj/(c_j·sf) · X_mj — throughput per dollar —
// normalised per job.
void set_cost_objective(const Problem& p, const PolicyOptions& opt, const std::string& name, AllocLp& a) {
  for (int m = 0; m < p.num_jobs(); ++m) {
    const double eq = reference_throughput(p, p.jobs[m], opt.normalization);
    const auto& combos = a.shape.combos;
    for (std::size_t k = 0; k < combos.size(); ++k) {
      if (std::find(combos[k].jobs.begin(), combos[k].jobs.end(), m) == combos[k].jobs.end()) continue;
      for (std::size_t c = 0; c < a.shape.columns.size(); ++c) {
        const int v = a.var[k][c];
        if (v < 0) continue;
        const double usd_h = detail::price_of(p.types[a.shape.columns[c].type], opt.price, name) * combos[k].scale_factor;
        const double tp = combo_throughput(p, combos[k], a.shape.columns[c], m);
        a.lp.set_objective(v, a.lp.objective_coefficient(v) + tp / eq / usd_h);
      }
    }
  }
  a.lp.set_maximize(true);
}

// With SLOs (min-cost-slo): throughput(m,X) >= need_m = steps_m/SLO_m, as elastic rows throughput + short_m >=
// need_m (0 <= short_m <= need_m), solved lexicographically on one CLP model: first the least total relative
// shortfall Σ short_m/need_m (0 when every SLO can be met), then — that sum pinned, the objective switched, the
// primal simplex continuing from the basis — the cheapest allocation. Infeasible SLOs are met as closely as the
// cluster allows and reported in `note`. (Issue 39: this replaced a hard-SLO LP, then on infeasibility two more
// cold LPs: three cold solves per re-solve in simulations, where most re-solves have an unmeetable SLO.)
Allocation min_cost(const Problem& p, const PolicyOptions& opt, bool slo) {
  const std::string name = slo ? "min-cost-slo" : "min-cost";
  if (slo)
    for (const auto& j : p.jobs)
      if (j.slo_s != kNoSlo && j.steps <= 0)
        throw core::InputError(fmt::format("policy {}: job '{}' has an slo_s but no \"steps\"", name, j.name));
  AllocLp a = detail::build_alloc_lp(p, opt);
  set_cost_objective(p, opt, name, a);
  Terms short_terms;  // Σ short_m / need_m
  for (int m = 0; slo && m < p.num_jobs(); ++m) {
    if (p.jobs[m].slo_s == kNoSlo) continue;
    const double need = p.jobs[m].steps / p.jobs[m].slo_s;
    const int v = a.lp.add_variable(0.0, need);
    const int r = a.lp.add_constraint(detail::concat(a.tput[m], {{v, 1.0}}), need, kLpInf);
    if (opt.warm != nullptr) a.lp.set_variable_key(v, lp_key(a.job_key[m], 's')), a.lp.set_row_key(r, lp_key(a.job_key[m], 'L'));
    short_terms.push_back({v, 1.0 / need});
  }
  if (short_terms.empty()) {
    const LpSolution s = detail::solve_once(a.lp, opt, name);
    Allocation out = solved(a, s, name);
    out.objective = cost_per_hour(p, out, opt.price);
    out.objective_name = "cost_usd_per_hour";
    out.lp_solves = 1;
    return out;
  }
  const int sum_row = a.lp.add_constraint(short_terms, -kLpInf, kLpInf);
  if (opt.warm != nullptr) a.lp.set_row_key(sum_row, lp_key("shortfall"));
  const std::vector<double> cost_obj = [&] {
    std::vector<double> c(a.lp.num_variables());
    for (int v = 0; v < a.lp.num_variables(); ++v) c[v] = a.lp.objective_coefficient(v), a.lp.set_objective(v, 0.0);
    return c;
  }();
  for (const auto& [v, c] : short_terms) a.lp.set_objective(v, -c);  // maximise −shortfall
  IncrementalLp lp(a.lp);
  const LpSolution least = detail::solve_warm(lp, opt, name, /*save=*/true);
  if (!least.ok()) throw std::runtime_error("sched: LP for " + name + " did not solve to optimality");
  const double shortfall = -least.objective;
  lp.set_row_bounds(sum_row, -kLpInf, shortfall * (1 + 1e-7) + 1e-9);
  for (int v = 0; v < a.lp.num_variables(); ++v) lp.set_objective(v, cost_obj[v]);
  const LpSolution s = detail::solve_again(lp, opt, name + "/2");
  Allocation out = solved(a, s, name);
  out.objective = cost_per_hour(p, out, opt.price);
  out.objective_name = "cost_usd_per_hour";
  if (shortfall > 1e-6)
    out.note = "SLOs cannot all be met on this cluster; met as closely as possible (least total relative shortfall)";
  out.lp_solves = 2;
  return out;
}

// Makespan under a budget B (thesis §6.1): min M s.t. throughput(m,X) >= steps_m/M and M·cost_rate(X) <= B.
// With y = 3600/M (1/h) both constraints are linear — throughput(m,X) >= steps_m·y/3600 and cost_rate(X) $/h <=
// B·y — so the smallest M is one LP (max y), not a binary search (issue 39: the search's infeasible attempts
// stalled CLP's dual simplex and each fell back to a cold solve; 49 CPU-s per 2,048-job simulation). Then, at
// y >= (1 − 1e-7)·y*, the cheapest allocation: the same model re-solved by the primal simplex from its basis.
Allocation makespan_budget(const Problem& p, const PolicyOptions& opt) {
  const std::string name = "makespan-budget";
  require_steps(p, name);
  if (!(opt.budget_usd > 0)) throw core::InputError("policy makespan-budget: needs --budget USD (> 0)");
  // Cheapest possible total cost (every job on its cheapest-per-step type) bounds the budget from below.
  double min_cost = 0;
  for (const auto& j : p.jobs) {
    double best = kLpInf;
    for (int t = 0; t < p.num_types(); ++t)
      if (j.throughputs[t] > 0 && j.scale_factor <= p.types[t].count)
        best = std::min(best, detail::price_of(p.types[t], opt.price, name) / 3600.0 * j.scale_factor / j.throughputs[t]);
    min_cost += best * j.steps;
  }
  if (opt.budget_usd < min_cost * (1 - 1e-9))
    throw core::InputError(fmt::format("--budget: ${:.2f} is below the cheapest possible cost of these jobs, ${:.2f}",
                                       opt.budget_usd, min_cost));
  AllocLp a = detail::build_alloc_lp(p, opt);
  const int y = a.lp.add_variable(0.0, kLpInf, 1.0);
  Terms cost;
  std::vector<int> rows(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m)
    rows[m] = a.lp.add_constraint(detail::concat(a.tput[m], {{y, -p.jobs[m].steps / 3600.0}}), 0.0, kLpInf);
  for (std::size_t k = 0; k < a.shape.combos.size(); ++k)  // each combination's GPUs, paid once
    for (std::size_t c = 0; c < a.shape.columns.size(); ++c)
      if (a.var[k][c] >= 0)
        cost.push_back({a.var[k][c], detail::price_of(p.types[a.shape.columns[c].type], opt.price, name) / 3600.0 *
                                         a.shape.combos[k].scale_factor});
  cost = detail::scaled(cost, 3600.0);  // $/h keeps the row well scaled for CLP's absolute tolerances
  const int budget = a.lp.add_constraint(detail::concat(cost, {{y, -opt.budget_usd}}), -kLpInf, 0.0);
  const int pin = a.lp.add_constraint({{y, 1.0}}, -kLpInf, kLpInf);
  a.lp.set_maximize(true);
  if (opt.warm != nullptr)
    a.lp.set_variable_key(y, lp_key("y")), a.lp.set_row_key(budget, lp_key("budget")), a.lp.set_row_key(pin, lp_key("pin"));
  detail::key_job_rows(a, rows, 'S');
  IncrementalLp lp(a.lp);
  const LpSolution s1 = detail::solve_warm(lp, opt, name, /*save=*/true);
  if (!s1.ok()) throw std::runtime_error("sched: makespan-budget LP failed");
  const double ystar = s1.values[y];
  if (!(ystar > 0)) throw core::InputError("--budget: no makespan meets this budget");
  lp.set_row_bounds(pin, ystar * (1 - 1e-7), kLpInf);
  lp.set_objective(y, 0.0);
  std::vector<double> obj(a.lp.num_variables(), 0.0);
  for (const auto& [v, c] : cost) obj[v] += c;
  for (int v = 0; v < a.lp.num_variables(); ++v) lp.set_objective(v, -obj[v]);  // maximise −cost
  const LpSolution s2 = detail::solve_again(lp, opt, name + "/2");
  Allocation out = solved(a, s2.ok() ? s2 : s1, name);
  out.objective = 3600.0 / ystar;
  out.objective_name = "makespan_s";
  out.lp_solves = 2;
  return out;
}

// The agnostic makespan-budget meets the budget for the throughputs it sees (each job's mean over types), not for
// the real ones: on the real throughputs its allocation takes M = max_m steps_m / throughput_m(X) and spends
// M · cost-rate(X). When that exceeds the budget, say so (the note is printed as a warning).
void warn_if_over_budget(const Problem& real, const PolicyOptions& opt, Allocation& a) {
  const auto eff = effective_throughputs(real, a);
  double makespan_s = 0;
  for (int m = 0; m < real.num_jobs(); ++m)
    makespan_s = std::max(makespan_s, eff[m] > 0 ? real.jobs[m].steps / eff[m] : INFINITY);
  const double spend = makespan_s * cost_per_hour(real, a, opt.price) / 3600.0;
  if (!(spend > opt.budget_usd * (1 + 1e-9))) return;
  a.note += fmt::format("{}makespan-budget-agnostic: the budget holds for the throughputs the agnostic policy sees, "
                        "not the real ones: this allocation spends ${:.2f} of the ${:.2f} budget ({:+.1f}%)",
                        a.note.empty() ? "" : "; ", spend, opt.budget_usd, 100.0 * (spend / opt.budget_usd - 1));
}

}  // namespace

Policy parse_policy(const std::string& name, const std::string& flag) {
  std::string n = core::to_lower(name);
  Policy p;
  const std::string suffix = "-agnostic";
  if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) {
    p.agnostic = true;
    n.resize(n.size() - suffix.size());
  }
  if (n == "las") n = "max-min-fairness";
  for (const auto& e : kNames)
    if (n == e.name) {
      p.kind = e.kind;
      return p;
    }
  throw core::InputError(fmt::format("{}: unknown policy '{}' (valid: {})", flag, name, core::join(policy_names())));
}

std::string policy_name(const Policy& p) {
  for (const auto& e : kNames)
    if (e.kind == p.kind) return std::string(e.name) + (p.agnostic ? "-agnostic" : "");
  return "?";
}

std::vector<std::string> policy_names() {
  std::vector<std::string> out;
  for (const auto& e : kNames) out.emplace_back(e.name);
  for (const auto& e : kNames) out.push_back(std::string(e.name) + "-agnostic");
  return out;
}

namespace {
Allocation solve_policy(const Problem& p, PolicyKind kind, const PolicyOptions& opt);
}  // namespace

Allocation allocate(const Problem& real, const Policy& policy, const PolicyOptions& opt) {
  if (real.jobs.empty()) throw core::InputError("allocate: no jobs");
  const Problem seen = policy.agnostic ? agnostic_view(real) : real;
  if (!policy.agnostic) return solve_policy(seen, policy.kind, opt);
  Allocation a = spread_over_types(seen, opt, solve_policy(seen, policy.kind, opt));
  if (policy.kind == PolicyKind::kMakespanBudget) warn_if_over_budget(real, opt, a);
  return a;
}

namespace {
Allocation solve_policy(const Problem& p, PolicyKind kind, const PolicyOptions& opt) {
  switch (kind) {
    case PolicyKind::kMaxMinFairness: return detail::max_min_fairness(p, opt);
    case PolicyKind::kHierarchical: return detail::hierarchical(p, opt);
    case PolicyKind::kFinishTimeFairness: return finish_time_fairness(p, opt);
    case PolicyKind::kMakespan: return makespan(p, opt);
    case PolicyKind::kFifo: return fifo(p, opt);
    case PolicyKind::kSjf: return sjf(p, opt);
    case PolicyKind::kMaxThroughput: return max_throughput(p, opt);
    case PolicyKind::kMinCost: return min_cost(p, opt, false);
    case PolicyKind::kMinCostSlo: return min_cost(p, opt, true);
    case PolicyKind::kMakespanBudget: return makespan_budget(p, opt);
  }
  throw std::logic_error("sched: unknown policy kind");
}
}  // namespace

}  // namespace strata::sched
