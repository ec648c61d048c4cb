// exec/layer_plan: a per-layer strategy (Galvatron-BMW, issue 16: cost::LayerChoice per layer) as the runtime runs
// it — the uniform stand-in the pipeline program, layout and host-memory check read, plus one choice per chain
// entry (DP or SDP = ZeRO-3 weights, recompute) that the worker applies per layer (docs/executor.md "Per-layer
// strategies"). Torch-free: it runs in the parent as part of make_run_options.
#include <fmt/format.h>

#include "strata/core/error.hpp"
#include "strata/cost/layerwise.hpp"
#include "strata/exec/run.hpp"

namespace strata::exec {
namespace {

// Memory order of recompute modes (full keeps the least activations): the stand-in takes the least-memory mode
// any layer uses, so host_memory_need's activation term stays a lower bound.
int memory_rank(model::Recompute r) {
  return r == model::Recompute::full ? 0 : r == model::Recompute::selective ? 1 : 2;
}

void check_choice(const cost::LayerChoice& lc, const cost::StageView& v, int stage, int layer) {
  const auto refuse = [&](const std::string& why) {
    throw core::InputError(fmt::format("--strategy: stage {} layer {}: the executor runs per-layer dp/sdp and "
                                       "recompute only, not {}",
                                       stage, layer, why));
  };
  if (lc.tp != v.tp) refuse(fmt::format("a layer tp ({}) different from its stage's tp ({})", lc.tp, v.tp));
  if (lc.tp_order != cost::TpOrder::consecutive) refuse("strided tensor-parallel groups");
  if (lc.overlap_tp) refuse("overlapped tp (Oases)");
  if (lc.recompute == model::Recompute::oases) refuse("recompute=oases");
  if (lc.recompute == model::Recompute::op) refuse("recompute=op");
}

}  // namespace

void split_layer_choices(const model::Model& m, const cost::Strategy& s, const hw::Cluster& c, RunOptions& o) {
  if (!cost::is_layerwise(s, c)) {
    // Uniform, or per-stage (dp_i, tp_i) without layer choices: run as they are (the per-stage path, issues 14
    // and 41). Layer choices need the per-layer form: one (dp, tp) for all stages and every device used.
    for (const auto& st : s.stages)
      if (!st.layer_choices.empty())
        throw core::InputError("--strategy: the executor does not support this: per-layer choices (layers=) in a "
                               "per-stage strategy whose stages differ in (dp, tp) or leave devices idle (per-layer "
                               "choices run when every stage has one dp and tp and all devices are used)");
    return;
  }
  if (s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw)
    throw core::InputError("--strategy: per-layer choices run with flush schedules (gpipe, 1f1b), not pipedream/2bw");
  const auto views = cost::stage_views(s, c);
  std::vector<cost::LayerChoice> choices;
  model::Recompute least = model::Recompute::none;
  for (int st = 0; st < static_cast<int>(views.size()); ++st) {
    int block = 0;
    const auto& v = views[st];
    for (int li = v.chunks.front().first_layer; li < v.chunks.front().first_layer + v.num_layers; ++li) {
      const auto lc = cost::stage_layer_choice(m, s, v, st, li, block);
      check_choice(lc, v, st, li);
      if (memory_rank(lc.recompute) < memory_rank(least)) least = lc.recompute;
      choices.push_back(lc);
    }
  }
  cost::Strategy u = s;
  for (auto& st : u.stages) st.layer_choices.clear();
  u.recompute_layers.clear();
  u.recompute = least;
  u.zero_stage = std::min(s.zero_stage, 2);
  auto uniform = cost::collapse_to_uniform(u, c);
  if (!uniform) cost::require_uniform(s, "running");  // names what else the strategy has (issue 14)
  o.strategy = cost::complete_strategy(std::move(*uniform), m, c);
  o.layer_choices = std::move(choices);
}

}  // namespace strata::exec
