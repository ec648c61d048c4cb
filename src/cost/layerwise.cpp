// cost/layerwise: per-layer strategies — each layer's cost under its choice (layer_stage_cost of the derived
// uniform strategy), Slice-Gather between layouts (cost/comm), and the estimate of a per-layer strategy composed
// of the same stage.hpp building blocks as estimate() (see layerwise.hpp, docs/cost-model.md §Per-layer).
#include "strata/cost/layerwise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"

namespace strata::cost {

Strategy layer_choice_strategy(const Strategy& s, int group, std::int64_t group_batch, const LayerChoice& choice) {
  const int tp = choice.tp > 0 ? choice.tp : 1;
  if (group % tp != 0)
    throw core::InputError(fmt::format("strategy: layer choice tp{}: rule 'layer tp divides the stage group' "
                                       "violated: the stage has {} devices", tp, group));
  const int dp = group / tp;
  if (group_batch % dp != 0)
    throw core::InputError(fmt::format(
        "strategy: layer choice tp{}: rule 'layer dp divides the stage's samples per round' violated: {} samples "
        "(dp·mbs of the stage) over {} data-parallel ranks", tp, group_batch, dp));
  if (choice.overlap_tp)
    throw core::InputError("strategy: layer choice 'overlap': the per-layer cost model does not cost overlapped "
                           "TP per layer (Oases; use overlap=on for the whole strategy)");
  Strategy d;
  d.dp = dp;
  d.tp = tp;
  d.pp = s.pp;
  d.micro_batch = group_batch / dp;
  d.global_batch = s.global_batch;
  d.schedule = s.schedule;
  d.zero_stage = choice.data_parallel == LayerDataParallel::sdp ? 3 : std::min(s.zero_stage, 2);
  d.recompute = choice.recompute;
  d.sequence_parallel = s.sequence_parallel;
  d.dtype = s.dtype;
  d.attention = s.attention;
  return d;
}

std::vector<int> layer_choice_devices(std::span<const int> group, int tp, TpOrder order) {
  const int G = static_cast<int>(group.size());
  std::vector<int> out(group.begin(), group.end());
  if (order == TpOrder::consecutive || tp <= 1 || tp >= G) return out;
  const int dp = G / tp;
  // Strided: tp rank t of dp rank d is group position t·dp + d.
  for (int d = 0; d < dp; ++d)
    for (int t = 0; t < tp; ++t) out[d * tp + t] = group[t * dp + d];
  return out;
}

int layout_dp_rank(int pos, int group, int tp, TpOrder order) {
  const int dp = group / std::max(1, tp);
  if (order == TpOrder::strided && tp > 1 && tp < group) return pos % dp;
  return pos / std::max(1, tp);
}

namespace {

const CostConstants& consts_of(const CostOptions& o) { return o.constants ? *o.constants : builtin_constants(); }

// One direction of a Slice-Gather: every device gathers its share of the round under layout `to` from the
// devices that hold it under layout `from` (module comment in layerwise.hpp).
double gather_direction(const hw::Cluster& c, std::span<const int> group, std::int64_t group_batch,
                        const LayerChoice& from, const LayerChoice& to, double bytes_per_sample,
                        const CostOptions& opt) {
  const int G = static_cast<int>(group.size());
  const int dp_a = G / from.tp, dp_b = G / to.tp;
  const double need_bytes = bytes_per_sample * static_cast<double>(group_batch) / dp_b;
  CommOptions co;
  co.constants = &consts_of(opt);
  double worst = 0;
  std::vector<int> members;
  // Positions of each dp rank of layout `from`.
  std::vector<std::vector<int>> holders(dp_a);
  for (int p = 0; p < G; ++p) holders[layout_dp_rank(p, G, from.tp, from.tp_order)].push_back(p);
  for (int pos = 0; pos < G; ++pos) {
    const int ra = layout_dp_rank(pos, G, from.tp, from.tp_order);
    const int rb = layout_dp_rank(pos, G, to.tp, to.tp_order);
    // Intervals of the round in units of 1/(dp_a·dp_b): need [rb·dp_a, (rb+1)·dp_a), have [ra·dp_b, (ra+1)·dp_b).
    const long need_lo = static_cast<long>(rb) * dp_a, need_hi = need_lo + dp_a;
    const long have_lo = static_cast<long>(ra) * dp_b, have_hi = have_lo + dp_b;
    if (need_lo >= have_lo && need_hi <= have_hi) continue;  // a slice of what it holds
    // Source dp ranks of layout `from` overlapping the need: one device each (the nearest position).
    members.clear();
    bool holds_part = false;
    for (int q = 0; q < dp_a; ++q) {
      const long lo = static_cast<long>(q) * dp_b, hi = lo + dp_b;
      if (hi <= need_lo || lo >= need_hi) continue;
      if (q == ra) {
        holds_part = true;
        members.push_back(group[pos]);
        continue;
      }
      int best = -1;
      for (int p : holders[q])
        if (best < 0 || std::abs(p - pos) < std::abs(best - pos)) best = p;
      members.push_back(group[best]);
    }
    double t = 0;
    if (!holds_part && members.size() == 1) {
      t = p2p_device_time(c, members.front(), group[pos], need_bytes, co);
    } else {
      if (!holds_part) members.push_back(group[pos]);
      std::sort(members.begin(), members.end());
      t = allgather_time(c, members, need_bytes, co);
    }
    worst = std::max(worst, t);
  }
  return worst;
}

}  // namespace

TransformCost slice_gather_cost(const hw::Cluster& c, std::span<const int> group, std::int64_t group_batch,
                                const LayerChoice& from, const LayerChoice& to, double bytes_per_sample,
                                const CostOptions& opt) {
  TransformCost out;
  if (group.size() <= 1 || bytes_per_sample <= 0) return out;
  out.fwd_s = gather_direction(c, group, group_batch, from, to, bytes_per_sample, opt);
  out.bwd_s = gather_direction(c, group, group_batch, to, from, bytes_per_sample, opt);
  return out;
}

LayerwiseCoster::LayerwiseCoster(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                 std::span<const int> g, std::int64_t gb, const CostOptions& opt)
    : model(&m), cluster(&c), stage_strategy(&s), group(g.begin(), g.end()), group_batch(gb), options(opt) {}

int LayerwiseCoster::choice_index(const LayerChoice& choice) {
  for (std::size_t i = 0; i < choices_.size(); ++i)
    if (choices_[i].choice == choice) return static_cast<int>(i);
  ChoiceCtx x;
  x.choice = choice;
  x.strategy = std::make_unique<Strategy>(
      layer_choice_strategy(*stage_strategy, static_cast<int>(group.size()), group_batch, choice));
  // Contexts of one layout share the groups' α–β: copy the first one built for it.
  const ChoiceCtx* same_layout = nullptr;
  for (const auto& y : choices_)
    if (y.choice.tp == choice.tp && y.choice.tp_order == choice.tp_order) same_layout = &y;
  if (same_layout) {
    x.ctx = same_layout->ctx;
  } else {
    const auto devs = layer_choice_devices(group, x.strategy->tp, choice.tp_order);
    x.ctx = make_stage_context(*model, *cluster, *x.strategy, devs, options);
  }
  x.ctx.strategy = x.strategy.get();
  choices_.push_back(std::move(x));
  return static_cast<int>(choices_.size()) - 1;
}

const StageContext& LayerwiseCoster::context(const LayerChoice& choice) { return choices_[choice_index(choice)].ctx; }

const LayerStageCost& LayerwiseCoster::cost(int li, const LayerChoice& choice) {
  const int ci = choice_index(choice);
  const model::LayerSpec& l = model->layers[li];
  for (const auto& e : entries_)
    if (e.choice == ci && (e.layer == li || model::same_cost_shape(model->layers[e.layer], l))) return e.cost;
  entries_.push_back({li, ci, layer_stage_cost(*model, l, choices_[ci].ctx, choice.recompute)});
  return entries_.back().cost;
}

double LayerwiseCoster::output_bytes_per_sample(int li, const LayerChoice& choice) {
  // output_bytes is the whole output of the layer's per-device batch (the round's samples / the layer's dp).
  const LayerStageCost& lc = cost(li, choice);
  return lc.output_bytes / static_cast<double>(context(choice).strategy->micro_batch);
}

TransformCost LayerwiseCoster::transform(const LayerChoice& from, const LayerChoice& to, double bytes_per_sample) {
  if (from.tp == to.tp && (from.tp_order == to.tp_order || from.tp <= 1)) return {};
  for (const auto& t : transforms_)
    if (t.bytes == bytes_per_sample && t.from.tp == from.tp && t.from.tp_order == from.tp_order && t.to.tp == to.tp &&
        t.to.tp_order == to.tp_order)
      return t.cost;
  const TransformCost tc = slice_gather_cost(*cluster, group, group_batch, from, to, bytes_per_sample, options);
  transforms_.push_back({from, to, bytes_per_sample, tc});
  return tc;
}

LayerChoice stage_layer_choice(const model::Model& m, const Strategy& s, const StageView& v, int stage, int li,
                               int& block_index) {
  if (!v.layer_choices.empty()) return v.layer_choices[li - v.chunks.front().first_layer];
  LayerChoice lc;
  lc.tp = v.tp;
  lc.data_parallel = s.zero_stage == 3 ? LayerDataParallel::sdp : LayerDataParallel::dp;
  // The stage loop's rule (sum_stage_layers): blocks follow rlayers, other layers the strategy's recompute.
  lc.recompute = is_block(m.layers[li].kind) ? layer_recompute_mode(s, stage, block_index++) : s.recompute;
  return lc;
}

bool is_layerwise(const Strategy& s, const hw::Cluster& c) {
  if (is_uniform(s)) return false;
  bool choices = false;
  for (const auto& st : s.stages) {
    if (st.dp != s.stages.front().dp || st.tp != s.stages.front().tp) return false;
    choices = choices || !st.layer_choices.empty();
  }
  return choices && devices_used(s) == c.num_devices();
}

}  // namespace strata::cost
