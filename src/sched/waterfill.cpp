// sched/waterfill: water-filling for weighted max-min fairness and hierarchical (multi-entity) fairness.
//
// Utility of job m: u_m(X) = sf_m · throughput(m,X) / reference_throughput(m)  (thesis Table 5.1, LAS row; the
// reference per PolicyOptions::normalization: Gavel's proportional share by default).
// Iteration (thesis §5.3, hierarchical policies):
//   1. LP:   max t  s.t. u_m(X) >= u_prev_m + w_m·t  for jobs with weight w_m > 0,
//                        u_m(X) >= u_prev_m          for all jobs (nobody loses what it had).
//   2. LP:   max Σ_{m: w_m>0} z_m, 0 <= z_m <= 1, s.t. u_m(X) >= u*_m for all m,
//                        u_m(X) >= u*_m + ε_m·z_m for jobs with w_m > 0 (the thesis' MILP has z_m binary; its
//                        relaxation gives the same answer here, see Bottlenecks).
//      Jobs with z_m = 0 cannot improve without hurting someone: they are bottlenecked.
//   3. Bottlenecked jobs get weight 0; their entity's weight is redistributed (fairness: equally over the entity's
//      remaining jobs; FIFO: to its next job).  Repeat until every job is bottlenecked.
// With every job its own entity this is single-level weighted max-min fairness with water-filling (Pareto
// efficient); with water_filling = false only the first LP is solved (Gavel's plain LAS).
#include "waterfill.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>

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

// Step 2: which of the weighted jobs can still improve? The MILP's LP relaxation (issue 39: a CBC branch-and-bound
// per water-filling iteration made hierarchical the slowest policy in simulations): z_m ∈ [0, 1] continuous,
// u_m − ε_m·z_m >= u*_m. The improvable jobs can all improve at once (the average of the allocations that improve
// each one improves all of them), so where each can gain its ε_m together — ε_m is 1e-4 of u*_m — the
// relaxation's optimum is z = 1 on exactly those jobs, the MILP's answer; a job with z_m <= 0.5 is bottlenecked,
// as the MILP's z_m = 0. One CLP model, re-bounded per iteration and re-solved from its last basis.
class Bottlenecks {
 public:
  Bottlenecks(const Problem& p, const PolicyOptions& opt, const std::vector<double>& coef)
      : opt_(opt), a_(build_alloc_lp(p, opt)) {
    const int n = p.num_jobs();
    z_.resize(n);
    row_.resize(n);
    for (int m = 0; m < n; ++m) {
      z_[m] = a_.lp.add_variable(0.0, 1.0, 0.0);
      // −1 is a placeholder: the coefficient is set per iteration (a zero would drop the matrix element).
      row_[m] = a_.lp.add_constraint(concat(scaled(a_.tput[m], coef[m]), {{z_[m], -1.0}}), 0.0, kLpInf);
      if (opt.warm != nullptr) a_.lp.set_variable_key(z_[m], lp_key(a_.job_key[m], 'z'));
    }
    key_job_rows(a_, row_, 'Z');
    a_.lp.set_maximize(true);
    lp_ = std::make_unique<IncrementalLp>(a_.lp);
  }

  // z per job (1 = can still improve) given the utilities u* of this level and the weights w.
  std::vector<int> improvable(const std::vector<double>& u_star, const std::vector<double>& w) {
    const int n = static_cast<int>(z_.size());
    for (int m = 0; m < n; ++m) {
      const bool weighted = w[m] > 0;
      lp_->set_coefficient(row_[m], z_[m], weighted ? -std::max(1e-7, 1e-4 * u_star[m]) : 0.0);
      lp_->set_objective(z_[m], weighted ? 1.0 : 0.0);
      lp_->set_row_bounds(row_[m], weighted ? u_star[m] : keep_bound(u_star[m]), kLpInf);
    }
    // The first test of a re-solve starts from the last re-solve's final basis (simulator), later ones from this
    // model's own.
    const LpSolution s = solved_ ? lp_->solve() : solve_warm(*lp_, opt_, "bottleneck", /*save=*/false);
    solved_ = true;
    std::vector<int> out(n, 0);
    if (!s.ok()) return out;  // numerically stuck: treat everyone as bottlenecked
    for (int m = 0; m < n; ++m) out[m] = w[m] > 0 && s.values[z_[m]] > 0.5 ? 1 : 0;
    return out;
  }

  // Keeps the final basis for the next re-solve's first test (simulator).
  void save() const {
    if (opt_.warm != nullptr && solved_) opt_.warm->slots["bottleneck"] = lp_->basis();
  }

 private:
  const PolicyOptions& opt_;
  AllocLp a_;
  std::vector<int> z_, row_;
  bool solved_ = false;
  std::unique_ptr<IncrementalLp> lp_;
};

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
  if (opt.warm != nullptr) a.lp.set_variable_key(t, lp_key("t"));
  key_job_rows(a, row, 'U');
  IncrementalLp lp(a.lp);
  std::unique_ptr<Bottlenecks> bottlenecks;  // step 2's model, built on the first iteration that needs it
  for (; iters <= n; ++iters) {
    const std::vector<double> w = rule(done);
    if (std::none_of(w.begin(), w.end(), [](double x) { return x > 0; })) break;
    for (int m = 0; m < n; ++m) {
      lp.set_coefficient(row[m], t, -w[m]);
      lp.set_row_bounds(row[m], keep_bound(u_prev[m]), kLpInf);
    }
    // The first level starts from the previous re-solve's basis (simulator); later levels from this one's.
    const LpSolution s = iters == 0 ? solve_warm(lp, opt, name, /*save=*/true) : lp.solve();
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
    if (!bottlenecks) bottlenecks = std::make_unique<Bottlenecks>(p, opt, coef);
    const auto z = bottlenecks->improvable(u_star, w);
    ++solves;
    bool any = false;
    for (int m = 0; m < n; ++m)
      if (w[m] > 0 && z[m] == 0) done[m] = true, any = true;
    if (!any)  // step 2 says all can improve, yet t was maximal: round-off; stop these jobs
      for (int m = 0; m < n; ++m)
        if (w[m] > 0) done[m] = true;
    u_prev = u_star;
  }
  if (bottlenecks) bottlenecks->save();
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
