// plan/layerwise_dp: Galvatron's decision-tree space (seed_001 §3.2), strata's per-layer candidates, and the
// per-stage dynamic programme over (layer, memory, previous layout) with its brute-force reference (layerwise.hpp).
#include <algorithm>
#include <functional>

#include "strata/plan/layerwise.hpp"
#include "strata/plan/split.hpp"

namespace strata::plan {

namespace {

void extend_trees(int remaining, std::vector<std::pair<char, int>>& levels, bool mix,
                  std::vector<DecisionTree>& out) {
  if (remaining == 1) {
    bool d = false, s = false;
    for (const auto& [k, deg] : levels) d = d || k == 'd', s = s || k == 's';
    if (mix || !(d && s)) out.push_back({levels});
    return;
  }
  for (char k : {'d', 't', 's'}) {
    if (std::any_of(levels.begin(), levels.end(), [&](const auto& l) { return l.first == k; })) continue;
    for (int deg = 2; deg <= remaining; deg *= 2) {
      if (remaining % deg != 0) break;
      levels.emplace_back(k, deg);
      extend_trees(remaining / deg, levels, mix, out);
      levels.pop_back();
    }
  }
}

}  // namespace

std::vector<DecisionTree> decision_trees(int group, bool allow_dp_sdp_mix) {
  std::vector<DecisionTree> out;
  if (group < 1 || (group & (group - 1)) != 0) return out;
  std::vector<std::pair<char, int>> levels;
  extend_trees(group, levels, allow_dp_sdp_mix, out);
  return out;
}

std::optional<cost::LayerChoice> choice_of_tree(const DecisionTree& t, int group) {
  bool d = false, s = false;
  cost::LayerChoice c;
  c.tp = 1;
  int tp_level = -1;
  for (std::size_t i = 0; i < t.levels.size(); ++i) {
    const auto& [k, deg] = t.levels[i];
    d = d || k == 'd';
    s = s || k == 's';
    if (k == 't') c.tp = deg, tp_level = static_cast<int>(i);
  }
  if (d && s) return std::nullopt;
  c.data_parallel = s ? cost::LayerDataParallel::sdp : cost::LayerDataParallel::dp;
  // TP on the innermost level = consecutive ranks; outside the data-parallel level = strided (ranks dp apart).
  c.tp_order = tp_level > 0 && c.tp < group ? cost::TpOrder::strided : cost::TpOrder::consecutive;
  return c;
}

std::vector<cost::LayerChoice> layer_choice_space(const model::Model& m, int group, const LayerSpaceOptions& o) {
  std::vector<cost::LayerChoice> out;
  for (const auto& t : decision_trees(group, false)) {
    auto c = choice_of_tree(t, group);
    if (!c) continue;
    if (c->data_parallel == cost::LayerDataParallel::sdp && !o.sdp) continue;
    if (c->tp > 1 && (!o.tp || (o.max_tp > 0 && c->tp > o.max_tp))) continue;
    if (c->tp_order == cost::TpOrder::strided && !o.strided) continue;
    bool ok = true;
    for (const auto& l : m.layers) ok = ok && model::tensor_parallel_problem(l, c->tp).empty();
    if (!ok) continue;
    out.push_back(*c);
    if (o.selective) {
      cost::LayerChoice sel = *c;
      sel.recompute = model::Recompute::selective;
      out.push_back(sel);
    }
    if (o.ckpt) {
      c->recompute = model::Recompute::full;
      out.push_back(*c);
    }
  }
  return out;
}

StageDpResult solve_stage_dp(const StageDpProblem& p) {
  StageDpResult r;
  const int L = p.layers, S = p.choices, K = p.layouts, E = p.budget_units;
  if (L == 0) {
    r.feasible = true;
    return r;
  }
  if (E < 0) return r;
  const std::int64_t inf = kInfinitePs;
  // cur[e·K + k]: least time of the layers so far using exactly e units and ending in layout k.
  std::vector<std::int64_t> cur(static_cast<std::size_t>(E + 1) * K, inf), next(cur.size(), inf);
  // Back-pointers per layer: the choice taken and the previous layout, per (e, k) after the layer.
  std::vector<std::vector<int>> took(L, std::vector<int>(cur.size(), -1)), from(L, std::vector<int>(cur.size(), -1));
  std::vector<std::int64_t> into(K);
  std::vector<int> into_from(K);
  for (int l = 0; l < L; ++l) {
    std::fill(next.begin(), next.end(), inf);
    for (int e = 0; e <= E; ++e) {
      // Best way into each layout b from the state (e, ·): stay (no transformation) or switch from a.
      bool any = l == 0 && e == 0;
      for (int b = 0; b < K; ++b) {
        into[b] = l == 0 ? (e == 0 ? 0 : inf) : inf;
        into_from[b] = -1;
        if (l == 0) continue;
        for (int a = 0; a < K; ++a) {
          const std::int64_t c = cur[e * K + a];
          if (c >= inf) continue;
          const std::int64_t t = c + (a == b ? 0 : p.trans_ps[l][a * K + b]);
          if (t < into[b]) into[b] = t, into_from[b] = a;
        }
        any = any || into[b] < inf;
      }
      if (!any) continue;
      for (int s = 0; s < S; ++s) {
        const int b = p.layout_of[s];
        const std::int64_t ts = p.time_ps[l][s];
        if (into[b] >= inf || ts >= inf) continue;
        const int e2 = e + p.mem_units[l][s];
        if (e2 > E) continue;
        const std::int64_t t = into[b] + ts;
        const std::size_t at = static_cast<std::size_t>(e2) * K + b;
        if (t < next[at]) {  // ties keep the first: the smaller e, then the smaller choice index
          next[at] = t;
          took[l][at] = s;
          from[l][at] = l == 0 ? -1 : e * K + into_from[b];
        }
      }
    }
    std::swap(cur, next);
  }
  // The least time over every end state; ties: the least memory, then the smallest layout.
  std::size_t best = cur.size();
  for (std::size_t i = 0; i < cur.size(); ++i)
    if (cur[i] < inf && (best == cur.size() || cur[i] < cur[best])) best = i;
  if (best == cur.size()) return r;
  r.feasible = true;
  r.time_ps = cur[best];
  r.mem_units = static_cast<int>(best / K);
  r.choice.assign(L, -1);
  std::size_t at = best;
  for (int l = L - 1; l >= 0; --l) {
    r.choice[l] = took[l][at];
    at = static_cast<std::size_t>(from[l][at]);
  }
  return r;
}

StageDpResult brute_force_stage_dp(const StageDpProblem& p) {
  StageDpResult best;
  std::vector<int> pick(p.layers, 0);
  std::function<void(int, std::int64_t, int)> go = [&](int l, std::int64_t t, int mem) {
    if (mem > p.budget_units || t >= kInfinitePs) return;
    if (l == p.layers) {
      if (!best.feasible || t < best.time_ps || (t == best.time_ps && mem < best.mem_units)) {
        best.feasible = true;
        best.time_ps = t;
        best.mem_units = mem;
        best.choice = pick;
      }
      return;
    }
    for (int s = 0; s < p.choices; ++s) {
      if (p.time_ps[l][s] >= kInfinitePs) continue;
      std::int64_t tt = t + p.time_ps[l][s];
      if (l > 0 && p.layout_of[pick[l - 1]] != p.layout_of[s])
        tt += p.trans_ps[l][p.layout_of[pick[l - 1]] * p.layouts + p.layout_of[s]];
      pick[l] = s;
      go(l + 1, tt, mem + p.mem_units[l][s]);
    }
  };
  go(0, 0, 0);
  return best;
}

}  // namespace strata::plan
