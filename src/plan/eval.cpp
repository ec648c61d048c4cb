// plan/eval: the per-configuration work of the planner (see eval.hpp). Every number comes from the cost model's
// stage functions (layer_stage_cost, stage_memory, p2p_time) and the final one from cost::estimate.
#include "eval.hpp"

#include "unit_memo.hpp"

#include "strata/cost/strategy_keys.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <tuple>

namespace strata::plan::detail {

LayerIndex index_layers(const model::Model& m) {
  LayerIndex li;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const auto& l = m.layers[i];
    int id = -1;
    for (std::size_t k = 0; k < li.representative.size() && id < 0; ++k)
      if (model::same_cost_shape(m.layers[li.representative[k]], l)) id = static_cast<int>(k);
    if (id < 0) {
      id = static_cast<int>(li.representative.size());
      li.representative.push_back(static_cast<int>(i));
    }
    li.shape_of.push_back(id);
    if (static_cast<std::size_t>(id) >= li.shape_count.size()) li.shape_count.resize(id + 1, 0);
    ++li.shape_count[id];
    li.is_embedding.push_back(model::is_embedding(l.kind));
  }
  li.flops = model::sample_flops(m);
  return li;
}

namespace {
// The numbers of a context that layer costs and stage memory read (devices excluded).
auto ctx_key(const cost::StageContext& x) {
  return std::make_tuple(x.gpu_type, x.peak_flops, x.memory_bw_bytes_per_s, x.memory_capacity_bytes,
                         x.tp_allreduce_s_per_byte, x.tp_allreduce_latency_s, x.tp_rs_s_per_byte, x.tp_rs_latency_s,
                         x.dp_allgather_s_per_byte, x.dp_allgather_latency_s, x.dp_allreduce_s_per_byte,
                         x.dp_allreduce_latency_s, x.cp_step_s_per_byte, x.cp_step_latency_s);
}
}  // namespace

DegreeUnit make_degree_unit(const model::Model& m, const hw::Cluster& c, const cost::Dims& d,
                            std::vector<int> placement, std::string label, std::int64_t gbs, hw::Dtype dtype,
                            const cost::CostOptions& opt) {
  return make_degree_unit(m, c, d, std::make_shared<const std::vector<int>>(std::move(placement)), std::move(label),
                          gbs, dtype, opt);
}

DegreeUnit make_degree_unit(const model::Model& m, const hw::Cluster& c, const cost::Dims& d,
                            std::shared_ptr<const std::vector<int>> placement, std::string label, std::int64_t gbs,
                            hw::Dtype dtype, const cost::CostOptions& opt, bool reuse_twins,
                            const std::vector<int>* stage_twins) {
  const int dp = d.dp, tp = d.tp, pp = d.pp, cp = d.cp;
  DegreeUnit u;
  u.dp = dp;
  u.tp = tp;
  u.pp = pp;
  u.placement_label = std::move(label);
  u.proto.dp = dp;
  u.proto.tp = tp;
  u.proto.pp = pp;
  u.proto.cp = cp;
  u.proto.global_batch = gbs;
  u.proto.dtype = dtype;
  u.placement = std::move(placement);
  u.stage_devices = StageDevices{u.placement.get(), dp * cp * tp, pp};  // a stage: its dp·cp·tp ranks
  u.cuts = std::make_shared<CutCache>();
  u.splits = std::make_shared<SplitMemo>();
  std::vector<int> built;  // stages whose context was built (the twins' references)
  for (int st = 0; st < pp; ++st) {
    const std::span<const int> devs = u.stage_devices[st];
    int cls = -1;
    if (reuse_twins && stage_twins) {  // memoised: the same first twin as the loop below finds
      if ((*stage_twins)[st] != st) {
        cls = u.stage_class[(*stage_twins)[st]];
        u.stage_twin.push_back((*stage_twins)[st]);
      }
    } else if (reuse_twins) {
      for (int prev : built)
        if (hw::same_topology(c, devs, u.stage_devices[prev])) {
          cls = u.stage_class[prev];
          u.stage_twin.push_back(prev);
          break;
        }
    }
    if (cls < 0) {
      u.stage_twin.push_back(st);
      cost::StageContext ctx = cost::make_stage_context(m, c, u.proto, devs, opt);
      built.push_back(st);
      for (std::size_t k = 0; k < u.class_ctx.size() && cls < 0; ++k)
        if (ctx_key(u.class_ctx[k]) == ctx_key(ctx)) cls = static_cast<int>(k);
      if (cls < 0) {
        cls = static_cast<int>(u.class_ctx.size());
        ctx.strategy = nullptr;  // re-pointed per strategy (class_costs)
        ctx.devices.clear();     // not read by the layer costs; the stage's devices are stage_devices[st]
        ctx.devices.shrink_to_fit();
        u.class_ctx.push_back(std::move(ctx));
      }
    }
    u.stage_class.push_back(cls);
  }
  return u;
}

cost::Strategy make_strategy(const DegreeUnit& u, const Variant& var, const ScheduleChoice& sc) {
  cost::Strategy s = make_strategy_light(u, var, sc);
  s.placement = *u.placement;
  return s;
}

cost::Strategy make_strategy_light(const DegreeUnit& u, const Variant& var, const ScheduleChoice& sc) {
  cost::Strategy s;
  // The keys the search does not enumerate (gbs, dtype, elementwise, earlystop, fp8cast, optim, ...): the unit's,
  // as the strategy-key table lists them (cost/strategy_keys.hpp); then the degree unit's and the variant's.
  cost::copy_unsearched_keys(u.proto, s);
  s.dp = u.proto.dp;
  s.tp = u.proto.tp;
  s.pp = u.proto.pp;
  s.cp = u.proto.cp;
  s.micro_batch = var.mbs;
  s.recompute = var.recompute;
  s.recompute_early_stop = s.recompute_early_stop && var.recompute == model::Recompute::full;  // its rule
  s.sequence_parallel = var.sp;
  s.zero_stage = var.zero;
  s.tp_overlap = var.overlap;
  s.schedule = sc.schedule;
  s.virtual_stages = sc.v;
  return s;
}

ClassCosts class_costs(const model::Model& m, const LayerIndex& li, const DegreeUnit& u, const cost::Strategy& s) {
  ClassCosts cc;
  cc.ctx = u.class_ctx;
  for (auto& x : cc.ctx) x.strategy = &s;
  cc.own.resize(cc.ctx.size());
  for (std::size_t k = 0; k < cc.ctx.size(); ++k) {
    cc.own[k].reserve(li.representative.size());
    for (int rep : li.representative)
      cc.own[k].push_back(cost::layer_stage_cost(m, m.layers[rep], cc.ctx[k], s.recompute));
  }
  cc.shape = cc.own;
  return cc;
}

std::size_t LayerCostMemo::Hash::operator()(const std::vector<double>& key) const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the values' bit patterns
  for (double v : key) h = (h ^ std::bit_cast<std::uint64_t>(v)) * 1099511628211ull;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

ClassCosts class_costs(const model::Model& m, const LayerIndex& li, const DegreeUnit& u, const cost::Strategy& s,
                       LayerCostMemo& memo) {
  ClassCosts cc;
  cc.ctx = u.class_ctx;
  for (auto& x : cc.ctx) x.strategy = &s;
  cc.own.resize(cc.ctx.size());
  for (std::size_t k = 0; k < cc.ctx.size(); ++k) {
    // Every number layer_stage_cost reads: the context's (ctx_key) and the strategy's (no placement or split).
    // Built in per-thread storage; copied only when the memo keeps it.
    thread_local std::vector<double> key;
    key.clear();
    std::apply([&](auto... f) { (key.push_back(static_cast<double>(f)), ...); }, ctx_key(cc.ctx[k]));
    // The strategy's part: every key the table marks enters_cost (a key left out would return stale costs).
    cost::append_cost_key(s, key);
    {
      std::lock_guard<std::mutex> lock(memo.mu);
      if (auto it = memo.rows.find(key); it != memo.rows.end()) {
        cc.own[k] = it->second;
        continue;
      }
    }
    cc.own[k].reserve(li.representative.size());
    for (int rep : li.representative)
      cc.own[k].push_back(cost::layer_stage_cost(m, m.layers[rep], cc.ctx[k], s.recompute));
    std::lock_guard<std::mutex> lock(memo.mu);
    const std::array<int, 4> group{s.dp, s.tp, s.pp, s.cp};
    if (memo.group != group || memo.rows.size() >= LayerCostMemo::kMaxRows) {  // bounded memory, hits near-by
      memo.rows.clear();
      memo.group = group;
    }
    memo.rows.emplace(key, cc.own[k]);
  }
  cc.shape = cc.own;
  return cc;
}

namespace {
ClassCosts cached_class_costs(const DegreeUnit& u, const cost::Strategy& s,
                              const std::vector<std::vector<cost::LayerStageCost>>& shape) {
  ClassCosts cc;
  cc.ctx = u.class_ctx;
  for (auto& x : cc.ctx) x.strategy = &s;
  cc.shape = shape;  // the caller's rows, not copied
  return cc;
}
}  // namespace

namespace {

// Range maximum by a sparse table (the ZeRO-3 gather buffer is the largest layer of a stage). build() reuses the
// storage of an earlier table.
struct RangeMax {
  std::vector<std::vector<double>> t;
  void build(const std::vector<double>& v) {
    std::size_t levels = 1;
    for (std::size_t w = 1; 2 * w <= v.size(); w *= 2) ++levels;
    t.resize(levels);
    t[0].assign(v.begin(), v.end());
    std::size_t l = 1;
    for (std::size_t w = 1; 2 * w <= v.size(); w *= 2, ++l) {
      const auto& prev = t[l - 1];
      auto& next = t[l];
      next.resize(v.size() - 2 * w + 1);
      for (std::size_t i = 0; i < next.size(); ++i) next[i] = std::max(prev[i], prev[i + w]);
    }
  }
  // The table level of a range of `len` ≥ 1 elements: floor(log2 len) (shared by queries of one range).
  static int level(int len) { return std::bit_width(static_cast<unsigned>(len)) - 1; }
  double query(int a, int b, int k) const {  // max over [a, b), b > a, k = level(b − a)
    return std::max(t[k][a], t[k][b - (1 << k)]);
  }
};

// Per-class prefix sums of the additive StageSums fields.
struct Prefix {
  std::vector<double> fwd, bwd, w, g, o, act, params, shared, unsharded, recomputed;
  std::vector<int> emb;
  RangeMax unsharded_max, recomputed_max;
};
// Storage of build_split_problem kept across calls of one thread (capacities reused, no per-call allocation).
struct BuildScratch {
  std::vector<Prefix> pre;
  std::vector<std::int64_t> by_shape;
};

// Fills class k's prefix sums and range-max tables from its layer costs `row`, and its time prefix `tp` in ps.
void fill_prefix(const LayerIndex& li, const std::vector<cost::LayerStageCost>& row, bool recomputes, Prefix& x,
                 std::vector<std::int64_t>& tp) {
  const int L = static_cast<int>(li.shape_of.size());
  for (auto* v : {&x.fwd, &x.bwd, &x.w, &x.g, &x.o, &x.act, &x.params, &x.shared}) v->assign(L + 1, 0.0);
  x.emb.assign(L + 1, 0);
  x.unsharded.clear();
  x.recomputed.clear();
  tp.assign(L + 1, 0);
  for (int i = 0; i < L; ++i) {
    const auto& lc = row[li.shape_of[i]];
    x.fwd[i + 1] = x.fwd[i] + lc.fwd_s;
    x.bwd[i + 1] = x.bwd[i] + lc.bwd_s;
    x.w[i + 1] = x.w[i] + lc.weight_bytes;
    x.g[i + 1] = x.g[i] + lc.grad_bytes;
    x.o[i + 1] = x.o[i] + lc.optimizer_bytes;
    x.act[i + 1] = x.act[i] + lc.activation_bytes;
    x.params[i + 1] = x.params[i] + lc.params_per_device;
    x.shared[i + 1] = x.shared[i] + lc.shared_static_bytes;
    x.unsharded.push_back(lc.unsharded_weight_bytes);
    x.recomputed.push_back(lc.recomputed_bytes);
    x.emb[i + 1] = x.emb[i] + (li.is_embedding[i] ? 1 : 0);
    tp[i + 1] = tp[i] + to_ps(lc.time_s());
  }
  x.unsharded_max.build(x.unsharded);
  if (recomputes) x.recomputed_max.build(x.recomputed);
}

}  // namespace

SplitProblem build_split_problem(const model::Model& m, const hw::Cluster& c, const LayerIndex& li,
                                 const DegreeUnit& u, const cost::Strategy& s, const ClassCosts& cc,
                                 const cost::CostOptions& opt) {
  SplitProblem p;
  build_split_problem(m, c, li, u, s, cc, opt, p);
  return p;
}

void build_split_problem(const model::Model& m, const hw::Cluster& c, const LayerIndex& li, const DegreeUnit& u,
                         const cost::Strategy& s, const ClassCosts& cc, const cost::CostOptions& opt, SplitProblem& p) {
  const int L = static_cast<int>(m.layers.size()), P = s.pp, K = static_cast<int>(cc.shape.size());
  p.layers = L;
  p.stage_class.assign(u.stage_class.begin(), u.stage_class.end());
  thread_local BuildScratch scratch;
  std::vector<Prefix>& pre = scratch.pre;
  if (static_cast<int>(pre.size()) < K) pre.resize(K);
  const bool recomputes = s.recompute != model::Recompute::none;
  p.time_prefix.resize(K);
  for (int k = 0; k < K; ++k) fill_prefix(li, cc.shape[k], recomputes, pre[k], p.time_prefix[k]);
  p.min_start.resize(P);
  // Memory feasibility of [a, b) on stage j: the cost model's stage_memory of the range's sums.
  for (int j = 0; j < P; ++j) {
    const int k = u.stage_class[j];
    const Prefix& x = pre[k];
    const cost::StageContext& ctx = cc.ctx[k];
    const auto fits = [&](int a, int b) {
      cost::StageSums sums;
      sums.fwd_s = x.fwd[b] - x.fwd[a];
      sums.bwd_s = x.bwd[b] - x.bwd[a];
      sums.weight_bytes = x.w[b] - x.w[a];
      sums.grad_bytes = x.g[b] - x.g[a];
      sums.optimizer_bytes = x.o[b] - x.o[a];
      sums.activation_bytes = x.act[b] - x.act[a];
      sums.params_per_device = x.params[b] - x.params[a];
      sums.shared_static_bytes = x.shared[b] - x.shared[a];
      const int level = RangeMax::level(b - a);
      sums.max_unsharded_weight_bytes = x.unsharded_max.query(a, b, level);
      sums.max_recomputed_bytes = recomputes ? x.recomputed_max.query(a, b, level) : 0.0;
      sums.holds_embedding = x.emb[b] - x.emb[a] > 0;
      return cost::stage_memory(ctx, j, sums).total_bytes() <= ctx.memory_usable_bytes;
    };
    // Exact shortcut: the memory of [0, b) is non-decreasing in b (sums of non-negative bytes, range maxima and
    // constants) when the tied copy, which only ranges without an embedding count, is the same for every [0, b)
    // (layer 0 is an embedding, or no layer has a tied copy). Then fits(0, L) implies fits(0, b) for every b and
    // the two-pointer row would be all zeros: one stage_memory call instead of L.
    const bool prefix_monotone = x.emb[1] > 0 || x.shared[L] == 0;
    if (L > 0 && prefix_monotone && fits(0, L)) p.min_start[j].assign(L + 1, 0);
    else min_start_from_predicate(L, fits, p.min_start[j]);
  }
  // Cut costs: p2p of the output of layer b−1 between stages j and j+1 (cached per distinct shape).
  p.cut.resize(std::max(0, P - 1));
  for (auto& row : p.cut) row.assign(L + 1, 0);
  const int shapes = static_cast<int>(li.representative.size());
  for (int j = 0; j + 1 < P; ++j) {
    std::vector<std::int64_t>& by_shape = scratch.by_shape;
    by_shape.assign(shapes, -1);
    const auto& out_row = cc.shape[u.stage_class[j]];
    for (int b = 1; b < L; ++b) {
      const int id = li.shape_of[b - 1];
      if (by_shape[id] < 0) by_shape[id] = to_ps(unit_cut_time_s(c, u, s, j, out_row[id].output_bytes, opt));
      p.cut[j][b] = by_shape[id];
    }
  }
  const std::int64_t micro = s.num_micro_batches();
  if (s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw) {
    p.weight_max = micro;
    p.weight_sum = 0;
    p.cuts_in_max = true;
  } else {
    p.weight_max = micro - 1;
    p.weight_sum = 1;
    p.cuts_in_max = false;
  }
}

EvalResult evaluate(const model::Model& m, const hw::Cluster& c, const LayerIndex& li, const DegreeUnit& u,
                    const Variant& var, const ScheduleChoice& sc, const cost::CostOptions& opt) {
  return evaluate(m, c, li, u, var, sc, opt, nullptr);
}

EvalResult evaluate(const model::Model& m, const hw::Cluster& c, const LayerIndex& li, const DegreeUnit& u,
                    const Variant& var, const ScheduleChoice& sc, const cost::CostOptions& opt,
                    const std::vector<std::vector<cost::LayerStageCost>>* shape_costs, bool reference) {
  EvalResult r;
  // Light (no placement; the search completes the kept candidates, plan/unit_memo) unless on the reference path.
  const bool light = !reference && light_estimates(c);
  cost::Strategy s = light ? make_strategy_light(u, var, sc) : make_strategy(u, var, sc);
  double objective = 0;
  if (sc.schedule == cost::Schedule::interleaved || s.pp == 1 || u.fixed_split) {
    s.split = cost::default_split(m, s.pp * s.virtual_stages);
    // Memory of Megatron's split from the cached layer costs (the cost model's StageSums / stage_memory), so
    // that configurations that cannot fit never reach the full estimate.
    const ClassCosts cc = shape_costs ? cached_class_costs(u, s, *shape_costs) : class_costs(m, li, u, s);
    const auto bounds = cost::chunk_boundaries(s);
    for (int st = 0; st < s.pp; ++st) {
      const auto& row = cc.shape[u.stage_class[st]];
      // The cost model's stage loop over the cached costs (the planner's variants recompute every block alike).
      const cost::StageSums sums =
          cost::sum_stage_layers(m, s, bounds, st, false, [&](int l, model::Recompute) -> const cost::LayerStageCost& {
            return row[li.shape_of[l]];
          }).sums;
      const auto& ctx = cc.ctx[u.stage_class[st]];
      if (cost::stage_memory(ctx, st, sums).total_bytes() > ctx.memory_usable_bytes) {
        r.reject_reason = "does not fit memory";
        r.cand.strategy = std::move(s);
        return r;
      }
    }
  } else {
    const ClassCosts cc = shape_costs ? cached_class_costs(u, s, *shape_costs) : class_costs(m, li, u, s);
    thread_local SplitProblem prob;  // storage reused across configurations (filled completely each time)
    build_split_problem(m, c, li, u, s, cc, opt, prob);
    // (The reference path solves every problem itself, so it stays an independent check of the memo.)
    const SplitResult sr = reference || !u.splits ? solve_split(prob) : solve_split(prob, *u.splits);
    r.split_solved = true;
    r.bounds_tried = sr.bounds_tried;
    if (!sr.feasible) {
      r.reject_reason = "no contiguous layer split fits memory";
      r.cand.strategy = std::move(s);
      return r;
    }
    s.split = sr.sizes;
    objective = from_ps(sr.objective);
  }
  r.estimated = true;
  cost::CostOptions with_flops = opt;
  with_flops.sample_flops = &li.flops;
  // The unit's class contexts and the variant's layer costs (the estimate is bit-identical without them).
  cost::PrebuiltStages pre = unit_prebuilt(c, u, s, opt, {}, li.shape_of, light);
  if (shape_costs) pre.shape_cost = *shape_costs;
  if (!reference) with_flops.prebuilt = &pre;
  cost::Estimate e = cost::estimate(m, c, s, with_flops);
  if (!e.fits) {
    r.reject_reason = "does not fit memory";
    r.cand.strategy = std::move(s);
    r.cand.estimate = std::move(e);
    return r;
  }
  r.ok = true;
  r.cand.strategy = std::move(s);
  r.cand.estimate = std::move(e);
  r.cand.placement_label = u.placement_label;
  r.cand.split_objective_s = objective;
  return r;
}

}  // namespace strata::plan::detail
