// plan/search: enumeration of the strategy space, lower-bound ordering and batch pruning, threads, annealing
// refinement, impossible-request messages (docs/planner.md §Search).
#include "strata/plan/search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <thread>

#include "bounds.hpp"
#include "eval.hpp"
#include "search_internal.hpp"
#include "unit_memo.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::plan {

using detail::DegreeUnit;
using detail::ScheduleChoice;
using detail::Variant;

std::string_view to_string(Space s) {
  switch (s) {
    case Space::three_d: return "3d";
    case Space::full: return "full";
    case Space::all: return "all";
  }
  return "?";
}

Space parse_space(std::string_view text, const std::string& where) {
  if (text == "3d") return Space::three_d;
  if (text == "full") return Space::full;
  if (text == "all") return Space::all;
  throw core::InputError(fmt::format("{}: unknown space '{}' (valid: 3d, full, all)", where, text));
}

void check_global_batch(const model::Model& m, std::int64_t gbs) {
  const std::int64_t seq = std::max<std::int64_t>(1, m.seq);
  if (gbs > kMaxGlobalBatch / seq)
    throw core::InputError(fmt::format(
        "plan: --gbs {}: {} samples x seq {} is more than 2^53 = {} tokens per iteration, which no cluster can "
        "process (and token counts stop being exact); the largest gbs for this model is {}",
        gbs, gbs, seq, kMaxGlobalBatch, kMaxGlobalBatch / seq));
}

namespace detail {

void parallel_for(int threads, std::int64_t n, const std::function<void(std::int64_t)>& f) {
  const int t = static_cast<int>(std::max<std::int64_t>(1, std::min<std::int64_t>(threads, n)));
  if (t <= 1) {
    for (std::int64_t i = 0; i < n; ++i) f(i);
    return;
  }
  // The calling thread works too (t − 1 threads started), and items are handed out one at a time from a shared
  // counter: evaluations differ a lot in cost (a split solve or a memo hit), so a fixed stride left one thread
  // idle. Each item writes only its own result slot, so the outcome does not depend on who ran it.
  std::atomic<std::int64_t> next{0};
  const auto work = [&] {
    for (std::int64_t i = next.fetch_add(1, std::memory_order_relaxed); i < n;
         i = next.fetch_add(1, std::memory_order_relaxed))
      f(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(t - 1));
  for (int w = 1; w < t; ++w) pool.emplace_back(work);
  work();
  for (auto& th : pool) th.join();
}

std::vector<std::int64_t> divisors(std::int64_t n) {
  // Trial division up to sqrt(n): O(sqrt(n)) steps, divisors in increasing order (n <= kMaxGlobalBatch keeps
  // this under ~1e8 steps; the planner factorises the global batch once per search).
  std::vector<std::int64_t> low, high;
  for (std::int64_t i = 1; i <= n / i; ++i) {
    if (n % i != 0) continue;
    low.push_back(i);
    if (i != n / i) high.push_back(n / i);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

std::vector<int> device_divisors(int n) {
  std::vector<int> out;
  for (std::int64_t d : divisors(n)) out.push_back(static_cast<int>(d));
  return out;
}

std::vector<std::int64_t> divisors_of_quotient(const std::vector<std::int64_t>& divisors_of_gbs, std::int64_t gbs,
                                               std::int64_t dp, std::int64_t max_mbs) {
  std::vector<std::int64_t> out;
  if (dp < 1 || gbs % dp != 0) return out;
  const std::int64_t q = gbs / dp;
  for (std::int64_t d : divisors_of_gbs) {
    if (d > q || d > max_mbs) break;
    if (q % d == 0) out.push_back(d);
  }
  return out;
}

std::int64_t max_useful_micro_batch(const model::Model& m, const hw::Cluster& c, int tp, hw::Dtype dtype) {
  // Every layer stores at least its activations under full recompute for one micro-batch in flight on the
  // device that holds it, and those bytes grow linearly with the micro-batch: a micro-batch above
  // largest-GPU-memory / (the largest such per-sample figure) fits nowhere, so the search need not enumerate it.
  double per_sample = 0;
  for (const auto& l : m.layers) {
    if (!model::tensor_parallel_problem(l, tp).empty()) continue;
    model::LayerQuery q;
    q.micro_batch = 1;
    q.seq = l.seq > 0 ? l.seq : m.seq;
    q.tp = tp;
    q.sequence_parallel = tp > 1;
    q.recompute = model::Recompute::full;
    q.bytes_per_element = hw::dtype_bytes(dtype);
    per_sample = std::max(per_sample, model::layer_cost(l, q).act_total_bytes());
  }
  double mem = 0;
  for (const auto& g : c.gpu_types) mem = std::max(mem, g.memory_bytes);
  if (!(per_sample > 0)) return kMaxGlobalBatch;
  const double cap = std::floor(mem / per_sample);
  return cap >= static_cast<double>(kMaxGlobalBatch) ? kMaxGlobalBatch : std::max<std::int64_t>(0, static_cast<std::int64_t>(cap));
}

std::string tp_rule_violation(const model::Model& m, int tp) {
  // The rule is model::tensor_parallel_problem's; the reason is generic so that rejections group by it.
  for (const auto& l : m.layers) {
    if (model::tensor_parallel_problem(l, tp).empty()) continue;
    if (l.kind == model::LayerKind::conv) return "convolution layers support tp = 1 only";
    if (l.heads > 0 && l.heads % tp != 0) return "tp does not divide the attention heads";
    return "tp and the kv heads do not divide one another";
  }
  return {};
}

bool candidate_less(const Candidate& a, const Candidate& b) {
  if (a.estimate.iteration_time_s != b.estimate.iteration_time_s)
    return a.estimate.iteration_time_s < b.estimate.iteration_time_s;
  return a.order < b.order;
}

void Rejections::add(const std::string& reason, std::int64_t n, const std::string& example) {
  auto& r = by_reason[reason];
  if (r.count == 0) r.example = example;
  r.count += n;
}

void Rejections::add(const std::string& reason, std::int64_t n, const std::function<std::string()>& example) {
  auto& r = by_reason[reason];
  if (r.count == 0) r.example = example();
  r.count += n;
}

std::string short_cli(const cost::Strategy& s) {
  // The strategy without its (long) placement list.
  cost::Strategy t = s;
  t.placement.clear();
  std::string text = cost::to_cli_string(t);
  if (const auto at = text.find(",place="); at != std::string::npos) text.erase(at);
  return text;
}

std::vector<RejectReason> Rejections::sorted() const {
  std::vector<RejectReason> out;
  for (const auto& [k, v] : by_reason) out.push_back({k, v.count, v.example});
  return out;
}

// Micro-batch sizes of one degree unit: divisors of gbs/dp up to max_mbs; the larger ones counted as rejected.
std::vector<std::int64_t> micro_batch_sizes(const std::vector<std::int64_t>& gbs_divisors, std::int64_t gbs, int dp,
                                            std::int64_t max_mbs, const std::string& ex, Rejections& rej) {
  auto mbss = divisors_of_quotient(gbs_divisors, gbs, dp, max_mbs);
  if (const auto all = divisors_of_quotient(gbs_divisors, gbs, dp, kMaxGlobalBatch); all.size() > mbss.size())
    rej.add("memory: micro-batch whose activations alone exceed the largest GPU (skipped unenumerated)",
            static_cast<std::int64_t>(all.size() - mbss.size()), fmt::format("{},mbs={}", ex, all[mbss.size()]));
  return mbss;
}

// Placement candidates per tp (hetero_placements depends on tp only), each distinct placement stored once and
// shared by every unit that uses it (the Megatron identity serves every tp): O(devices) per distinct placement,
// not per (dp, tp, pp) unit.
class PlacementCache {
 public:
  using Entry = std::pair<std::shared_ptr<const std::vector<int>>, std::string>;
  PlacementCache(const hw::Cluster& c, PlacementMode mode) : c_(c), mode_(mode) {}
  const std::vector<Entry>& of(int tp) {
    if (auto it = by_tp_.find(tp); it != by_tp_.end()) return it->second;
    std::vector<PlacementCandidate> places;
    if (mode_ == PlacementMode::megatron) places.push_back({megatron_placement(c_), "megatron"});
    else places = hetero_placements(c_, cost::Dims{.dp = c_.num_devices() / tp, .tp = tp, .pp = 1});
    std::vector<Entry> out;
    for (auto& pc : places) out.emplace_back(intern(std::move(pc.placement)), std::move(pc.label));
    return by_tp_.emplace(tp, std::move(out)).first->second;
  }

 private:
  std::shared_ptr<const std::vector<int>> intern(std::vector<int> p) {
    for (const auto& q : distinct_)
      if (*q == p) return q;
    distinct_.push_back(std::make_shared<const std::vector<int>>(std::move(p)));
    return distinct_.back();
  }
  const hw::Cluster& c_;
  PlacementMode mode_;
  std::map<int, std::vector<Entry>> by_tp_;
  std::vector<std::shared_ptr<const std::vector<int>>> distinct_;
};

namespace {
// The recompute modes worth costing. Selective recompute drops the stored s² attention scores and re-runs their
// products (Korthikanti §5); a fused attention kernel (the default on every GPU with 16-bit tensor cores,
// cost::attention_kernel_for) stores none, so there selective costs exactly what none does (model/
// layer_transformer) and would only repeat each plan in the list.
std::vector<model::Recompute> recompute_modes(const hw::Cluster& c, const PlanOptions& opt, bool* selective_skipped) {
  *selective_skipped = false;
  if (opt.space == Space::three_d) return {model::Recompute::none};
  cost::Strategy probe;
  probe.dtype = opt.dtype;  // the default kernel follows GPU × dtype (fp32: eager, scores stored)
  probe.attention = opt.attention;
  const bool all_fused = std::all_of(c.gpu_types.begin(), c.gpu_types.end(), [&probe](const hw::GpuSpec& g) {
    return model::is_fused(cost::attention_kernel_for(probe, g));
  });
  *selective_skipped = all_fused;
  if (all_fused) return {model::Recompute::none, model::Recompute::full};
  return {model::Recompute::none, model::Recompute::selective, model::Recompute::full};
}
}  // namespace

// The enumeration of the space: degree units and configurations (in the deterministic order).
Space_ enumerate_space(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt, Rejections& rej) {
  Space_ sp;
  const int n = c.num_devices();
  const int L = static_cast<int>(m.layers.size());
  const std::int64_t gbs = opt.global_batch;
  const bool three_d = opt.space == Space::three_d;
  const std::vector<std::int64_t> gbs_divisors = divisors(gbs);
  PlacementCache places(c, opt.placement);
  bool selective_skipped = false;  // the same for every unit: it depends on the cluster's GPU types only
  std::vector<model::Recompute> base_rcs = recompute_modes(c, opt, &selective_skipped);
  if (opt.engine && opt.engine->recompute == std::vector<model::Recompute>{model::Recompute::none, model::Recompute::full})
    selective_skipped = false;  // the engine has no selective form: nothing skipped as a duplicate
  const EngineFilter engine{opt, m, c};
  detail::UnitBuilder builder(m, c, opt);  // memos shared across units (plan/unit_memo)
  for (int tp : device_divisors(n)) {
    if (opt.max_tp > 0 && tp > opt.max_tp) {
      rej.add("degrees: tp > --max-tp", static_cast<std::int64_t>(divisors(n / tp).size()), fmt::format("tp={}", tp));
      continue;
    }
    if (const auto why = tp_rule_violation(m, tp); !why.empty()) {
      rej.add("degrees: " + why, static_cast<std::int64_t>(divisors(n / tp).size()), fmt::format("tp={}", tp));
      continue;
    }
    if (opt.engine && opt.engine->max_tp > 0 && tp > opt.engine->max_tp) {
      rej.add(fmt::format("engine {}: tp > {}", opt.engine->name, opt.engine->max_tp),
              static_cast<std::int64_t>(divisors(n / tp).size()), fmt::format("tp={}", tp));
      continue;
    }
    const std::int64_t max_mbs = max_useful_micro_batch(m, c, tp, opt.dtype);
    for (const auto& [pp, cp] : pp_cp_degrees(m, n / tp, !three_d)) {  // cp > 1 only for long sequences
      const int dp = n / (tp * pp * cp);
      const std::string ex = fmt::format("dp={},tp={},pp={}{}", dp, tp, pp, cp > 1 ? fmt::format(",cp={}", cp) : "");
      if (pp > L) {
        rej.add("degrees: pp > layers of the model", 1, ex);
        continue;
      }
      if (opt.max_pp > 0 && pp > opt.max_pp) {
        rej.add("degrees: pp > --max-pp", 1, ex);
        continue;
      }
      if (gbs % dp != 0) {
        rej.add("degrees: gbs not divisible by dp", 1, ex);
        sp.gbs_blocked_dp.push_back(dp);
        continue;
      }
      const cost::Dims dims{.dp = dp, .tp = tp, .pp = pp, .cp = cp};
      if (const auto why = engine.degrees(dims)) {
        rej.add(*why, 1, ex);
        continue;
      }
      sp.valid_dp.push_back(dp);
      for (const auto& [placement, label] : places.of(tp)) {  // tp groups in order: the same for any dp·cp·pp
        const int unit = static_cast<int>(sp.units.size());
        sp.units.push_back(builder.build(dims, placement, label));
        std::vector<model::Recompute> rcs = base_rcs;
        // Oases (opt-in like pipedream/2bw: no engine export expresses it, docs/planner.md): cross-pass recompute.
        const bool oases = opt.space == Space::all && tp > 1;
        if (oases) rcs.push_back(model::Recompute::oases);  // = full without re-run collectives
        std::vector<bool> sps{false};
        if (!three_d && tp > 1) sps = {false, true};
        std::vector<int> zeros{0};
        if (!three_d && dp * cp > 1) zeros = {0, 1, 2, 3};
        for (std::int64_t mbs : micro_batch_sizes(gbs_divisors, gbs, dp, max_mbs, ex, rej)) {
          const std::int64_t micro = gbs / (static_cast<std::int64_t>(dp) * mbs);
          if (opt.max_micro_batches != 0 &&
              micro > (opt.max_micro_batches > 0 ? opt.max_micro_batches : (pp == 1 ? 1 : 2 * pp)))
            continue;  // --gbs auto: no gradient accumulation beyond the pipeline (plan/layerwise.hpp)
          std::vector<ScheduleChoice> scheds{{cost::Schedule::one_f_one_b, 1}};
          if (!three_d && pp > 1) {
            // GPipe has 1F1B's time and at least its memory under the cost model: only in the `all` space.
            if (opt.space == Space::all) scheds.push_back({cost::Schedule::gpipe, 1});
            const int blocks = std::max(1, m.num_blocks());
            for (int v = 2; v <= (opt.max_v > 0 ? opt.max_v : 8); ++v) {
              if (pp * v > L) break;
              if (micro % pp != 0) {
                rej.add("interleaved: m % pp != 0 (per mbs and v)", 1, fmt::format("{},mbs={},v={}", ex, mbs, v));
                continue;
              }
              if (blocks % (pp * v) != 0) continue;  // Megatron needs equal chunks of blocks
              scheds.push_back({cost::Schedule::interleaved, v});
            }
            if (opt.space == Space::all) {
              scheds.push_back({cost::Schedule::pipedream, 1});
              scheds.push_back({cost::Schedule::two_bw, 1});
            }
          }
          // Oases overlapped TP (two sub-batches of mbs/2): in the `all` space where there is TP and mbs splits.
          std::vector<bool> ovs{false};
          if (oases && mbs % 2 == 0) ovs = {false, true};
          if (selective_skipped)
            rej.add("recompute: selective = none under fused attention (no stored scores)",
                    static_cast<std::int64_t>(zeros.size() * sps.size() * ovs.size() * scheds.size()),
                    fmt::format("{},mbs={},recompute=selective", ex, mbs));
          for (int zero : zeros)
            for (auto rc : rcs)
              for (bool s : sps)
                for (bool ov : ovs) {
                  const Variant var{mbs, rc, s, zero, ov};
                  const auto kept = engine.schedules(sp.units.back(), var, scheds, rej);
                  if (kept.empty()) continue;
                  const int uv = static_cast<int>(sp.uvs.size());
                  sp.uvs.push_back({unit, var});
                  for (const auto& sc : kept) sp.configs.push_back({uv, sc, 0.0, static_cast<std::int64_t>(sp.configs.size())});
                }
        }
      }
    }
  }
  return sp;
}

}  // namespace detail

namespace {

std::string nearest_gbs_message(std::int64_t gbs, const std::vector<int>& dps_all) {
  std::int64_t below = 0, above = 0;
  for (int dp : dps_all) {
    const std::int64_t lo = gbs / dp * dp, hi = lo + dp;
    if (lo > 0 && lo > below) below = lo;
    if (above == 0 || hi < above) above = hi;
  }
  if (below > 0) return fmt::format("closest gbs that works: {} or {}", below, above);
  return fmt::format("closest gbs that works: {}", above);
}

// Smallest per-device memory over a memory-lean corner of the space (ZeRO-3 if dp > 1, full recompute, sp,
// mbs 1, 1F1B, Megatron split) — for the "fits nowhere" message.
void throw_fits_nowhere(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                        const detail::Space_& sp) {
  double best_mem = INFINITY;
  cost::Strategy best_s;
  for (const auto& u : sp.units) {
    Variant var{1, model::Recompute::full, u.tp > 1, u.dp > 1 ? 3 : 0};
    if (opt.space == Space::three_d) var = Variant{1, model::Recompute::none, false, 0};
    cost::Strategy s = detail::make_strategy(u, var, {cost::Schedule::one_f_one_b, 1});
    if (opt.global_batch % u.dp != 0) continue;
    s.split = cost::default_split(m, s.pp);
    const cost::Estimate e = cost::estimate(m, c, s, opt.cost);
    if (e.peak_memory_bytes < best_mem) {
      best_mem = e.peak_memory_bytes;
      best_s = s;
    }
  }
  double cap = INFINITY;
  for (const auto& g : c.gpu_types) cap = std::min(cap, g.memory_bytes);
  std::vector<std::string> big;
  for (const auto& g : hw::builtin_catalog().gpus)
    if (g.memory_bytes >= best_mem) big.push_back(fmt::format("{} ({})", g.name, core::format_bytes(g.memory_bytes)));
  throw core::InputError(fmt::format(
      "plan: model {} does not fit on {} with gbs {} (space {}): the smallest memory it needs is {} per GPU "
      "(strategy {}) but the GPUs have {}; closest that fits: GPUs with at least that much memory ({}), or more "
      "GPUs{}",
      m.name, c.name, opt.global_batch, to_string(opt.space), core::format_bytes(best_mem),
      best_mem < INFINITY ? cost::to_cli_string(best_s) : "none", core::format_bytes(cap),
      big.empty() ? "none in the catalog" : core::join(big), opt.space == Space::three_d ? ", or --space full (ZeRO, recompute)" : ""));
}

// The fixed-split bounds (plan/bounds fixed_split_bound_s) of variant i's configurations [begin, end) whose
// split the search does not choose (interleaved: Megatron's; pp = 1), into fixed_lb; the others keep −1.
void fixed_split_bounds(const model::Model& m, const detail::LayerIndex& li, const detail::Space_& sp,
                        std::int64_t i, const detail::ClassCosts& cc, std::size_t begin, std::size_t end,
                        std::vector<double>& fixed_lb) {
  const auto& uv = sp.uvs[i];
  const auto& u = sp.units[uv.unit];
  thread_local detail::StagePrefix prefix;
  bool prefix_built = false;
  for (std::size_t k = begin; k < end; ++k) {
    const auto& sc = sp.configs[k].sc;
    if (sp.configs[k].uv != i || (sc.schedule != cost::Schedule::interleaved && u.pp != 1)) continue;
    if (!prefix_built) prefix.build(li, cc.shape);
    prefix_built = true;
    cost::Strategy fixed = detail::make_strategy_light(u, uv.var, sc);
    fixed.split = cost::default_split(m, fixed.pp * fixed.virtual_stages);
    fixed_lb[k] = detail::fixed_split_bound_s(u, fixed, prefix, cc.ctx);
  }
}

// Phase A: per variant, the numbers its configurations' bounds read (per-layer costs once per variant, shared by
// every schedule); the memory pre-check (static state alone too big for any stage) drops configurations from
// sp.configs; the others get their lower bound. Returns their indices by increasing (bound, enumeration index).
std::vector<std::int64_t> bound_and_order(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                                          const detail::LayerIndex& li, detail::Space_& sp, detail::Rejections& rej) {
  std::vector<detail::VariantBounds> bounds(sp.uvs.size());
  // Classes that recur across units cost their layers once (exact); freed after phase A (its memory is reused).
  auto layer_memo = std::make_unique<detail::LayerCostMemo>();
  // A variant's configurations are contiguous (enumerate_space pushes them right after it): configurations
  // [cfg_begin[i], cfg_begin[i + 1]) are variant i's.
  std::vector<std::size_t> cfg_begin(sp.uvs.size() + 1, sp.configs.size());
  for (std::size_t k = sp.configs.size(); k-- > 0;) cfg_begin[sp.configs[k].uv] = k;
  for (std::size_t i = sp.uvs.size(); i-- > 0;) cfg_begin[i] = std::min(cfg_begin[i], cfg_begin[i + 1]);
  // The tighter bound of the configurations whose split is fixed (interleaved; pp = 1); −1 where none.
  std::vector<double> fixed_lb(sp.configs.size(), -1.0);
  detail::parallel_for(opt.threads, static_cast<std::int64_t>(sp.uvs.size()), [&](std::int64_t i) {
    const auto& uv = sp.uvs[i];
    const auto& u = sp.units[uv.unit];
    const cost::Strategy s = detail::make_strategy_light(u, uv.var, {cost::Schedule::one_f_one_b, 1});
    detail::ClassCosts cc = opt.symmetry ? detail::class_costs(m, li, u, s, *layer_memo)
                                               : detail::class_costs(m, li, u, s);
    bounds[i] = detail::variant_bounds(li, cc, u, opt.global_batch / (static_cast<std::int64_t>(u.dp) * uv.var.mbs));
    fixed_split_bounds(m, li, sp, i, cc, cfg_begin[i], cfg_begin[i + 1], fixed_lb);
  });
  layer_memo.reset();
  std::vector<detail::Config> kept;
  kept.reserve(sp.configs.size());
  for (std::size_t k = 0; k < sp.configs.size(); ++k) {
    auto& cf = sp.configs[k];
    const auto& uv = sp.uvs[cf.uv];
    const auto& u = sp.units[uv.unit];
    const cost::Strategy s = detail::make_strategy_light(u, uv.var, cf.sc);
    const detail::VariantBounds& b = bounds[cf.uv];
    if (!detail::may_fit_memory(b.statics, u, s)) {
      rej.add("memory: weights + gradients + optimizer state alone exceed the largest GPU (any split)", 1,
              [&] { return detail::short_cli(s); });
      continue;
    }
    const std::int64_t micro = opt.global_batch / (static_cast<std::int64_t>(u.dp) * uv.var.mbs);
    cf.lb = std::max(detail::lower_bound_s(b.min_work, b.stages, micro, cf.sc, b.statics.sync_s), fixed_lb[k]);
    if (cf.sc.schedule == cost::Schedule::gpipe || cf.sc.schedule == cost::Schedule::one_f_one_b)
      cf.lb = std::max(cf.lb, (b.flow_shop + b.statics.sync_s) * (1.0 - 1e-9));
    kept.push_back(cf);
  }
  sp.configs = std::move(kept);
  if (sp.configs.empty()) throw_fits_nowhere(m, c, opt, sp);
  // Ascending (bound, enumeration index): the pairs sort in place, without an indirection per comparison.
  std::vector<std::pair<double, std::int64_t>> by_bound(sp.configs.size());
  for (std::size_t i = 0; i < by_bound.size(); ++i) by_bound[i] = {sp.configs[i].lb, static_cast<std::int64_t>(i)};
  std::sort(by_bound.begin(), by_bound.end());
  std::vector<std::int64_t> order(by_bound.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = by_bound[i].second;
  return order;
}

// Split + estimate of one configuration. The variant's layer costs are computed again (the same numbers as phase
// A's): keeping phase A's rows for every variant would hold megabytes that only the few costed configurations
// read, and their page faults cost more than this.
detail::EvalResult cost_config(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                               const detail::LayerIndex& li, const detail::Space_& sp, const detail::Config& cf) {
  const auto& uv = sp.uvs[cf.uv];
  const auto& u = sp.units[uv.unit];
  std::vector<std::vector<cost::LayerStageCost>> rows;
  if (opt.symmetry) rows = detail::class_costs(m, li, u, detail::make_strategy_light(u, uv.var, {})).own;
  detail::EvalResult r =
      detail::evaluate(m, c, li, u, uv.var, cf.sc, opt.cost, opt.symmetry ? &rows : nullptr, !opt.symmetry);
  r.cand.order = cf.order;
  return r;
}

// Phase B: costs the configurations in `order`, in fixed batches, skipping those whose bound exceeds the K-th best
// found before the batch and stopping when the next bound does. Returns the best K (unit_of: their units).
std::vector<Candidate> costed_in_bound_order(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                                             const detail::LayerIndex& li, const detail::Space_& sp,
                                             const std::vector<std::int64_t>& order, detail::Rejections& rej,
                                             PlanResult& res, std::map<std::int64_t, int>& unit_of) {
  std::vector<Candidate> top;
  const std::size_t K = static_cast<std::size_t>(opt.top_k);
  const std::size_t batch = static_cast<std::size_t>(std::max(1, opt.batch_size));
  std::size_t pos = 0;
  while (pos < order.size()) {
    const double threshold = top.size() >= K ? detail::keep_threshold_s(top, K, opt) : INFINITY;
    if (!opt.exhaustive && sp.configs[order[pos]].lb > threshold) {
      res.pruned_by_bound += static_cast<std::int64_t>(order.size() - pos);
      break;
    }
    const std::size_t end = std::min(order.size(), pos + batch);
    std::vector<detail::EvalResult> out(end - pos);
    std::vector<char> skipped(end - pos, 0);
    detail::parallel_for(opt.threads, static_cast<std::int64_t>(end - pos), [&](std::int64_t i) {
      const auto& cf = sp.configs[order[pos + i]];
      if (!opt.exhaustive && cf.lb > threshold) skipped[i] = 1;
      else out[i] = cost_config(m, c, opt, li, sp, cf);
    });
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (skipped[i]) {
        ++res.pruned_by_bound;
        continue;
      }
      auto& r = out[i];
      res.splits_solved += r.split_solved ? 1 : 0;
      res.split_bounds_tried += r.bounds_tried;
      res.evaluated += r.estimated ? 1 : 0;
      if (!r.ok) {
        rej.add(r.reject_reason, 1, [&] { return detail::short_cli(r.cand.strategy); });
        continue;
      }
      if (opt.on_costed) opt.on_costed(sp.configs[order[pos + i]].lb, r.cand);
      unit_of[r.cand.order] = sp.uvs[sp.configs[order[pos + i]].uv].unit;
      top.push_back(std::move(r.cand));
    }
    std::sort(top.begin(), top.end(), detail::candidate_less);
    detail::trim_pool(top, K, opt);
    pos = end;
    if (opt.progress) opt.progress(static_cast<std::int64_t>(pos), static_cast<std::int64_t>(order.size()));
  }
  return top;
}

}  // namespace

PlanResult plan(const model::Model& m, const hw::Cluster& c, const PlanOptions& given) {
  const auto t0 = std::chrono::steady_clock::now();
  const PlanOptions opt = detail::with_engine_traits(m, c, given);
  if (opt.global_batch < 1) throw core::InputError("plan: --gbs must be >= 1");
  check_global_batch(m, opt.global_batch);
  if (opt.top_k < 1) throw core::InputError("plan: --top must be >= 1");
  if (opt.threads < 1) throw core::InputError("plan: --threads must be >= 1");
  if (const std::string why = cost::dtype_unsupported(opt.dtype, c); !why.empty())
    throw core::InputError("plan: --dtype: " + why);
  PlanResult res;
  detail::Rejections rej;
  const detail::LayerIndex li = detail::index_layers(m);
  detail::Space_ sp = detail::enumerate_space(m, c, opt, rej);
  if (sp.configs.empty()) {
    // The degrees a different gbs would make usable (they passed every other rule); none = no degree at all.
    std::vector<int> dps = sp.gbs_blocked_dp;
    if (sp.valid_dp.empty() && dps.empty())
      throw core::InputError(fmt::format("plan: no (dp, tp, pp) of model {} passes the degree rules on {} ({} devices: "
                                         "tp divides the heads, pp at most the layers, --max-tp / --max-pp): choose a "
                                         "device count with such a factorisation",
                                         m.name, c.name, c.num_devices()));
    if (sp.valid_dp.empty())
      throw core::InputError(fmt::format(
          "plan: --gbs {} is not divisible by any data-parallel degree usable on {} ({} devices, model {}): {}",
          opt.global_batch, c.name, c.num_devices(), m.name, nearest_gbs_message(opt.global_batch, dps)));
    if (opt.engine && !sp.units.empty()) detail::throw_engine_runs_nothing(opt, rej);
    // Degrees exist but every micro-batch size is too big for the memory (the gbs / dp left has no small divisor).
    if (!sp.units.empty()) throw_fits_nowhere(m, c, opt, sp);
    throw core::InputError("plan: the search space is empty (check --max-tp / --max-pp)");
  }
  res.space_size = static_cast<std::int64_t>(sp.configs.size());

  const std::vector<std::int64_t> order = bound_and_order(m, c, opt, li, sp, rej);
  res.lower_bounded = static_cast<std::int64_t>(sp.configs.size());
  std::map<std::int64_t, int> unit_of;  // a kept candidate's unit (enumeration order → unit), to complete it
  std::vector<Candidate> top = costed_in_bound_order(m, c, opt, li, sp, order, rej, res, unit_of);
  if (res.pruned_by_bound > 0)
    rej.add("pruned: lower bound above the K-th best plan", res.pruned_by_bound, "");
  if (top.empty()) throw_fits_nowhere(m, c, opt, sp);
  for (auto& cand : top)  // light candidates: placement and stage devices (plan/unit_memo)
    detail::complete_light(*sp.units[unit_of.at(cand.order)].placement, cand.strategy, cand.estimate);

  if (opt.placement == PlacementMode::anneal) detail::anneal_top(m, c, opt, top, res);
  rank_by_objective(top, opt);  // margin: the safest of the plans within 2 % of the fastest first
  if (top.size() > static_cast<std::size_t>(opt.top_k)) top.resize(static_cast<std::size_t>(opt.top_k));
  res.top = std::move(top);
  if (opt.baselines) res.baselines = detail::compute_baselines(m, c, opt, sp, li, res);
  res.rejected = rej.sorted();
  res.explanation = detail::explain(m, c, opt, li, sp, res);
  res.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

bool optimal_split(const model::Model& m, const hw::Cluster& c, cost::Strategy& s, const cost::CostOptions& opt,
                   double* objective_s) {
  if (s.placement.empty()) s.placement = megatron_placement(c);
  const detail::LayerIndex li = detail::index_layers(m);
  DegreeUnit u =
      detail::make_degree_unit(m, c, s, s.placement, "given", s.global_batch, s.dtype, opt);
  u.proto = s;
  u.proto.split.clear();
  u.proto.placement.clear();  // the unit's placement is u.placement
  if (s.schedule == cost::Schedule::interleaved || s.pp == 1) {
    s.split = cost::default_split(m, s.pp * s.virtual_stages);
    if (objective_s) *objective_s = 0;
    return true;
  }
  const detail::ClassCosts cc = detail::class_costs(m, li, u, s);
  const SplitResult r = solve_split(detail::build_split_problem(m, c, li, u, s, cc, opt));
  if (!r.feasible) return false;
  s.split = r.sizes;
  if (objective_s) *objective_s = from_ps(r.objective);
  return true;
}

}  // namespace strata::plan
