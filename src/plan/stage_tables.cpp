// plan/stage_tables: the per-stage search's tables (stage_tables.hpp), its candidate model (candidate_time: the
// cost/per_stage closed form on the tables) and the brute-force reference the tests compare the DP with.
#include "stage_tables.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/per_stage.hpp"
#include "strata/cost/reshard.hpp"
#include "strata/cost/stage.hpp"
#include "strata/core/units.hpp"

namespace strata::plan {
namespace {

using core::kInf;

// Devices of cluster type `type` in node-major order, and the fewest GPUs a node of that type has.
std::vector<int> devices_of_type(const hw::Cluster& c, int type, int& gpus_per_node) {
  std::vector<int> out;
  gpus_per_node = 0;
  for (const auto& n : c.nodes) {
    int here = 0;
    for (int d = n.first_device; d < n.first_device + n.num_devices; ++d)
      if (c.devices[d].gpu_type == type) out.push_back(d), ++here;
    if (here > 0) gpus_per_node = gpus_per_node == 0 ? here : std::min(gpus_per_node, here);
  }
  return out;
}

bool tp_allowed(const model::Model& m, int tp) {
  for (const auto& l : m.layers)
    if (!model::tensor_parallel_problem(l, tp).empty()) return false;
  return true;
}

cost::Strategy local_strategy(const StageSearchOptions& opt, std::int64_t mbs, const StageConfig& k, int depth_cap) {
  cost::Strategy s;
  s.dp = k.dp;
  s.tp = k.tp;
  s.pp = depth_cap;  // stage index depth_cap − d has d stages from it to the end (in-flight, weight versions)
  s.micro_batch = mbs;
  s.global_batch = opt.global_batch;
  s.schedule = opt.schedule;
  s.zero_stage = opt.zero_stage;
  s.recompute = opt.recompute;
  s.dtype = opt.dtype;
  s.eager_elementwise = opt.eager_elementwise;
  return s;
}

// Per-layer costs of one configuration (distinct layer shapes costed once).
std::vector<cost::LayerStageCost> layer_costs(const model::Model& m, const cost::StageContext& ctx,
                                              model::Recompute mode) {
  std::vector<cost::LayerStageCost> out;
  out.reserve(m.layers.size());
  for (std::size_t l = 0; l < m.layers.size(); ++l) {
    std::size_t twin = l;
    for (std::size_t k = 0; k < l && twin == l; ++k)
      if (model::same_cost_shape(m.layers[k], m.layers[l])) twin = k;
    out.push_back(twin < l ? out[twin] : cost::layer_stage_cost(m, m.layers[l], ctx, mode));
  }
  return out;
}

// Range tables of configuration k: time, sync and the deepest position whose memory fits.
void fill_ranges(StageTables& T, int k, const model::Model& m, const cost::StageContext& ctx,
                 const std::vector<cost::LayerStageCost>& lc) {
  const int L = T.L;
  T.t[k].assign(static_cast<std::size_t>(L + 1) * (L + 1), kInf);
  T.sync[k].assign(T.t[k].size(), kInf);
  T.fit_depth[k].assign(T.t[k].size(), 0);
  for (int a = 0; a < L; ++a) {
    cost::StageSums sums;
    for (int b = a + 1; b <= L; ++b) {
      sums.add(lc[b - 1], model::is_embedding(m.layers[b - 1].kind));
      const auto r = T.range(a, b);
      T.t[k][r] = sums.fwd_s + sums.bwd_s;
      T.sync[k][r] = cost::dp_sync_exposed_time(ctx, sums.params_per_device, sums.bwd_s) +
                     cost::optimizer_step_time(ctx, sums.params_per_device);
      int depth = 0;
      while (depth < T.D && cost::stage_memory(ctx, T.D - depth - 1, sums).total_bytes() <= ctx.memory_usable_bytes)
        ++depth;
      T.fit_depth[k][r] = static_cast<std::uint8_t>(depth);
      if (depth == 0) break;  // longer ranges hold more: none of them fits either
    }
  }
}

}  // namespace

double StageTables::stage_q(int c, int a, int b) const {
  const auto r = range(a, b);
  const double reps = static_cast<double>(M) / cfg[c].dp;  // m_i
  switch (sched) {
    case cost::Schedule::pipedream: return static_cast<double>(M) * (t[c][r] + sync[c][r]) / cfg[c].dp;
    case cost::Schedule::two_bw: return reps * t[c][r] + sync[c][r];
    default: return (reps - 1.0) * t[c][r] + sync[c][r];
  }
}

std::shared_ptr<const StageTables> build_stage_tables(const model::Model& m, const hw::Cluster& c,
                                                      const StageSearchOptions& opt, std::int64_t mbs) {
  auto T = std::make_shared<StageTables>();
  T->sched = opt.schedule;
  T->mbs = mbs;
  T->M = opt.global_batch / mbs;
  T->L = static_cast<int>(m.layers.size());
  T->D = std::min({T->L, c.num_devices(), 255});
  if (opt.max_stages > 0) T->D = std::min(T->D, opt.max_stages);
  T->type_slot.assign(c.gpu_types.size(), -1);
  std::vector<std::vector<int>> devs;
  std::vector<int> gpn;
  for (std::size_t ty = 0; ty < c.gpu_types.size(); ++ty) {
    int g = 0;
    auto d = devices_of_type(c, static_cast<int>(ty), g);
    if (d.empty()) continue;
    T->type_slot[ty] = static_cast<int>(T->types.size());
    T->types.push_back(static_cast<int>(ty));
    T->type_count.push_back(static_cast<int>(d.size()));
    T->stride.push_back(T->U);
    T->U *= static_cast<int>(d.size()) + 1;
    devs.push_back(std::move(d));
    gpn.push_back(g);
  }
  std::vector<std::vector<int>> cfg_devices;
  for (std::size_t slot = 0; slot < T->types.size(); ++slot)
    for (int tp = 1; tp <= gpn[slot]; ++tp) {
      if (gpn[slot] % tp != 0 || (opt.max_tp > 0 && tp > opt.max_tp) || !tp_allowed(m, tp)) continue;
      for (int dp = 1; dp * tp <= T->type_count[slot]; ++dp) {
        if (opt.global_batch % (static_cast<std::int64_t>(dp) * mbs) != 0) continue;
        T->cfg.push_back({T->types[slot], dp, tp});
        cfg_devices.emplace_back(devs[slot].begin(), devs[slot].begin() + dp * tp);
      }
    }
  const int C = T->C();
  T->t.resize(C);
  T->sync.resize(C);
  T->fit_depth.resize(C);
  std::vector<double> out_bytes(static_cast<std::size_t>(T->L) + 1, 0.0);
  for (int k = 0; k < C; ++k) {
    const cost::Strategy local = local_strategy(opt, mbs, T->cfg[k], T->D);
    const cost::StageContext ctx = cost::make_stage_context(m, c, local, cfg_devices[k], opt.cost);
    const auto lc = layer_costs(m, ctx, opt.recompute);
    fill_ranges(*T, k, m, ctx, lc);
    if (k == 0)
      for (int b = 1; b <= T->L; ++b) out_bytes[b] = lc[b - 1].output_bytes;
  }
  // Boundaries: the receiver of the same type as the sender sits on the devices after the sender's (when there
  // are enough), as complete_strategy deals devices to consecutive stages of one type.
  T->e.assign(static_cast<std::size_t>(C) * C * (T->L + 1), 0.0);
  std::map<std::tuple<int, int, double>, double> memo;
  for (int a = 0; a < C; ++a)
    for (int b = 0; b < C; ++b) {
      std::vector<int> to = cfg_devices[b];
      const int slot = T->type_slot[T->cfg[b].gpu_type];
      if (T->cfg[a].gpu_type == T->cfg[b].gpu_type &&
          T->cfg[a].devices() + T->cfg[b].devices() <= T->type_count[slot])
        to.assign(devs[slot].begin() + T->cfg[a].devices(),
                  devs[slot].begin() + T->cfg[a].devices() + T->cfg[b].devices());
      for (int cut = 1; cut < T->L; ++cut) {
        const auto key = std::make_tuple(a, b, out_bytes[cut]);
        auto it = memo.find(key);
        if (it == memo.end())
          it = memo.emplace(key, cost::reshard_time(c, {cfg_devices[a], T->cfg[a].dp, T->cfg[a].tp},
                                                    {to, T->cfg[b].dp, T->cfg[b].tp}, out_bytes[cut], opt.cost))
                   .first;
        T->e[(static_cast<std::size_t>(a) * C + b) * (T->L + 1) + cut] = it->second;
      }
    }
  return T;
}

const std::vector<StageConfig>& table_configs(const StageTables& t) { return t.cfg; }

double candidate_time(const StageTables& T, const std::vector<int>& configs, const std::vector<int>& sizes) {
  const int p = static_cast<int>(configs.size());
  if (p < 1 || p > T.D || sizes.size() != configs.size()) return kInf;
  std::vector<int> used(T.types.size(), 0), r(p);
  std::vector<double> t(p), sync(p), e(p - 1);
  int a = 0;
  for (int i = 0; i < p; ++i) {
    const auto& k = T.cfg[configs[i]];
    const int slot = T.type_slot[k.gpu_type];
    used[slot] += k.devices();
    if (used[slot] > T.type_count[slot] || sizes[i] < 1 || a + sizes[i] > T.L) return kInf;
    const auto rg = T.range(a, a + sizes[i]);
    if (T.fit_depth[configs[i]][rg] < p - i) return kInf;
    t[i] = T.t[configs[i]][rg];
    sync[i] = T.sync[configs[i]][rg];
    r[i] = k.dp;
    a += sizes[i];
    if (i + 1 < p) e[i] = T.boundary(configs[i], configs[i + 1], a);
  }
  if (a != T.L) return kInf;
  return cost::per_stage_iteration_time(T.sched, T.M, r, t, e, sync);
}

double brute_force_best_time(const StageTables& T) {
  double best = kInf;
  std::vector<int> configs, sizes, used(T.types.size(), 0);
  std::function<void(int)> rec = [&](int a) {
    if (a == T.L) {
      best = std::min(best, candidate_time(T, configs, sizes));
      return;
    }
    if (static_cast<int>(configs.size()) == T.D) return;
    for (int len = 1; a + len <= T.L; ++len)
      for (int k = 0; k < T.C(); ++k) {
        const int slot = T.type_slot[T.cfg[k].gpu_type];
        if (used[slot] + T.cfg[k].devices() > T.type_count[slot]) continue;
        used[slot] += T.cfg[k].devices();
        configs.push_back(k);
        sizes.push_back(len);
        rec(a + len);
        configs.pop_back();
        sizes.pop_back();
        used[slot] -= T.cfg[k].devices();
      }
  };
  rec(0);
  return best;
}

std::vector<double> gpu_type_prices(const hw::Cluster& c, const StageSearchOptions& opt) {
  std::vector<double> out(c.gpu_types.size(), -1.0);
  const core::Json j = core::embedded_json("gpu_prices.json");
  const core::JsonWhere where{"data/gpu_prices.json", ""};
  for (std::size_t t = 0; t < c.gpu_types.size(); ++t) {
    const std::string& name = c.gpu_types[t].name;
    if (auto it = opt.usd_per_gpu_hour.find(name); it != opt.usd_per_gpu_hour.end()) {
      out[t] = it->second;
    } else if (j.contains("prices") && j.at("prices").contains(name)) {
      out[t] = core::get_positive_number(j.at("prices").at(name), "usd_per_hour", where.field("prices").field(name));
    }
  }
  return out;
}

std::string_view to_string(StageObjective o) {
  switch (o) {
    case StageObjective::fastest: return "fastest";
    case StageObjective::cheapest: return "cheapest";
    case StageObjective::budget: return "budget";
  }
  return "?";
}

StageObjective parse_stage_objective(std::string_view text, const std::string& where) {
  for (auto o : {StageObjective::fastest, StageObjective::cheapest, StageObjective::budget})
    if (to_string(o) == text) return o;
  throw core::InputError(fmt::format("{}: '{}' is not an objective (valid: fastest, cheapest, budget)", where, text));
}

}  // namespace strata::plan
