// plan/bounds: lower bounds on a configuration's iteration time and the memory pre-check, from a variant's
// per-class layer costs (see bounds.hpp; docs/planner.md §Search).
#include "bounds.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "strata/cost/stage.hpp"

namespace strata::plan::detail {

// The sums below run over distinct shapes with their layer counts (a bound's rounding differs from the estimate's
// running sums by far less than the bounds' 1e-9 slack).
double min_work_s(const LayerIndex& li, const ClassCosts& cc) {
  double sum = 0;
  for (std::size_t id = 0; id < li.shape_count.size(); ++id) {
    double best = INFINITY;
    for (const auto& row : cc.shape) best = std::min(best, row[id].time_s());
    sum += li.shape_count[id] * best;
  }
  return sum;
}

StaticTotals static_totals(const LayerIndex& li, const ClassCosts& cc) {
  StaticTotals t;
  double params = 0;
  for (std::size_t id = 0; id < li.shape_count.size(); ++id) {
    double w = INFINITY, g = INFINITY, o = INFINITY, x = INFINITY;
    for (const auto& row : cc.shape) {
      w = std::min(w, row[id].weight_bytes);
      g = std::min(g, row[id].grad_bytes);
      o = std::min(o, row[id].optimizer_bytes);
      x = std::min(x, row[id].params_per_device);
    }
    const double n = li.shape_count[id];
    t.weight += n * w;
    t.grad += n * g;
    t.optimizer += n * o;
    params += n * x;
  }
  // Sync: some stage holds at least 1/p of Σ_layers (cheapest class's parameters), with a backward no longer than
  // its class's whole backward; its class is one of the unit's.
  t.sync_s = cc.ctx.empty() ? 0.0 : INFINITY;
  for (std::size_t k = 0; k < cc.ctx.size() && k < cc.shape.size(); ++k) {
    double bwd = 0;
    for (std::size_t id = 0; id < li.shape_count.size(); ++id) bwd += li.shape_count[id] * cc.shape[k][id].bwd_s;
    const int pp = std::max(1, cc.ctx[k].strategy->pp);
    t.sync_s = std::min(t.sync_s, cost::stage_sync_lower_bound_s(cc.ctx[k], params / pp, bwd));
  }
  if (!std::isfinite(t.sync_s)) t.sync_s = 0;
  return t;
}

bool may_fit_memory(const StaticTotals& st, const DegreeUnit& u, const cost::Strategy& s) {
  const cost::StageContext* biggest = nullptr;
  for (const auto& c : u.class_ctx)
    if (!biggest || c.memory_usable_bytes > biggest->memory_usable_bytes) biggest = &c;
  // stage_memory reads the strategy and the constants only: a context of those two, not a copy of the class's.
  cost::StageContext ctx;
  ctx.strategy = &s;
  ctx.constants = biggest->constants;
  cost::StageSums sums;
  sums.weight_bytes = st.weight / s.pp;
  sums.grad_bytes = st.grad / s.pp;
  sums.optimizer_bytes = st.optimizer / s.pp;
  sums.holds_embedding = true;  // no tied copy counted
  // The last stage holds the fewest weight versions / in-flight micro-batches of any stage.
  // (Slack for the order of the sums: only a configuration that cannot fit may be dropped here.)
  return cost::stage_memory(ctx, s.pp - 1, sums).total_bytes() <= biggest->memory_usable_bytes * (1 + 1e-9);
}

std::vector<double> stage_speeds(const LayerIndex& li, const ClassCosts& cc, const DegreeUnit& u) {
  const std::size_t classes = cc.shape.size();
  if (u.stage_class.size() != static_cast<std::size_t>(u.pp)) return std::vector<double>(u.pp, 1.0);
  std::vector<double> rho(classes, INFINITY);
  if (classes > 1)
    for (std::size_t id = 0; id < li.shape_count.size(); ++id) {
      double fastest = INFINITY;
      for (const auto& row : cc.shape) fastest = std::min(fastest, row[id].time_s());
      if (!(fastest > 0)) continue;  // a free layer bounds nothing (t ≥ ρ·0 for any ρ)
      for (std::size_t k = 0; k < classes; ++k) rho[k] = std::min(rho[k], cc.shape[k][id].time_s() / fastest);
    }
  std::vector<double> speed;
  speed.reserve(u.stage_class.size());
  for (int k : u.stage_class) {
    const bool known = k >= 0 && static_cast<std::size_t>(k) < classes && std::isfinite(rho[k]);
    speed.push_back(known ? 1.0 / std::max(1.0, rho[k]) : 1.0);
  }
  return speed;
}

double max_layer_s(const LayerIndex& li, const ClassCosts& cc) {
  double most = 0;
  for (std::size_t id = 0; id < li.shape_count.size(); ++id) {
    double best = INFINITY;
    for (const auto& row : cc.shape) best = std::min(best, row[id].time_s());
    if (std::isfinite(best)) most = std::max(most, best);
  }
  return most;
}

double flow_shop_bound_s(double w, std::vector<double> speeds, std::int64_t m, double max_layer) {
  // (m−1)·max_j t_j + Σ_j t_j with t_j ≥ ρ_j·x_j, x_j the cheapest-class time of stage j's layers (Σ_j x_j ≥ w),
  // and max_j t_j ≥ max_layer (the stage holding the costliest layer; ρ ≥ 1). For a given max T, Σ_j ρ_j·x_j is
  // least when the fastest stages are filled to T first; the resulting convex piecewise-linear function of T is
  // least at T = max_layer or at a breakpoint T_q = w / S_q ≥ max_layer, where the q fastest stages (speed sum
  // S_q) are full: (m − 1 + q)·T_q. With equal speeds and a small max_layer: q = p, (m−1)·w/p + w.
  std::sort(speeds.begin(), speeds.end(), std::greater<>());
  double best = INFINITY, sum = 0;
  const double md = static_cast<double>(m);
  for (std::size_t q = 0; q < speeds.size(); ++q) {
    sum += speeds[q];
    if (sum > 0 && w / sum >= max_layer) best = std::min(best, (md - 1 + static_cast<double>(q + 1)) * w / sum);
  }
  if (max_layer > 0 && max_layer * sum >= w) {  // T = max_layer is feasible: fill the fastest stages to it
    double left = w, stage_sum = 0;
    for (double sp : speeds) {
      if (left <= 0 || !(sp > 0)) break;
      const double x = std::min(max_layer * sp, left);
      stage_sum += x / sp;
      left -= x;
    }
    best = std::min(best, (md - 1) * max_layer + stage_sum);
  }
  return std::isfinite(best) ? best * (1.0 - 1e-9) : 0.0;
}

double lower_bound_s(double w, double stages, std::int64_t m, const ScheduleChoice& sc, double sync_s) {
  // max_j t_j ≥ w / P with P = Σ_j stage_speeds (≤ p: Σ_j t_j / p ≥ w / p when all stages are alike) and
  // Σ_j t_j ≥ w; p2p times are ≥ 0; max_j sync_j ≥ sync_s (StaticTotals::sync_s).
  const double md = static_cast<double>(m), p = stages;
  double lb = 0;
  switch (sc.schedule) {
    case cost::Schedule::gpipe:
    case cost::Schedule::one_f_one_b: lb = (md - 1) * w / p + w; break;
    case cost::Schedule::interleaved: {
      // m·M + (Σ − M)/v is increasing in M (m ≥ 1/v) and in Σ.
      const double v = std::max(1, sc.v);
      lb = (md - 1.0 / v) * w / p + w / v;
      break;
    }
    case cost::Schedule::two_bw: lb = md * w / p; break;
    case cost::Schedule::pipedream:
      // m·max_j (t_j + sync_j) (cost::iteration_time): at least m·max t and at least m·sync of the stage j*.
      return md * std::max(w / p, sync_s) * (1.0 - 1e-9);
  }
  lb += sync_s;  // iteration_time = pipeline_time + max_j sync_j
  return lb * (1.0 - 1e-9);  // slack for the floating-point order of the estimate's sums
}

void StagePrefix::build(const LayerIndex& li, std::span<const std::vector<cost::LayerStageCost>> rows) {
  layers = static_cast<int>(li.shape_of.size());
  classes = static_cast<int>(rows.size());
  const std::size_t n = static_cast<std::size_t>(classes) * (layers + 1);
  time.assign(n, 0.0);
  bwd.assign(n, 0.0);
  params.assign(n, 0.0);
  for (int k = 0; k < classes; ++k) {
    const std::size_t o = static_cast<std::size_t>(k) * (layers + 1);
    for (int i = 0; i < layers; ++i) {
      const auto& lc = rows[k][li.shape_of[i]];
      time[o + i + 1] = time[o + i] + lc.time_s();
      bwd[o + i + 1] = bwd[o + i] + lc.bwd_s;
      params[o + i + 1] = params[o + i] + lc.params_per_device;
    }
  }
}

double fixed_split_bound_s(const DegreeUnit& u, const cost::Strategy& s, const StagePrefix& x,
                           std::span<const cost::StageContext> ctx) {
  const int p = s.pp;
  // A per-layer recompute choice would cost some layers outside the cached rows.
  if (!s.recompute_layers.empty() || u.stage_class.size() != static_cast<std::size_t>(p) ||
      ctx.size() != static_cast<std::size_t>(x.classes))
    return -1;
  const auto bounds = cost::chunk_boundaries(s);
  const int chunks = static_cast<int>(bounds.size()) - 1;
  thread_local std::vector<double> t, sync, links;
  t.assign(p, 0.0);
  sync.assign(p, 0.0);
  links.assign(std::max(0, p - 1), 0.0);
  for (int st = 0; st < p; ++st) {
    const int k = u.stage_class[st];
    if (k < 0 || k >= x.classes) return -1;
    const std::size_t o = static_cast<std::size_t>(k) * (x.layers + 1);
    double bwd = 0, params = 0;
    for (int ch = st; ch < chunks; ch += p) {  // stage st holds chunks st, st + p, … (cost::sum_stage_layers)
      const std::size_t a = o + bounds[ch], b = o + bounds[ch + 1];
      t[st] += x.time[b] - x.time[a];
      bwd += x.bwd[b] - x.bwd[a];
      params += x.params[b] - x.params[a];
    }
    sync[st] = cost::dp_sync_exposed_time(ctx[k], params, bwd) + cost::optimizer_step_time(ctx[k], params);
  }
  const double bound = cost::iteration_time(s.schedule, s.num_micro_batches(), s.virtual_stages, t, links, sync);
  return bound * (1.0 - 1e-9);  // slack for the order of the sums (prefix differences here, running sums there)
}

VariantBounds variant_bounds(const LayerIndex& li, const ClassCosts& cc, const DegreeUnit& u, std::int64_t micro) {
  VariantBounds b;
  b.min_work = min_work_s(li, cc);
  const std::vector<double> speeds = stage_speeds(li, cc, u);
  for (double x : speeds) b.stages += x;
  b.flow_shop = flow_shop_bound_s(b.min_work, speeds, micro, max_layer_s(li, cc));
  b.statics = static_totals(li, cc);
  return b;
}

}  // namespace strata::plan::detail
