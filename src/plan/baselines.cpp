// plan/baselines: the built-in comparison points — megatron (AMP §4.1: for each micro-batch size, the smallest
// tp·pp that fits with tp ≤ GPUs per node, uniform layers, Megatron placement, no ZeRO / recompute), uniform (the
// best plan with Megatron's uniform split), dp-only and zero3-only (tp = pp = 1) — and the --placement anneal
// refinement of the top candidates.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "search_internal.hpp"
#include "unit_memo.hpp"
#include "strata/core/text.hpp"

namespace strata::plan::detail {
namespace {

// Light (no placement: estimate_on_unit costs it on its Megatron unit, complete_light fills the chosen one) unless on the
// per-device reference path.
bool light_baselines(const hw::Cluster& c, const PlanOptions& opt) { return opt.symmetry && light_estimates(c); }

cost::Strategy base_strategy(const hw::Cluster& c, const cost::Dims& d, std::int64_t mbs, const PlanOptions& opt) {
  cost::Strategy s;
  static_cast<cost::Dims&>(s) = d;
  s.micro_batch = mbs;
  s.global_batch = opt.global_batch;
  s.dtype = opt.dtype;
  s.eager_elementwise = opt.eager_elementwise;
  s.fp8_separate_casts = opt.fp8_separate_casts;
  s.optim = opt.optim;
  s.grads = opt.grads;
  s.fp32_loss = opt.fp32_loss;
  s.attention = opt.attention;
  if (!light_baselines(c, opt)) s.placement = megatron_placement(c);
  return s;
}

bool better_time(const cost::Estimate& a, const cost::Estimate& b) { return a.iteration_time_s < b.iteration_time_s; }

// The baselines' Megatron-placement units by (tp, pp): their stage contexts built once (twin stages shared) and
// handed to every estimate of that shape (bit-identical to building them per estimate; docs/planner.md §Scale).
// The search's own unit of that shape on the identity placement is taken when it has one (no O(devices) rebuild).
struct UnitCache {
  const Space_& search;
  std::map<std::pair<int, int>, DegreeUnit> units;
  std::map<const std::vector<int>*, bool> identity;  // the search's placements checked to be the identity
};
// The search's cp = 1 unit (dp, tp, pp) on the identity placement, if any.
const DegreeUnit* search_unit(UnitCache& cache, const cost::Dims& d) {
  for (const auto& u : cache.search.units) {
    if (u.dp != d.dp || u.tp != d.tp || u.pp != d.pp || u.proto.cp != d.cp || u.placement_label != "megatron") continue;
    auto [it, fresh] = cache.identity.emplace(u.placement.get(), false);
    if (fresh) {
      bool id = true;
      for (std::size_t i = 0; i < u.placement->size() && id; ++i) id = (*u.placement)[i] == static_cast<int>(i);
      it->second = id;
    }
    if (it->second) return &u;
  }
  return nullptr;
}
// The estimate of a baseline strategy; when it does not fit, only `fits` (false) is meaningful.
cost::Estimate estimate_on_unit(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                const PlanOptions& opt, UnitCache& cache) {
  if (!opt.symmetry) return cost::estimate(m, c, s, opt.cost);
  auto& units = cache.units;
  auto it = units.find({s.tp, s.pp});
  if (it == units.end() && s.cp == 1)
    if (const DegreeUnit* u = search_unit(cache, s)) it = units.emplace(std::make_pair(s.tp, s.pp), *u).first;
  if (it == units.end()) {
    it = units.emplace(std::make_pair(s.tp, s.pp), make_degree_unit(m, c, s, megatron_placement(c), "megatron",
                                                                    s.global_batch, s.dtype, opt.cost)).first;
    it->second.peak_flops_sum = hw::total_peak_flops(c, s.dtype);
    it->second.proto.eager_elementwise = s.eager_elementwise;
    it->second.proto.fp8_separate_casts = s.fp8_separate_casts;
    it->second.proto.optim = s.optim;
    it->second.proto.grads = s.grads;
    it->second.proto.fp32_loss = s.fp32_loss;
    it->second.proto.attention = s.attention;
    it->second.proto.recompute_early_stop = opt.recompute_early_stop;
  }
  const cost::PrebuiltStages pre = unit_prebuilt(c, it->second, s, opt.cost, {}, {}, s.placement.empty());
  cost::CostOptions with = opt.cost;
  // Memory first: the baselines drop a strategy that does not fit (they read only `fits` of it), and the memory
  // verdict does not read the p2p times, so such a strategy is not given its cut times (an O(devices) scan per
  // message size); a fitting one is estimated in full.
  cost::PrebuiltStages probe = pre;
  probe.cut_time_s = [](int, double) { return 0.0; };
  with.prebuilt = &probe;
  if (cost::Estimate e = cost::estimate(m, c, s, with); !e.fits) return e;
  with.prebuilt = &pre;
  return cost::estimate(m, c, s, with);
}

Baseline megatron_baseline(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt, const Space_& sp,
                           PlanResult& res) {
  Baseline b{"megatron", false, {}, {}, ""};
  const int n = c.num_devices(), L = static_cast<int>(m.layers.size());
  int gpn = n;
  for (const auto& node : c.nodes) gpn = std::min(gpn, node.num_devices);
  // (tp·pp, tp, pp) in increasing model-parallel size.
  std::vector<std::tuple<int, int, int>> combos;
  for (int tp : device_divisors(n)) {
    if (tp > gpn || !tp_rule_violation(m, tp).empty()) continue;
    for (int pp : device_divisors(n / tp))
      if (pp <= L && opt.global_batch % (n / (tp * pp)) == 0) combos.emplace_back(tp * pp, tp, pp);
  }
  std::sort(combos.begin(), combos.end());
  std::vector<std::int64_t> mbss;
  const std::vector<std::int64_t> gbs_divisors = divisors(opt.global_batch);
  for (const auto& [prod, tp, pp] : combos)
    for (std::int64_t mbs : divisors_of_quotient(gbs_divisors, opt.global_batch, n / prod,
                                                 max_useful_micro_batch(m, c, tp, opt.dtype)))
      mbss.push_back(mbs);
  std::sort(mbss.begin(), mbss.end());
  mbss.erase(std::unique(mbss.begin(), mbss.end()), mbss.end());
  UnitCache units{sp, {}, {}};
  for (std::int64_t mbs : mbss) {
    int fitting_product = 0;
    for (const auto& [prod, tp, pp] : combos) {
      if (fitting_product && prod > fitting_product) break;
      const int dp = n / prod;
      if (opt.global_batch % (static_cast<std::int64_t>(dp) * mbs) != 0) continue;
      cost::Strategy s = base_strategy(c, cost::Dims{.dp = dp, .tp = tp, .pp = pp}, mbs, opt);
      s.split = cost::default_split(m, pp);
      cost::Estimate e = estimate_on_unit(m, c, s, opt, units);
      ++res.evaluated;
      if (!e.fits) continue;
      fitting_product = prod;
      if (!b.found || better_time(e, b.estimate)) {
        b.found = true;
        b.strategy = s;
        b.estimate = std::move(e);
      }
    }
  }
  b.note = b.found ? fmt::format("smallest tp·pp = {} that fits with tp <= {} (GPUs per node), uniform layers, "
                                 "Megatron placement, best over micro-batch sizes",
                                 b.strategy.tp * b.strategy.pp, gpn)
                   : "no tp·pp with tp <= GPUs per node fits without ZeRO/recompute";
  if (b.found) complete_light(megatron_placement(c), b.strategy, b.estimate);
  return b;
}

Baseline data_parallel_baseline(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt, const Space_& sp,
                                int zero, PlanResult& res) {
  Baseline b{zero == 3 ? "zero3-only" : "dp-only", false, {}, {}, ""};
  const int n = c.num_devices();
  if (opt.global_batch % n != 0) {
    b.note = fmt::format("gbs {} is not divisible by {} devices", opt.global_batch, n);
    return b;
  }
  std::vector<model::Recompute> rcs{model::Recompute::none};
  if (opt.space != Space::three_d) rcs = {model::Recompute::none, model::Recompute::selective, model::Recompute::full};
  UnitCache units{sp, {}, {}};
  for (std::int64_t mbs : divisors_of_quotient(divisors(opt.global_batch), opt.global_batch, n,
                                               max_useful_micro_batch(m, c, 1, opt.dtype)))
    for (auto rc : rcs) {
      cost::Strategy s = base_strategy(c, cost::Dims{.dp = n}, mbs, opt);
      s.zero_stage = n > 1 ? zero : 0;
      s.recompute = rc;
      s.recompute_early_stop = opt.recompute_early_stop && rc == model::Recompute::full;
      s.split = cost::default_split(m, 1);
      cost::Estimate e = estimate_on_unit(m, c, s, opt, units);
      ++res.evaluated;
      if (e.fits && (!b.found || better_time(e, b.estimate))) {
        b.found = true;
        b.strategy = s;
        b.estimate = std::move(e);
      }
    }
  b.note = b.found ? fmt::format("dp = {}, ZeRO {}, best micro-batch size and recompute", n, zero)
                   : "the whole model does not fit one GPU" + std::string(zero == 3 ? " even sharded" : "");
  if (b.found) complete_light(megatron_placement(c), b.strategy, b.estimate);
  return b;
}

}  // namespace

std::vector<Baseline> compute_baselines(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                                        const Space_& sp, const LayerIndex& /*li*/, PlanResult& res) {
  std::vector<Baseline> out;
  out.push_back(megatron_baseline(m, c, opt, sp, res));
  {
    Baseline u{"uniform", false, {}, {}, ""};
    if (!res.top.empty()) {
      cost::Strategy s = res.top.front().strategy;
      s.split = cost::default_split(m, s.pp * s.virtual_stages);
      cost::Estimate e = cost::estimate(m, c, s, opt.cost);
      ++res.evaluated;
      u.found = e.fits;
      u.strategy = s;
      u.note = e.fits ? "the best plan with Megatron's uniform layer split"
                      : "the best plan with a uniform layer split does not fit: " + e.not_fit_reason;
      u.estimate = std::move(e);
    }
    out.push_back(std::move(u));
  }
  out.push_back(data_parallel_baseline(m, c, opt, sp, 0, res));
  out.push_back(data_parallel_baseline(m, c, opt, sp, 3, res));
  return out;
}

void anneal_top(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt, std::vector<Candidate>& top,
                PlanResult& res) {
  const std::size_t n = std::min<std::size_t>(top.size(), 3);
  for (std::size_t i = 0; i < n; ++i) {
    Candidate& cand = top[i];
    const cost::Strategy base = cand.strategy;
    auto cost_of = [&](const std::vector<int>& placement) {
      cost::Strategy s = base;
      s.placement = placement;
      const cost::Estimate e = cost::estimate(m, c, s, opt.cost);
      return e.fits ? e.iteration_time_s : INFINITY;
    };
    const auto placed = anneal_placement(c, base, base.placement, cost_of,
                                         opt.anneal_seed + i, opt.anneal_iterations);
    res.evaluated += opt.anneal_iterations + 1;
    if (placed == base.placement) continue;
    cost::Strategy s = base;
    s.placement = placed;
    double obj = 0;
    if (!optimal_split(m, c, s, opt.cost, &obj)) continue;
    cost::Estimate e = cost::estimate(m, c, s, opt.cost);
    ++res.evaluated;
    if (e.fits && e.iteration_time_s < cand.estimate.iteration_time_s) {
      cand.strategy = std::move(s);
      cand.estimate = std::move(e);
      cand.placement_label = "anneal";
      cand.split_objective_s = obj;
    }
  }
  std::sort(top.begin(), top.end(), candidate_less);
}

}  // namespace strata::plan::detail
