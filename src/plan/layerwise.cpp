// plan/layerwise: the Galvatron-BMW search (layerwise.hpp, docs/planner.md §Per-layer strategies). Per
// configuration (gbs, pp, mbs): per-stage tables of every layer's time and memory under every choice (from
// cost/layerwise), the memory-balanced split p_m, the stage DP on each range, BMW's boundary moves from the
// slowest stage while the pipeline objective improves (seed_001 Algorithm 2), then strata's exact split with the
// choices fixed and the DP again, until nothing improves; the best plan is costed by cost::estimate.
#include "strata/plan/layerwise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>

#include "strata/core/error.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/layerwise.hpp"
#include "strata/cost/stage.hpp"
#include "strata/plan/split.hpp"

namespace strata::plan {
namespace {

using Ps = std::int64_t;

// One configuration's fixed inputs.
struct Config {
  std::int64_t gbs = 0, mbs = 0, micro = 0;
  int pp = 1, group = 1;
  int zero = 0;                 // ZeRO stage of the plain-DP layers (0, or 2: optimizer states and gradients sharded)
  double lower_bound_s = 0;
};

// Every layer's numbers under every choice on one stage (its devices, its in-flight multiplicity).
struct StageTable {
  std::vector<std::vector<Ps>> time_ps;       // [layer][choice]: round time + amortised sync/optimizer
  std::vector<std::vector<double>> mem;       // [layer][choice]: static·versions + activations·in-flight
  std::vector<std::vector<Ps>> trans_ps;      // [layer][a·K + b]: Slice-Gather before the layer
  double budget_bytes = 0;                    // usable − workspace − the largest buffer/recompute reserve
  double free_bytes = 0;                      // usable − workspace
  std::vector<double> recompute_of;           // [choice]: its largest re-materialisation (stage_memory's term)
  std::vector<double> buffers_of;             // [choice]: SDP gather buffers, 2 × its largest layer
};

struct ChoiceSpace {
  std::vector<cost::LayerChoice> choices;
  std::vector<int> layout_of;
  std::vector<int> layout_rep;  // a choice of each layout
};

ChoiceSpace make_space(std::vector<cost::LayerChoice> choices) {
  ChoiceSpace sp;
  sp.choices = std::move(choices);
  for (std::size_t s = 0; s < sp.choices.size(); ++s) {
    int k = -1;
    for (std::size_t j = 0; j < sp.layout_rep.size() && k < 0; ++j) {
      const auto& r = sp.choices[sp.layout_rep[j]];
      if (r.tp == sp.choices[s].tp && r.tp_order == sp.choices[s].tp_order) k = static_cast<int>(j);
    }
    if (k < 0) k = static_cast<int>(sp.layout_rep.size()), sp.layout_rep.push_back(static_cast<int>(s));
    sp.layout_of.push_back(k);
  }
  return sp;
}

// overlapped(c, x) = max + (γ − 1)·min (Galvatron's contention slowdown, notes_001 §4.2; cost/zero.hpp).
double exposed_behind(double compute_s, double comm_s, double gamma) {
  return std::max(compute_s, comm_s) + (gamma - 1.0) * std::min(compute_s, comm_s) - compute_s;
}

StageTable build_table(const model::Model& m, const cost::Strategy& px, cost::LayerwiseCoster& coster,
                       const ChoiceSpace& sp, int stage, const cost::CostConstants& k) {
  const int L = static_cast<int>(m.layers.size()), S = static_cast<int>(sp.choices.size());
  const int K = static_cast<int>(sp.layout_rep.size());
  const std::int64_t micro = px.num_micro_batches();
  const double in_flight = cost::in_flight_micro_batches(px.schedule, px.pp, stage, micro, 1);
  const int versions = cost::weight_versions(px.schedule, px.pp, stage);
  StageTable t;
  t.time_ps.assign(L, std::vector<Ps>(S));
  t.mem.assign(L, std::vector<double>(S));
  t.trans_ps.assign(L, std::vector<Ps>(static_cast<std::size_t>(K) * K, 0));
  double reserve_buffers = 0, reserve_recompute = 0;
  t.recompute_of.assign(S, 0.0);
  t.buffers_of.assign(S, 0.0);
  const int G = static_cast<int>(coster.group.size());
  // Layers of one cost shape share their rows (a chain of identical blocks is costed once).
  std::vector<int> rep_of(L);
  for (int l = 0; l < L; ++l) {
    rep_of[l] = l;
    for (int r = 0; r < l && rep_of[l] == l; ++r)
      if (rep_of[r] == r && model::same_cost_shape(m.layers[r], m.layers[l])) rep_of[l] = r;
  }
  for (int l = 0; l < L; ++l) {
    if (rep_of[l] != l) {
      t.time_ps[l] = t.time_ps[rep_of[l]];
      t.mem[l] = t.mem[rep_of[l]];
    }
    for (int s = 0; s < S && rep_of[l] == l; ++s) {
      const auto& ch = sp.choices[s];
      const cost::LayerStageCost& lc = coster.cost(l, ch);
      const cost::StageContext& ctx = coster.context(ch);
      // Per-iteration terms amortised over the m rounds: a plain-DP layer's gradient all-reduce behind its own
      // last backward (Galvatron's per-layer overlap) and its optimizer step.
      double per_iter = cost::optimizer_step_time(ctx, lc.params_per_device);
      if (ch.data_parallel == cost::LayerDataParallel::dp && G / ch.tp > 1) {
        const double ar = ctx.dp_allreduce_latency_s +
                          ctx.dp_allreduce_s_per_byte * lc.params_per_device * k.grad_comm_bytes_per_param;
        per_iter += exposed_behind(lc.bwd_s, ar, k.overlap_slowdown);
      }
      t.time_ps[l][s] = to_ps(lc.time_s() + per_iter / static_cast<double>(micro));
      t.mem[l][s] = lc.weight_bytes * versions + lc.grad_bytes + lc.optimizer_bytes + lc.shared_static_bytes +
                    lc.activation_bytes * in_flight;
      if (ch.data_parallel == cost::LayerDataParallel::sdp && G / ch.tp > 1)
        t.buffers_of[s] = std::max(t.buffers_of[s], 2.0 * lc.unsharded_weight_bytes);
      t.recompute_of[s] = std::max(t.recompute_of[s], lc.recomputed_bytes);
      reserve_buffers = std::max(reserve_buffers, t.buffers_of[s]);
      reserve_recompute = std::max(reserve_recompute, t.recompute_of[s]);
    }
    if (l == 0) continue;
    if (int r = rep_of[l - 1]; r + 1 < l && r + 1 > 0) {  // the same output shape was transformed before layer r+1
      t.trans_ps[l] = t.trans_ps[r + 1];
      continue;
    }
    const double bytes = coster.output_bytes_per_sample(l - 1, sp.choices[sp.layout_rep[0]]);
    for (int a = 0; a < K; ++a)
      for (int b = 0; b < K; ++b)
        if (a != b)
          t.trans_ps[l][a * K + b] =
              to_ps(coster.transform(sp.choices[sp.layout_rep[a]], sp.choices[sp.layout_rep[b]], bytes).time_s());
  }
  t.free_bytes = coster.context(sp.choices[0]).memory_usable_bytes - k.workspace_bytes;
  t.budget_bytes = t.free_bytes - reserve_buffers - reserve_recompute;
  return t;
}

struct StageSolution {
  bool feasible = false;
  Ps time_ps = 0;
  std::vector<int> choice;
};

// The stage DP on layers [a, b) with the max terms of stage_memory (one layer's recompute, the SDP buffers)
// reserved up front at `recompute_cap` / `buffers_cap` (choices above them excluded); memory in `units` parts of
// the rest (rounded down: a relaxation, so an answer that fits in bytes is the optimum of this reserve), re-solved
// with a smaller budget while the exact bytes of the answer exceed it.
StageSolution solve_reserved(const StageTable& t, const ChoiceSpace& sp, int a, int b, int units, double recompute_cap,
                             double buffers_cap, std::int64_t& runs) {
  StageSolution out;
  const double budget = t.free_bytes - recompute_cap - buffers_cap;
  if (!(budget > 0)) return out;
  const int S = static_cast<int>(sp.choices.size()), K = static_cast<int>(sp.layout_rep.size());
  const double unit = budget / units;
  StageDpProblem p;
  p.layers = b - a;
  p.choices = S;
  p.layouts = K;
  p.layout_of = sp.layout_of;
  p.budget_units = units;
  for (int l = a; l < b; ++l) {
    std::vector<int> mu(S);
    std::vector<Ps> tm = t.time_ps[l];
    for (int s = 0; s < S; ++s) {
      mu[s] = static_cast<int>(std::min(1e9, std::floor(t.mem[l][s] / unit)));
      if (t.recompute_of[s] > recompute_cap || t.buffers_of[s] > buffers_cap) tm[s] = kInfinitePs;
    }
    p.time_ps.push_back(std::move(tm));
    p.mem_units.push_back(std::move(mu));
    p.trans_ps.push_back(t.trans_ps[l]);
  }
  for (int attempt = 0; attempt < 6 && p.budget_units >= 0; ++attempt) {
    ++runs;
    const StageDpResult r = solve_stage_dp(p);
    if (!r.feasible) return out;
    double bytes = 0;
    for (int i = 0; i < p.layers; ++i) bytes += t.mem[a + i][r.choice[i]];
    if (bytes <= budget) {
      out.feasible = true;
      out.time_ps = r.time_ps;
      out.choice = r.choice;
      return out;
    }
    p.budget_units -= std::max(1, static_cast<int>(std::ceil((bytes - budget) / unit)));
  }
  return out;
}

// The best over the reserves: every pair of distinct (recompute, buffers) caps of the choices, a pair skipped
// when it admits no more choices than a cheaper pair.
StageSolution solve_range(const StageTable& t, const ChoiceSpace& sp, int a, int b, int units, std::int64_t& runs) {
  std::vector<double> rc{0.0}, bf{0.0};
  for (double x : t.recompute_of) rc.push_back(x);
  for (double x : t.buffers_of) bf.push_back(x);
  for (auto* v : {&rc, &bf}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  std::vector<std::pair<double, std::pair<double, double>>> caps;
  for (double r : rc)
    for (double x : bf) caps.push_back({r + x, {r, x}});
  std::sort(caps.begin(), caps.end());
  std::vector<std::vector<char>> tried;
  StageSolution best;
  for (const auto& [sum, cap] : caps) {
    std::vector<char> allowed(sp.choices.size());
    for (std::size_t s = 0; s < allowed.size(); ++s)
      allowed[s] = t.recompute_of[s] <= cap.first && t.buffers_of[s] <= cap.second;
    bool dominated = false;
    for (const auto& prev : tried) {
      bool sub = true;  // allowed ⊆ prev (prev had a smaller or equal reserve)
      for (std::size_t s = 0; s < allowed.size() && sub; ++s) sub = !allowed[s] || prev[s];
      dominated = dominated || sub;
    }
    if (dominated) continue;
    tried.push_back(allowed);
    StageSolution r = solve_reserved(t, sp, a, b, units, cap.first, cap.second, runs);
    if (r.feasible && (!best.feasible || r.time_ps < best.time_ps)) best = std::move(r);
  }
  return best;
}

// The pipeline of one configuration: stage ranges, their DP solutions, the objective.
struct ConfigSearch {
  const model::Model& m;
  const hw::Cluster& c;
  const ChoiceSpace& sp;
  Config cf;
  int units = 256;
  cost::Strategy px;                     // the stages as one uniform strategy (dp = G, tp = 1)
  std::vector<std::vector<int>> devices; // per stage
  std::vector<StageTable> tables;
  std::vector<std::vector<Ps>> cut;      // [j][b]: p2p when stage j ends before layer b
  std::map<std::tuple<int, int, int>, StageSolution> memo;
  std::int64_t runs = 0;

  const StageSolution& stage(int j, int a, int b) {
    const auto key = std::make_tuple(j, a, b);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
    return memo.emplace(key, solve_range(tables[j], sp, a, b, units, runs)).first->second;
  }
  // (m − 1)·max T + Σ T + Σ e (AMP eq. 5 / seed_001 Eq. 5), kInfinitePs when a stage does not fit.
  Ps objective(const std::vector<int>& sizes, std::vector<Ps>* times = nullptr) {
    Ps mx = 0, sum = 0;
    int a = 0;
    for (std::size_t j = 0; j < sizes.size(); ++j) {
      const StageSolution& s = stage(static_cast<int>(j), a, a + sizes[j]);
      if (!s.feasible) return kInfinitePs;
      mx = std::max(mx, s.time_ps);
      sum += s.time_ps;
      if (times) times->push_back(s.time_ps);
      a += sizes[j];
      if (j + 1 < sizes.size()) sum += cut[j][a];
    }
    return (cf.micro - 1) * mx + sum;
  }
};

// p_m: the contiguous split with the least maximum stage memory, each layer at its least-memory choice.
std::vector<int> memory_balanced_split(const ConfigSearch& cs) {
  const int L = static_cast<int>(cs.m.layers.size()), P = cs.cf.pp;
  SplitProblem p;
  p.layers = L;
  for (int j = 0; j < P; ++j) {
    std::vector<std::int64_t> pre(L + 1, 0);
    for (int l = 0; l < L; ++l) {
      const auto& row = cs.tables[j].mem[l];
      pre[l + 1] = pre[l] + static_cast<std::int64_t>(*std::min_element(row.begin(), row.end()) / 1024.0);
    }
    p.time_prefix.push_back(std::move(pre));
    p.stage_class.push_back(j);
    p.min_start.push_back(std::vector<int>(L + 1, 0));
  }
  p.cut.assign(std::max(0, P - 1), std::vector<std::int64_t>(L + 1, 0));
  p.weight_max = 1;
  p.weight_sum = 0;
  return solve_split(p).sizes;
}

// BMW (seed_001 Algorithm 2, PP_Partition_Adjust + Validate): move a boundary layer of the slowest stage to a
// neighbour while the pipeline objective improves (every stage still fits: the DP answers only fitting plans).
Ps bmw_moves(ConfigSearch& cs, std::vector<int>& sizes, Ps obj) {
  const int P = cs.cf.pp, L = static_cast<int>(cs.m.layers.size());
  for (int iter = 0; iter < 4 * L && P > 1; ++iter) {
    std::vector<Ps> times;
    cs.objective(sizes, &times);
    const int jmax = static_cast<int>(std::max_element(times.begin(), times.end()) - times.begin());
    std::vector<int> best;
    Ps best_obj = obj;
    for (int dir : {-1, 1}) {
      const int to = jmax + dir;
      if (to < 0 || to >= P || sizes[jmax] <= 1) continue;
      std::vector<int> cand = sizes;
      --cand[jmax];
      ++cand[to];
      const Ps o = cs.objective(cand);
      if (o < best_obj) best_obj = o, best = std::move(cand);
    }
    if (best.empty()) break;
    sizes = std::move(best);
    obj = best_obj;
  }
  return obj;
}

// strata's exact split (plan/split) with every layer's choice fixed at the current plan's: per-stage times and
// memory of those choices, the p2p cuts, 1F1B's objective.
std::vector<int> exact_split_fixed(ConfigSearch& cs, const std::vector<int>& sizes) {
  const int L = static_cast<int>(cs.m.layers.size()), P = cs.cf.pp;
  std::vector<int> pick(L);
  for (int j = 0, a = 0; j < P; a += sizes[j], ++j) {
    const auto& s = cs.stage(j, a, a + sizes[j]);
    for (int i = 0; i < sizes[j]; ++i) pick[a + i] = s.choice[i];
  }
  const int K = static_cast<int>(cs.sp.layout_rep.size());
  SplitProblem p;
  p.layers = L;
  for (int j = 0; j < P; ++j) {
    const StageTable& t = cs.tables[j];
    std::vector<std::int64_t> pre(L + 1, 0);
    std::vector<double> mem(L + 1, 0);
    for (int l = 0; l < L; ++l) {
      const Ps tr = l > 0 ? t.trans_ps[l][cs.sp.layout_of[pick[l - 1]] * K + cs.sp.layout_of[pick[l]]] : 0;
      pre[l + 1] = pre[l] + t.time_ps[l][pick[l]] + tr;
      mem[l + 1] = mem[l] + t.mem[l][pick[l]];
    }
    p.time_prefix.push_back(std::move(pre));
    p.stage_class.push_back(j);
    p.min_start.push_back(min_start_from_predicate(L, [&](int a, int b) { return mem[b] - mem[a] <= t.budget_bytes; }));
  }
  p.cut = cs.cut;
  p.weight_max = cs.cf.micro - 1;
  p.weight_sum = 1;
  const SplitResult r = solve_split(p);
  return r.feasible ? r.sizes : sizes;
}

// The configuration's stage tables, cuts and the lower bound ((m − 1)/p + 1)·Σ_l min_s t(l, s) (max T ≥ Σ T/p).
void prepare(ConfigSearch& cs, const cost::CostOptions& opt) {
  const int L = static_cast<int>(cs.m.layers.size()), P = cs.cf.pp, G = cs.cf.group;
  const cost::CostConstants& k = opt.constants ? *opt.constants : cost::builtin_constants();
  cs.px.dp = G;
  cs.px.tp = 1;
  cs.px.pp = P;
  cs.px.micro_batch = cs.cf.mbs;
  cs.px.global_batch = cs.cf.gbs;
  cs.px.zero_stage = cs.cf.zero;
  std::vector<double> out_bytes(L, 0);
  for (int j = 0; j < P; ++j) {
    std::vector<int> devs;
    for (int d = 0; d < G; ++d) devs.push_back(j * G + d);
    cost::LayerwiseCoster coster(cs.m, cs.c, cs.px, devs, static_cast<std::int64_t>(G) * cs.cf.mbs, opt);
    cs.tables.push_back(build_table(cs.m, cs.px, coster, cs.sp, j, k));
    if (j == 0)
      for (int l = 0; l < L; ++l) out_bytes[l] = coster.output_bytes_per_sample(l, cs.sp.choices[0]);
    cs.devices.push_back(std::move(devs));
  }
  cs.cut.assign(std::max(0, P - 1), std::vector<Ps>(L + 1, 0));
  std::map<std::pair<int, double>, Ps> seen;
  for (int j = 0; j + 1 < P; ++j)
    for (int b = 1; b < L; ++b) {
      const double bytes = out_bytes[b - 1] * static_cast<double>(cs.cf.mbs);
      auto it = seen.find({j, bytes});
      if (it == seen.end())
        it = seen.emplace(std::make_pair(j, bytes),
                          to_ps(cost::p2p_time(cs.c, cs.px, cs.devices[j], cs.devices[j + 1], bytes, opt))).first;
      cs.cut[j][b] = it->second;
    }
  double w = 0;
  for (int l = 0; l < L; ++l) {
    const auto& row = cs.tables[0].time_ps[l];
    w += from_ps(*std::min_element(row.begin(), row.end()));
  }
  cs.cf.lower_bound_s = (static_cast<double>(cs.cf.micro - 1) / P + 1.0) * w;
}

// Memory-balanced split → DP per stage → BMW moves → exact split with the choices fixed → again, while the
// objective improves. Returns the sizes (empty when nothing fits).
std::vector<int> search_config(ConfigSearch& cs, bool bmw) {
  std::vector<int> sizes = memory_balanced_split(cs);
  if (sizes.empty()) return {};
  Ps obj = cs.objective(sizes);
  if (obj >= kInfinitePs) return {};
  if (!bmw) return sizes;
  for (int round = 0; round < 4; ++round) {
    obj = bmw_moves(cs, sizes, obj);
    std::vector<int> next = exact_split_fixed(cs, sizes);
    const Ps o = cs.objective(next);
    if (o >= obj) break;
    sizes = std::move(next);
    obj = o;
  }
  return sizes;
}

cost::Strategy to_strategy(ConfigSearch& cs, const std::vector<int>& sizes, const model::Model& m,
                           const hw::Cluster& c, hw::Dtype dtype) {
  cost::Strategy s;
  s.dp = s.tp = 0;
  s.pp = cs.cf.pp;
  s.micro_batch = cs.cf.mbs;
  s.global_batch = cs.cf.gbs;
  s.dtype = dtype;
  s.zero_stage = cs.cf.zero;
  for (int j = 0, a = 0; j < cs.cf.pp; a += sizes[j], ++j) {
    cost::StageChoice st;
    st.devices = cs.devices[j];
    st.dp = cs.cf.group;
    st.tp = 1;
    st.layers = sizes[j];
    for (int ch : cs.stage(j, a, a + sizes[j]).choice) st.layer_choices.push_back(cs.sp.choices[ch]);
    s.stages.push_back(std::move(st));
  }
  return cost::complete_strategy(std::move(s), m, c);
}

std::vector<Config> configs_for(const model::Model& m, const hw::Cluster& c, const LayerwiseOptions& opt,
                                std::int64_t gbs) {
  std::vector<Config> out;
  const int N = c.num_devices(), L = static_cast<int>(m.layers.size());
  for (int pp = 1; pp <= N && pp <= L; pp *= 2) {
    if (N % pp != 0 || pp < opt.min_pp || (opt.max_pp > 0 && pp > opt.max_pp)) continue;
    const int G = N / pp;
    if ((G & (G - 1)) != 0 || gbs % G != 0) continue;  // Galvatron's groups: powers of 2
    const std::int64_t cap = opt.max_micro_batches > 0 ? opt.max_micro_batches
                             : opt.global_batch == 0 ? (pp == 1 ? 1 : 2 * static_cast<std::int64_t>(pp))
                                                     : 0;
    for (std::int64_t mbs = 1; mbs <= gbs / G; ++mbs) {
      if ((gbs / G) % mbs != 0) continue;
      const std::int64_t micro = gbs / (G * mbs);
      if (cap > 0 && micro > cap) continue;
      out.push_back({gbs, mbs, micro, pp, G, 0, 0.0});
      if (G > 1 && opt.zero2) out.push_back({gbs, mbs, micro, pp, G, 2, 0.0});
    }
  }
  return out;
}

}  // namespace

std::vector<std::int64_t> auto_batch_sizes(std::int64_t max_gbs) {
  std::vector<std::int64_t> out;
  for (std::int64_t b = 8; b <= max_gbs;) {
    out.push_back(b);
    // Step 8 up to 64, then ×1.25 rounded to a multiple of 8.
    b = b < 64 ? b + 8 : (b * 5 / 4 + 7) / 8 * 8;
  }
  return out;
}

LayerwisePlan plan_layerwise(const model::Model& m, const hw::Cluster& c, const LayerwiseOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  if (opt.memory_units < 8) throw core::InputError("plan: layerwise memory units must be >= 8");
  if (const std::string why = cost::dtype_unsupported(opt.dtype, c); !why.empty())
    throw core::InputError("plan: --dtype: " + why);
  LayerwisePlan best;
  const std::vector<std::int64_t> batches =
      opt.global_batch > 0 ? std::vector<std::int64_t>{opt.global_batch} : auto_batch_sizes(opt.max_global_batch);
  std::map<int, ChoiceSpace> spaces;  // per group size
  cost::CostOptions copt = opt.cost;
  const model::SampleFlops flops = model::sample_flops(m);
  copt.sample_flops = &flops;
  int misses = 0;
  for (std::int64_t gbs : batches) {
    std::vector<std::unique_ptr<ConfigSearch>> searches;
    for (const Config& cf : configs_for(m, c, opt, gbs)) {
      auto it = spaces.find(cf.group);
      if (it == spaces.end()) it = spaces.emplace(cf.group, make_space(layer_choice_space(m, cf.group, opt.space))).first;
      if (it->second.choices.empty()) continue;
      searches.push_back(std::make_unique<ConfigSearch>(ConfigSearch{m, c, it->second, cf, opt.memory_units, {}, {}, {}, {}, {}, 0}));
      searches.back()->px.dtype = opt.dtype;
      prepare(*searches.back(), copt);
    }
    std::stable_sort(searches.begin(), searches.end(), [](const auto& a, const auto& b) {
      return a->cf.lower_bound_s < b->cf.lower_bound_s;
    });
    bool any = false;
    for (auto& csp : searches) {
      ConfigSearch& cs = *csp;
      ++best.configs;
      const double best_rate = best.found ? best.estimate.samples_per_s : 0;
      if (cs.cf.lower_bound_s > 0 && static_cast<double>(gbs) / cs.cf.lower_bound_s <= best_rate) continue;
      const std::vector<int> sizes = search_config(cs, opt.bmw);
      best.dp_runs += cs.runs;
      if (sizes.empty()) continue;
      cost::Strategy s = to_strategy(cs, sizes, m, c, opt.dtype);
      cost::Estimate e = cost::estimate(m, c, s, copt);
      if (!e.fits) continue;
      any = true;
      if (!best.found || e.samples_per_s > best.estimate.samples_per_s) {
        best.found = true;
        best.strategy = std::move(s);
        best.estimate = std::move(e);
      }
    }
    // --gbs auto stops after two batch sizes in a row where nothing fits (seed_001 Algorithm 1).
    misses = any ? 0 : misses + 1;
    if (best.found && misses >= 2) break;
  }
  best.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return best;
}

std::optional<PlanResult> plan_auto_gbs(const model::Model& m, const hw::Cluster& c, PlanOptions opt,
                                        std::int64_t max_gbs) {
  std::optional<PlanResult> best;
  if (opt.max_micro_batches == 0) opt.max_micro_batches = -1;
  int misses = 0;
  for (std::int64_t gbs : auto_batch_sizes(max_gbs)) {
    opt.global_batch = gbs;
    try {
      PlanResult r = plan(m, c, opt);
      misses = 0;
      if (!best || r.top.front().estimate.samples_per_s > best->top.front().estimate.samples_per_s) best = std::move(r);
    } catch (const core::InputError&) {
      if (++misses >= 2) break;  // nothing fits this batch size (or the next)
    }
  }
  return best;
}

std::vector<std::string> describe_layer_choices(const cost::Strategy& s) {
  std::vector<std::string> out;
  if (cost::is_uniform(s)) {
    out.push_back("uniform: " + cost::to_cli_string(s));
    return out;
  }
  int first = 0;
  for (std::size_t j = 0; j < s.stages.size(); ++j) {
    const auto& st = s.stages[j];
    cost::Strategy one;
    std::string text;
    if (st.layer_choices.empty()) {
      text = fmt::format("every layer tp{}", st.tp);
    } else {
      // Runs of equal choices, written as the strategy syntax writes them.
      for (std::size_t i = 0; i < st.layer_choices.size();) {
        std::size_t k = i;
        while (k < st.layer_choices.size() && st.layer_choices[k] == st.layer_choices[i]) ++k;
        const auto& lc = st.layer_choices[i];
        std::string ch = fmt::format("tp{}", lc.tp);
        if (lc.data_parallel == cost::LayerDataParallel::sdp) ch += ".sdp";
        if (lc.recompute != model::Recompute::none) ch += fmt::format(".{}", model::to_string(lc.recompute));
        if (lc.tp_order == cost::TpOrder::strided) ch += ".strided";
        text += fmt::format("{}{}{}", text.empty() ? "" : " + ", ch, k - i > 1 ? fmt::format("*{}", k - i) : "");
        i = k;
      }
    }
    out.push_back(fmt::format("stage {} (layers {}-{}, {} devices): {}", j, first, first + st.layers - 1,
                              st.dp * st.tp, text));
    first += st.layers;
  }
  return out;
}

}  // namespace strata::plan
