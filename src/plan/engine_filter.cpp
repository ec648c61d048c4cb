// plan/engine_filter: plan --engine — what the engine cannot run at all refused up front, its stack traits set on
// the search's options, and each configuration filtered through cost::engine_cannot_run_strategy before it is
// costed (docs/export.md §Engine profiles).
#include <fmt/format.h>

#include <algorithm>

#include "search_internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::plan::detail {

// plan --engine: the engine's predicate (cost::engine_cannot_run_strategy) on each configuration before it is
// costed; its rejections are counted per feature ("engine E: ..."). A no-op without an engine.
std::optional<std::string> EngineFilter::degrees(const cost::Dims& d) const {
  if (!opt.engine) return std::nullopt;
  const int tp = d.tp, pp = d.pp, cp = d.cp;
  cost::Strategy s;
  static_cast<cost::Dims&>(s) = d;
  s.sequence_parallel = tp > 1 && opt.engine->sequence_parallel != "never";  // degrees alone: any sp form
  s.zero_stage = opt.engine->zero_stages.back();
  s.dtype = opt.dtype;
  s.eager_elementwise = opt.eager_elementwise;
  s.fp8_separate_casts = opt.fp8_separate_casts;
  const auto& p = *opt.engine;
  // Only the degree limits here (the knobs below the degrees are filtered per variant).
  if ((p.max_tp > 0 && tp > p.max_tp) || (p.max_pp > 0 && pp > p.max_pp) || (cp > 1 && (p.max_cp == 1 || !p.writer_cp)))
    if (auto why = cost::engine_cannot_run_strategy(p, m, c, s)) return "engine " + p.name + ": " + *why;
  return std::nullopt;
}

std::vector<ScheduleChoice> EngineFilter::schedules(const DegreeUnit& u, const Variant& var,
                                                   const std::vector<ScheduleChoice>& all, Rejections& rej) const {
  if (!opt.engine) return all;
  std::vector<ScheduleChoice> kept;
  for (const auto& sc : all) {
    cost::Strategy s = make_strategy_light(u, var, sc);
    if (const auto why = cost::engine_cannot_run_strategy(*opt.engine, m, c, s))
      rej.add("engine " + opt.engine->name + ": " + *why, 1, [&] { return short_cli(s); });
    else
      kept.push_back(sc);
  }
  return kept;
}

// plan --engine: refuse what the engine cannot run at all (model, devices, dtype per GPU) and cost every
// candidate with its stack traits (element-wise form, early stop, fp8 casts, attention kernel, headroom).
PlanOptions with_engine_traits(const model::Model& m, const hw::Cluster& c, PlanOptions opt) {
  if (!opt.engine) return opt;
  const auto& p = *opt.engine;
  if (const auto why = cost::engine_cannot_run_on(p, m, c, opt.dtype))
    throw core::InputError(fmt::format("plan: --engine {} cannot run {}", p.name, *why));
  cost::Strategy t;
  t.dtype = opt.dtype;
  t.recompute = model::Recompute::full;
  cost::apply_engine_traits(p, c, t);
  opt.eager_elementwise = t.eager_elementwise;
  opt.recompute_early_stop = t.recompute_early_stop;
  opt.fp8_separate_casts = t.fp8_separate_casts;
  opt.attention = t.attention;
  opt.fp32_loss = t.fp32_loss;
  opt.optim = t.optim;
  opt.grads = t.grads;
  if (opt.cost.memory_headroom.bytes < 0 && opt.cost.memory_headroom.fraction < 0)
    opt.cost.memory_headroom.fraction = p.allocator_headroom_fraction;
  return opt;
}

[[noreturn]] void throw_engine_runs_nothing(const PlanOptions& opt, const detail::Rejections& rej) {
  std::vector<std::pair<std::int64_t, std::string>> why;
  for (const auto& [reason, e] : rej.by_reason)
    if (reason.rfind("engine ", 0) == 0) why.emplace_back(-e.count, reason.substr(reason.find(": ") + 2));
  std::sort(why.begin(), why.end());
  std::vector<std::string> top;
  for (std::size_t i = 0; i < why.size() && i < 3; ++i) top.push_back(why[i].second);
  throw core::InputError(fmt::format("plan: --engine {}: no strategy of the space is one it can run ({})",
                                     opt.engine->name, top.empty() ? "none enumerated" : core::join(top, "; ")));
}

}  // namespace strata::plan::detail
