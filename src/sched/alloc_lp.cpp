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
  if (opt.warm != nullptr)
    for (const auto& j : p.jobs) a.job_key.push_back(lp_key(j.name));
  auto combo_key = [&](const Combo& k) {
    LpKey key = a.job_key[k.jobs[0]];
    for (std::size_t i = 1; i < k.jobs.size(); ++i) key = lp_key(key, a.job_key[k.jobs[i]]);
    return key;
  };
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
      if (opt.warm != nullptr) a.lp.set_variable_key(v, lp_key(combo_key(combos[k]), 2 * cols[c].type + (cols[c].consolidated ? 0 : 1)));
      for (int m : combos[k].jobs) {
        per_job[m].push_back({v, 1.0});
        const double tp = combo_throughput(p, combos[k], cols[c], m);
        if (tp > 0) a.tput[m].push_back({v, tp});
      }
      per_type[cols[c].type].push_back({v, static_cast<double>(combos[k].scale_factor)});
    }
  }
  for (int m = 0; m < p.num_jobs(); ++m) {
    const int r = a.lp.add_constraint(per_job[m], -kLpInf, 1.0);  // eq. 5.2
    if (opt.warm != nullptr) a.lp.set_row_key(r, lp_key(a.job_key[m], 'J'));
  }
  for (int j = 0; j < p.num_types(); ++j) {
    const int r = a.lp.add_constraint(per_type[j], -kLpInf, p.types[j].count);  // eq. 5.3
    if (opt.warm != nullptr) a.lp.set_row_key(r, lp_key(lp_key(p.types[j].name), 'W'));
  }
  return a;
}

void key_job_rows(AllocLp& a, const std::vector<int>& rows, char tag) {
  for (std::size_t m = 0; m < a.job_key.size(); ++m) a.lp.set_row_key(rows[m], lp_key(a.job_key[m], tag));
}

LpSolution solve_warm(IncrementalLp& lp, const PolicyOptions& opt, const std::string& slot, bool save) {
  if (opt.warm != nullptr) {
    auto it = opt.warm->slots.find(slot);
    if (it != opt.warm->slots.end()) lp.start_from(it->second);
  }
  LpSolution s = lp.solve();
  if (opt.warm != nullptr && save && s.ok()) opt.warm->slots[slot] = lp.basis();
  return s;
}

LpSolution solve_again(IncrementalLp& lp, const PolicyOptions& opt, const std::string& slot) {
  auto it = opt.warm != nullptr ? opt.warm->slots.find(slot) : std::map<std::string, LpBasis>::iterator{};
  const bool warm = opt.warm != nullptr && it != opt.warm->slots.end();
  if (warm) lp.start_from(it->second);
  LpSolution s = lp.solve(/*primal=*/!warm);
  if (opt.warm != nullptr && s.ok()) opt.warm->slots[slot] = lp.basis();
  return s;
}

LpSolution solve_once(const LinearProgram& program, const PolicyOptions& opt, const std::string& slot) {
  if (opt.warm == nullptr) return program.solve();
  IncrementalLp lp(program);
  return solve_warm(lp, opt, slot, true);
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
