// cli/engine_flag: `--engine NAME` for plan, estimate, simulate, report and export, and plan's "launchable:" line
// (docs/export.md §Engine profiles). The profiles and their predicate live in cost/engine.
#include "engine_flag.hpp"

#include <fmt/format.h>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"

namespace strata::cli {

void add_engine_option(CLI::App* cmd, std::string* engine, const std::string& what) {
  cmd->add_option("--engine", *engine,
                  fmt::format("Training engine you will run ({}): {} (profiles: data/engines, docs/export.md)",
                              core::join(cost::engine_names(), " | "), what));
}

std::optional<cost::EngineProfile> engine_from_flag(const std::string& name, const std::string& flag) {
  if (name.empty()) return std::nullopt;
  return cost::engine_profile(name, flag);
}

void apply_engine_flag(const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c, cost::Strategy& s,
                       cost::CostOptions* opt, const std::string& cmd, const std::set<std::string>& given) {
  cost::apply_engine_traits(p, c, s, given);
  if (const auto why = cost::engine_cannot_run(p, m, c, s))
    throw core::InputError(fmt::format("{}: --engine {} cannot run {}", cmd, p.name, *why));
  if (opt && opt->memory_headroom.bytes < 0 && opt->memory_headroom.fraction < 0)
    opt->memory_headroom.fraction = p.allocator_headroom_fraction;
}

namespace {

// The search's traits are the engine's: the best plan of the full space is the engine's best when it can run it.
bool same_traits(const cost::EngineProfile& p, const hw::Cluster& c, const plan::PlanOptions& opt) {
  cost::Strategy t;
  t.dtype = opt.dtype;
  t.recompute = model::Recompute::full;
  cost::apply_engine_traits(p, c, t);
  const bool headroom_same = opt.cost.memory_headroom.bytes >= 0 || opt.cost.memory_headroom.fraction >= 0 ||
                             p.allocator_headroom_fraction == cost::builtin_constants().fragmentation_fraction;
  return headroom_same && t.eager_elementwise == opt.eager_elementwise &&
         t.recompute_early_stop == opt.recompute_early_stop && t.fp8_separate_casts == opt.fp8_separate_casts &&
         t.attention == opt.attention && t.fp32_loss == opt.fp32_loss && t.optim == opt.optim && t.grads == opt.grads;
}

// The reason without its parenthesised detail, for one entry of the line.
std::string short_reason(const std::string& why) {
  const auto at = why.find(" (");
  return at == std::string::npos ? why : why.substr(0, at);
}

}  // namespace

std::string launchable_line(const model::Model& m, const hw::Cluster& c, const plan::PlanOptions& opt,
                            const plan::PlanResult& r) {
  const double best = r.top.front().estimate.iteration_time_s;
  std::vector<std::string> parts;
  for (const auto& name : cost::engine_names()) {
    const auto& p = cost::engine_profile(name);
    if (const auto why = cost::engine_cannot_run_on(p, m, c, opt.dtype)) {
      parts.push_back(fmt::format("{} cannot ({})", name, short_reason(*why)));
      continue;
    }
    if (same_traits(p, c, opt) && !cost::engine_cannot_run(p, m, c, r.top.front().strategy)) {
      parts.push_back(fmt::format("{} 1.00×", name));
      continue;
    }
    plan::PlanOptions o = opt;
    o.engine = p;
    o.top_k = 1;
    o.baselines = false;
    o.progress = {};
    o.on_costed = {};
    try {
      const auto rr = plan::plan(m, c, o);
      parts.push_back(fmt::format("{} {:.2f}×", name, best / rr.top.front().estimate.iteration_time_s));
    } catch (const core::InputError&) {
      parts.push_back(fmt::format("{} none fits", name));
    }
  }
  return "launchable: " + core::join(parts);
}

}  // namespace strata::cli
