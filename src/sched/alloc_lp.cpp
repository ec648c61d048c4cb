// sched/alloc_lp: the shared allocation LP (thesis eqs. 5.1–5.3 plus space sharing and placement sensitivity)
// and the evaluation of an allocation (effective/normalised throughput, cost rate).
#include "alloc_lp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "strata/core/error.hpp"

namespace strata::sched {
namespace detail {

Allocation allocation_shape(const Problem& p, const PolicyOptions& opt) {
  Allocation a;
  for (int m = 0; m < p.num_jobs(); ++m) a.combos.push_back(Combo{{m}, p.jobs[m].scale_factor, -1});
  if (opt.space_sharing)
    for (int i = 0; i < static_cast<int>(p.pairs.size()); ++i)
      a.combos.push_back(Combo{{p.pairs[i].a, p.pairs[i].b}, p.jobs[p.pairs[i].a].scale_factor, i});
  for (int t = 0; t < p.num_types(); ++t) {
    a.columns.push_back(Column{t, true});
    if (opt.placement_sensitive) a.columns.push_back(Column{t, false});
  }
  return a;
}

AllocLp build_alloc_lp(const Problem& p, const PolicyOptions& opt) {
  AllocLp a;
  a.shape = allocation_shape(p, opt);
  const auto& combos = a.shape.combos;
  const auto& cols = a.shape.columns;
  a.var.assign(combos.size(), std::vector<int>(cols.size(), -1));
  a.tput.assign(p.num_jobs(), {});
  std::vector<Terms> per_job(p.num_jobs()), per_type(p.num_types());
  for (std::size_t k = 0; k < combos.size(); ++k) {
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const WorkerType& wt = p.types[cols[c].type];
      if (combos[k].scale_factor > wt.count) continue;
      // A consolidated column is meaningless for a job larger than a server (placement-sensitive mode only).
      if (opt.placement_sensitive && cols[c].consolidated && combos[k].scale_factor > wt.per_server) continue;
      bool any = false;
      for (int m : combos[k].jobs) any = any || combo_throughput(p, combos[k], cols[c], m) > 0;
      if (!any) continue;
      const int v = a.lp.add_variable(0.0, 1.0);
      a.var[k][c] = v;
      for (int m : combos[k].jobs) {
        per_job[m].push_back({v, 1.0});
        const double tp = combo_throughput(p, combos[k], cols[c], m);
        if (tp > 0) a.tput[m].push_back({v, tp});
      }
      per_type[cols[c].type].push_back({v, static_cast<double>(combos[k].scale_factor)});
    }
  }
  for (const auto& t : per_job) a.lp.add_constraint(t, -kLpInf, 1.0);                       // eq. 5.2
  for (int j = 0; j < p.num_types(); ++j) a.lp.add_constraint(per_type[j], -kLpInf, p.types[j].count);  // eq. 5.3
  return a;
}

Allocation read_allocation(const AllocLp& a, const LpSolution& s) {
  Allocation out = a.shape;
  out.x.assign(out.combos.size(), std::vector<double>(out.columns.size(), 0.0));
  for (std::size_t k = 0; k < out.combos.size(); ++k)
    for (std::size_t c = 0; c < out.columns.size(); ++c)
      if (a.var[k][c] >= 0) {
        const double v = s.values[a.var[k][c]];
        // Rounded to 1e-9: hides solver round-off (0.999999998 → 1) so output is stable and readable.
        out.x[k][c] = std::clamp(std::round(v * 1e9) / 1e9, 0.0, 1.0);
      }
  return out;
}

Terms scaled(const Terms& t, double f) {
  Terms out = t;
  for (auto& e : out) e.second *= f;
  return out;
}

Terms concat(Terms t, const Terms& extra) {
  t.insert(t.end(), extra.begin(), extra.end());
  return t;
}

double price_of(const WorkerType& t, PriceKind price, const std::string& policy) {
  const double v = price == PriceKind::kSpot ? t.price_spot : t.price_on_demand;
  if (v <= 0)
    throw core::InputError(fmt::format("policy {}: GPU type '{}' has no prices.{} (add \"prices\": {{\"{}\": "
                                       "{{\"on_demand\": ..., \"spot\": ...}}}} in $ per GPU-hour)",
                                       policy, t.name, price == PriceKind::kSpot ? "spot" : "on_demand", t.name));
  return v;
}

Terms cost_terms(const Problem& p, const AllocLp& a, int job, PriceKind price, const std::string& policy) {
  Terms out;
  const auto& combos = a.shape.combos;
  for (std::size_t k = 0; k < combos.size(); ++k) {
    if (std::find(combos[k].jobs.begin(), combos[k].jobs.end(), job) == combos[k].jobs.end()) continue;
    // A pair's GPUs are paid once: split the cost between its two jobs.
    const double share = 1.0 / static_cast<double>(combos[k].jobs.size());
    for (std::size_t c = 0; c < a.shape.columns.size(); ++c) {
      if (a.var[k][c] < 0) continue;
      const double usd_per_s = price_of(p.types[a.shape.columns[c].type], price, policy) / 3600.0;
      out.push_back({a.var[k][c], usd_per_s * combos[k].scale_factor * share});
    }
  }
  return out;
}

LpSolution secondary_max_normalized(const Problem& p, AllocLp& a, int primary_var, double primary_value,
                                    bool primary_is_lower_bound, Normalization normalization) {
  constexpr double kSlack = 1e-7;
  const double slack = kSlack * std::abs(primary_value) + 1e-15;
  if (primary_is_lower_bound) a.lp.add_constraint({{primary_var, 1.0}}, primary_value - slack, kLpInf);
  else a.lp.add_constraint({{primary_var, 1.0}}, -kLpInf, primary_value + slack);
  for (int v = 0; v < a.lp.num_variables(); ++v) a.lp.set_objective(v, 0.0);
  for (int m = 0; m < p.num_jobs(); ++m) {
    const double eq = reference_throughput(p, p.jobs[m], normalization);
    for (const auto& [v, c] : a.tput[m]) a.lp.set_objective(v, a.lp.objective_coefficient(v) + c / eq);
  }
  a.lp.set_maximize(true);
  return a.lp.solve();
}

}  // namespace detail

double combo_throughput(const Problem& p, const Combo& k, const Column& c, int job) {
  const JobSpec& j = p.jobs[job];
  const double cons = j.throughputs[c.type];
  const double uncons = j.unconsolidated.empty() ? cons : j.unconsolidated[c.type];
  const bool spread = !c.consolidated || k.scale_factor > p.types[c.type].per_server;
  if (k.pair >= 0) {
    // "pairs" gives consolidated throughputs; a pair spread over servers slows down as each job does alone
    // (its unconsolidated / consolidated ratio). Before, spread pairs ran at 0 in the simulator while the LP
    // (one column per type) counted them at full speed: k-GPU pairs larger than a server never progressed.
    const PairSpec& ps = p.pairs[k.pair];
    const double together = ps.throughputs[c.type][job == ps.a ? 0 : 1];
    if (!spread) return together;
    return cons > 0 ? together * uncons / cons : 0.0;
  }
  return spread ? uncons : cons;
}

std::vector<std::vector<double>> job_type_fractions(const Problem& p, const Allocation& a) {
  std::vector<std::vector<double>> out(p.num_jobs(), std::vector<double>(p.num_types(), 0.0));
  for (std::size_t k = 0; k < a.combos.size(); ++k)
    for (std::size_t c = 0; c < a.columns.size(); ++c)
      for (int m : a.combos[k].jobs) out[m][a.columns[c].type] += a.x[k][c];
  return out;
}

std::vector<double> effective_throughputs(const Problem& p, const Allocation& a) {
  std::vector<double> out(p.num_jobs(), 0.0);
  for (std::size_t k = 0; k < a.combos.size(); ++k)
    for (std::size_t c = 0; c < a.columns.size(); ++c)
      if (a.x[k][c] > 0)
        for (int m : a.combos[k].jobs) out[m] += a.x[k][c] * combo_throughput(p, a.combos[k], a.columns[c], m);
  return out;
}

std::vector<double> normalized_throughputs(const Problem& p, const Allocation& a, Normalization n) {
  auto out = effective_throughputs(p, a);
  for (int m = 0; m < p.num_jobs(); ++m) out[m] /= reference_throughput(p, p.jobs[m], n);
  return out;
}

double cost_per_hour(const Problem& p, const Allocation& a, PriceKind price) {
  double usd = 0;
  for (std::size_t k = 0; k < a.combos.size(); ++k)
    for (std::size_t c = 0; c < a.columns.size(); ++c) {
      const WorkerType& t = p.types[a.columns[c].type];
      const double pr = price == PriceKind::kSpot ? t.price_spot : t.price_on_demand;
      if (pr > 0) usd += a.x[k][c] * a.combos[k].scale_factor * pr;
    }
  return usd;
}

}  // namespace strata::sched
