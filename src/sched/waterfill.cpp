// sched/waterfill: water-filling for weighted max-min fairness and hierarchical (multi-entity) fairness.
//
// Utility of job m: u_m(X) = sf_m · throughput(m,X) / reference_throughput(m)  (thesis Table 5.1, LAS row; the
// reference per PolicyOptions::normalization: Gavel's proportional share by default).
// Iteration (thesis §5.3, hierarchical policies):
//   1. LP:   max t  s.t. u_m(X) >= u_prev_m + w_m·t  for jobs with weight w_m > 0,
//                        u_m(X) >= u_prev_m          for all jobs (nobody loses what it had).
//   2. MILP: max Σ_{m: w_m>0} z_m, z_m binary,  s.t. u_m(X) >= u*_m for all m,
//                        u_m(X) >= u*_m + ε_m·z_m for jobs with w_m > 0.
//      Jobs with z_m = 0 cannot improve without hurting someone: they are bottlenecked.
//   3. Bottlenecked jobs get weight 0; their entity's weight is redistributed (fairness: equally over the entity's
//      remaining jobs; FIFO: to its next job).  Repeat until every job is bottlenecked.
// With every job its own entity this is single-level weighted max-min fairness with water-filling (Pareto
// efficient); with water_filling = false only the first LP is solved (Gavel's plain LAS).
#include "waterfill.hpp"

#include <algorithm>
#include <functional>
#include <map>

#include "alloc_lp.hpp"

namespace strata::sched::detail {
namespace {

using WeightRule = std::function<std::vector<double>(const std::vector<bool>& done)>;

constexpr double kKeepSlack = 1e-9;  // relative slack on "nobody loses" rows, against LP round-off

std::vector<double> utility_coefficients(const Problem& p, Normalization n) {
  std::vector<double> c(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m) c[m] = p.jobs[m].scale_factor / reference_throughput(p, p.jobs[m], n);
  return c;
}

std::vector<double> utilities(const AllocLp& a, const LpSolution& s, const std::vector<double>& coef) {
  std::vector<double> u(coef.size(), 0.0);
  for (std::size_t m = 0; m < coef.size(); ++m)
    for (const auto& [v, c] : a.tput[m]) u[m] += coef[m] * c * s.values[v];
  return u;
}

double keep_bound(double u) { return u - kKeepSlack * std::max(1.0, std::abs(u)); }

// Step 2: which of the weighted jobs can still improve together? Returns z (1 = can improve).
std::vector<int> improvable(const Problem& p, const PolicyOptions& opt, const std::vector<double>& coef,
                            const std::vector<double>& u_star, const std::vector<double>& w) {
  AllocLp a = build_alloc_lp(p, opt);
  std::vector<int> z(p.num_jobs(), -1);
  for (int m = 0; m < p.num_jobs(); ++m) {
    const Terms u = scaled(a.tput[m], coef[m]);
    a.lp.add_constraint(u, keep_bound(u_star[m]), kLpInf);
    if (w[m] <= 0) continue;
    z[m] = a.lp.add_variable(0.0, 1.0, 1.0, /*integer=*/true);
    const double eps = std::max(1e-7, 1e-4 * u_star[m]);
    a.lp.add_constraint(concat(u, {{z[m], -eps}}), u_star[m], kLpInf);
  }
  a.lp.set_maximize(true);
  const LpSolution s = a.lp.solve();
  std::vector<int> out(p.num_jobs(), 0);
  if (!s.ok()) return out;  // numerically stuck: treat everyone as bottlenecked
  for (int m = 0; m < p.num_jobs(); ++m)
    if (z[m] >= 0) out[m] = s.values[z[m]] > 0.5 ? 1 : 0;
  return out;
}

Allocation water_fill(const Problem& p, const PolicyOptions& opt, const WeightRule& rule, bool iterate,
                      const std::string& name) {
  const auto coef = utility_coefficients(p, opt.normalization);
  const int n = p.num_jobs();
  std::vector<double> u_prev(n, 0.0);
  std::vector<bool> done(n, false);
  Allocation best;
  int solves = 0, iters = 0;
  double first_level = 0;
  // Step 1's LP is built once (rows u_m − w_m·t >= u_prev_m); each iteration changes the weights (t's
  // coefficients) and the floors (row bounds) and re-solves from the last basis (incremental re-solves).
  AllocLp a = build_alloc_lp(p, opt);
  const int t = a.lp.add_variable(0.0, kLpInf, 1.0);
  std::vector<int> row(n);
  for (int m = 0; m < n; ++m) row[m] = a.lp.add_constraint(concat(scaled(a.tput[m], coef[m]), {{t, -1.0}}), 0.0, kLpInf);
  a.lp.set_maximize(true);
  IncrementalLp lp(a.lp);
  for (; iters <= n; ++iters) {
    const std::vector<double> w = rule(done);
    if (std::none_of(w.begin(), w.end(), [](double x) { return x > 0; })) break;
    for (int m = 0; m < n; ++m) {
      lp.set_coefficient(row[m], t, -w[m]);
      lp.set_row_bounds(row[m], keep_bound(u_prev[m]), kLpInf);
    }
    const LpSolution s = lp.solve();
    ++solves;
    if (!s.ok()) {
      if (iters == 0) throw std::runtime_error("sched: " + name + " LP did not solve");
      break;  // keep the previous iteration's allocation
    }
    best = read_allocation(a, s);
    if (iters == 0) first_level = s.values[t];
    const auto u_star = utilities(a, s, coef);
    if (!iterate) {
      ++iters;
      break;
    }
    const auto z = improvable(p, opt, coef, u_star, w);
    ++solves;
    bool any = false;
    for (int m = 0; m < n; ++m)
      if (w[m] > 0 && z[m] == 0) done[m] = true, any = true;
    if (!any)  // the MILP says all can improve, yet t was maximal: round-off; stop these jobs
      for (int m = 0; m < n; ++m)
        if (w[m] > 0) done[m] = true;
    u_prev = u_star;
  }
  best.objective = first_level;
  best.objective_name = "max_min_weighted_utility";
  best.lp_solves = solves;
  best.iterations = iters;
  return best;
}

}  // namespace

Allocation max_min_fairness(const Problem& p, const PolicyOptions& opt) {
  const WeightRule rule = [&](const std::vector<bool>& done) {
    std::vector<double> w(p.num_jobs(), 0.0);
    for (int m = 0; m < p.num_jobs(); ++m) w[m] = done[m] ? 0.0 : p.jobs[m].weight;
    return w;
  };
  return water_fill(p, opt, rule, opt.water_filling, "max-min-fairness");
}

// Entities: jobs name theirs; a job without one is its own entity of weight = its weight, fairness inside.
Allocation hierarchical(const Problem& p, const PolicyOptions& opt) {
  struct Group {
    double weight;
    EntityPolicy policy;
    std::vector<int> jobs;  // arrival order (stable by input order)
  };
  std::vector<Group> groups;
  std::map<std::string, int> index;
  for (const auto& e : p.entities) {
    index[e.name] = static_cast<int>(groups.size());
    groups.push_back(Group{e.weight, e.policy, {}});
  }
  std::vector<int> order(p.num_jobs());
  for (int m = 0; m < p.num_jobs(); ++m) order[m] = m;
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return p.jobs[x].arrival_s < p.jobs[y].arrival_s; });
  for (int m : order) {
    const auto& e = p.jobs[m].entity;
    if (e.empty()) groups.push_back(Group{p.jobs[m].weight, EntityPolicy::kFairness, {m}});
    else groups[index.at(e)].jobs.push_back(m);
  }
  const WeightRule rule = [&](const std::vector<bool>& done) {
    std::vector<double> w(p.num_jobs(), 0.0);
    for (const auto& g : groups) {
      std::vector<int> live;
      for (int m : g.jobs)
        if (!done[m]) live.push_back(m);
      if (live.empty()) continue;
      if (g.policy == EntityPolicy::kFifo) w[live.front()] = g.weight;
      else
        for (int m : live) w[m] = g.weight / static_cast<double>(live.size());
    }
    return w;
  };
  return water_fill(p, opt, rule, /*iterate=*/true, "hierarchical");
}

}  // namespace strata::sched::detail
