// cost/estimate: the whole-strategy estimate, composed only of the stage.hpp building blocks (sum_stage_layers
// over layer_stage_cost, p2p_time, pipeline_time / iteration_time, dp_sync_exposed_time, optimizer_step_time,
// stage_memory), the model's FLOP counts (model/model.hpp) and the JSON view of an estimate.
#include "strata/cost/estimate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <stdexcept>

#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/layerwise.hpp"
#include "strata/cost/per_stage.hpp"
#include "strata/cost/stage.hpp"

namespace strata::cost {
namespace {


// Per-stage memo of distinct layers (linear scan: a stage has a handful of distinct shapes).
struct LayerMemo {
  struct Entry {
    const model::LayerSpec* layer;
    model::Recompute mode;
    LayerStageCost cost;
  };
  std::vector<Entry> entries;
  std::size_t last = 0;  // index of the entry returned last
  const LayerStageCost& get(const model::Model& m, const model::LayerSpec& l, const StageContext& ctx,
                            model::Recompute mode) {
    // The previous layer's entry first: consecutive layers of a stage are mostly identical blocks.
    if (last < entries.size() && entries[last].mode == mode && model::same_cost_shape(*entries[last].layer, l))
      return entries[last].cost;
    for (std::size_t i = 0; i < entries.size(); ++i)
      if (i != last && entries[i].mode == mode && (entries[i].layer == &l || model::same_cost_shape(*entries[i].layer, l))) {
        last = i;
        return entries[i].cost;
      }
    last = entries.size();
    entries.push_back({&l, mode, layer_stage_cost(m, l, ctx, mode)});
    return entries.back().cost;
  }
};

// estimate()'s per-call working storage. The planner calls estimate thousands of times per search; keeping
// these vectors' capacity per thread removes about a dozen allocations per call (issue 11). `busy` guards
// against a nested call (none exists today), which then uses storage of its own.
struct EstimateScratch {
  bool busy = false;
  std::vector<StageContext> built;   // contexts of distinct stage topologies ([0, built_used))
  std::size_t built_used = 0;
  std::vector<LayerMemo> memos;      // [0, memos_used)
  std::size_t memos_used = 0;
  // ctx_of, memo_of, memo_owner, distinct, first_of_class, devs (estimate() names them) and distinct_links.
  std::array<std::vector<int>, 6> ints;
  std::vector<int> distinct_links;
  std::array<std::vector<double>, 4> doubles;  // t, e, sync, first_chunk_output
  void reset(int p, std::size_t classes) {
    built_used = memos_used = 0;
    built.reserve(p);  // references into built / memos stay valid while a stage is summed
    memos.reserve(p);
    ints[0].assign(p, -1);
    ints[1].assign(p, -1);
    ints[2].clear();
    ints[3].clear();
    ints[4].assign(classes, -1);
    doubles[0].assign(p, 0.0);
    doubles[1].assign(p > 1 ? p - 1 : 0, 0.0);
    doubles[2].assign(p, 0.0);
    doubles[3].assign(p, 0.0);
    distinct_links.clear();
  }
  StageContext& push_context(const StageContext& from) {
    if (built_used == built.size()) built.push_back(from);
    else built[built_used] = from;  // copy-assignment keeps the devices vector's capacity
    return built[built_used++];
  }
  LayerMemo& push_memo() {
    if (memos_used == memos.size()) memos.emplace_back();
    LayerMemo& memo = memos[memos_used++];
    memo.entries.clear();
    memo.last = 0;
    return memo;
  }
};

struct ScratchLease {
  EstimateScratch* s;
  EstimateScratch own;
  ScratchLease() {
    thread_local EstimateScratch shared;
    s = shared.busy ? &own : &shared;
    s->busy = true;
  }
  ~ScratchLease() { s->busy = false; }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
};

// Stages whose contexts agree on every number a layer cost reads share one memo (uniform pipelines cost each
// distinct layer once per estimate).
bool same_numbers(const StageContext& a, const StageContext& b) {
  return a.gpu_type == b.gpu_type && a.peak_flops == b.peak_flops && a.memory_bw_bytes_per_s == b.memory_bw_bytes_per_s &&
         a.tp_allreduce_s_per_byte == b.tp_allreduce_s_per_byte && a.tp_allreduce_latency_s == b.tp_allreduce_latency_s &&
         a.tp_rs_s_per_byte == b.tp_rs_s_per_byte && a.tp_rs_latency_s == b.tp_rs_latency_s &&
         a.dp_allgather_s_per_byte == b.dp_allgather_s_per_byte && a.dp_allgather_latency_s == b.dp_allgather_latency_s &&
         a.dp_allreduce_s_per_byte == b.dp_allreduce_s_per_byte && a.dp_allreduce_latency_s == b.dp_allreduce_latency_s &&
         a.cp_step_s_per_byte == b.cp_step_s_per_byte && a.cp_step_latency_s == b.cp_step_latency_s;
}

std::string gpu_name_of(const hw::Cluster& c, const StageContext& ctx) { return c.gpu_types[ctx.gpu_type].name; }

}  // namespace

Estimate estimate(const model::Model& m, const hw::Cluster& c, const Strategy& s, const CostOptions& opt) {
  if (is_layerwise(s, c)) return estimate_layerwise(m, c, s, opt);  // per-layer choices, alike stages (issue 16)
  if (!is_uniform(s)) return estimate_per_stage(m, c, s, opt);  // per-stage (dp_i, tp_i) (issue 14, cost/per_stage)
  const int p = s.pp, v = s.virtual_stages, chunks = p * v;
  const PrebuiltStages* pre = opt.prebuilt;
  // Per-device lists only when asked for (PrebuiltStages::stage_devices) or read (the host-CPU bound).
  const bool want_devices = !pre || !pre->cut_time_s || pre->stage_devices || c.has_oversubscribed_cpu_node;
  if (static_cast<int>(s.split.size()) != chunks ||
      (want_devices && static_cast<int>(s.placement.size()) != s.num_devices()) || s.num_devices() != c.num_devices())
    throw std::invalid_argument("estimate: strategy is not complete (call complete_strategy first)");
  ScratchLease lease;
  EstimateScratch& w = *lease.s;
  const auto bounds = chunk_boundaries(s);
  const std::int64_t micro = s.num_micro_batches();

  Estimate est;
  est.stages.resize(p);
  // Contexts of distinct stage topologies (w.built[0, built_used)); a twin stage points at its twin's (only the
  // numbers are read here, so no copy per stage).
  w.reset(p, pre ? pre->class_ctx.size() : 0);
  std::vector<StageContext>& built = w.built;
  auto& [ctx_of, memo_of, memo_owner, distinct, first_of_class, devs] = w.ints;  // memo_owner: a memo's first
  auto& [t, e, sync, first_chunk_output] = w.doubles;  // stage; distinct: stages whose context was built
  for (int st = 0; st < p; ++st) {
    // Stage st's devices in rank order (dp·cp rank · tp + tp_rank) are the st-th dp·cp·tp slice of the placement.
    const std::ptrdiff_t stage_size = static_cast<std::ptrdiff_t>(s.dp_cp()) * s.tp;
    if (want_devices) {
      const auto slice = s.placement.begin() + st * stage_size;
      devs.assign(slice, slice + stage_size);
    }
    int twin = -1;
    if (pre) {
      twin = first_of_class[pre->stage_class[st]];
      if (twin < 0) first_of_class[pre->stage_class[st]] = st;
    } else {
      for (int prev : distinct)
        if (hw::same_topology(c, devs, est.stages[prev].devices)) {
          twin = prev;
          break;
        }
    }
    if (twin >= 0) {
      ctx_of[st] = ctx_of[twin];
    } else {
      ctx_of[st] = static_cast<int>(w.built_used);
      if (pre) w.push_context(pre->class_ctx[pre->stage_class[st]]).strategy = &s;
      else w.push_context(make_stage_context(m, c, s, devs, opt));
      distinct.push_back(st);
    }
    const StageContext& ctx = built[ctx_of[st]];
    StageEstimate& se = est.stages[st];
    if (want_devices) se.devices = devs;
    se.gpu = gpu_name_of(c, ctx);
    // Stages copied from a twin share its memo; otherwise compare with one owner stage per memo (O(memos)).
    int memo_index = twin >= 0 ? memo_of[twin] : -1;
    for (std::size_t k = 0; k < memo_owner.size() && memo_index < 0; ++k)
      if (same_numbers(built[ctx_of[memo_owner[k]]], ctx)) memo_index = static_cast<int>(k);
    if (memo_index < 0) {
      memo_index = static_cast<int>(w.memos_used);
      w.push_memo();
      memo_owner.push_back(st);
    }
    memo_of[st] = memo_index;
    LayerMemo& memo = w.memos[memo_index];
    const StageLayerSums ls = sum_stage_layers(m, s, bounds, st, false,
                                               [&](int li, model::Recompute mode) -> const LayerStageCost& {
                                                 if (pre && !pre->shape_cost.empty() && mode == s.recompute)
                                                   return pre->shape_cost[pre->stage_class[st]][pre->shape_of[li]];
                                                 return memo.get(m, m.layers[li], ctx, mode);
                                               });
    const StageSums& sums = ls.sums;
    {
      std::size_t held = 0;
      for (int ch = st; ch < chunks; ch += p) held += static_cast<std::size_t>(bounds[ch + 1] - bounds[ch]);
      se.layers.reserve(held);
      for (int ch = st; ch < chunks; ch += p)
        for (int li = bounds[ch]; li < bounds[ch + 1]; ++li) se.layers.push_back(li);
    }
    first_chunk_output[st] = ls.first_chunk_output_bytes;
    se.zero3_busy_s = ls.zero3_busy_s * static_cast<double>(micro);
    se.fwd_s = sums.fwd_s;
    se.bwd_s = sums.bwd_s;
    se.time_s = sums.fwd_s + sums.bwd_s;
    se.compute_s = ls.compute_s;
    se.tp_comm_s = ls.tp_comm_s;
    t[st] = se.time_s;
    se.memory = stage_memory(ctx, st, sums);
    se.memory_bytes = se.memory.total_bytes();
    se.memory_capacity_bytes = ctx.memory_capacity_bytes;
    se.memory_usable_bytes = ctx.memory_usable_bytes;
    se.fits = se.memory_bytes <= se.memory_usable_bytes;
    se.dp_comm_s = dp_sync_exposed_time(ctx, sums.params_per_device, sums.bwd_s);
    se.optimizer_s = optimizer_step_time(ctx, sums.params_per_device);
  }
  std::vector<int>& distinct_links = w.distinct_links;  // stage boundaries whose p2p time was computed
  for (int st = 0; st + 1 < p; ++st) {
    if (pre && pre->cut_time_s) {  // the caller's memo of the same p2p_time
      est.stages[st].p2p_s = e[st] = pre->cut_time_s(st, first_chunk_output[st]);
      continue;
    }
    const auto& from = est.stages[st].devices;
    const auto& to = est.stages[st + 1].devices;
    int twin = -1;
    for (int prev : distinct_links) {
      const auto& pf = est.stages[prev].devices;
      const auto& pt = est.stages[prev + 1].devices;
      if (first_chunk_output[prev] == first_chunk_output[st] && hw::same_boundary_topology(c, from, to, pf, pt)) {
        twin = prev;
        break;
      }
    }
    if (twin >= 0) {
      e[st] = e[twin];
    } else {
      e[st] = p2p_time(c, s, from, to, first_chunk_output[st], opt);
      distinct_links.push_back(st);
    }
    est.stages[st].p2p_s = e[st];
  }
  const double pipe = pipeline_time(s.schedule, micro, v, t, e);
  for (int st = 0; st < p; ++st) sync[st] = est.stages[st].dp_comm_s + est.stages[st].optimizer_s;
  est.pipeline_time_s = iteration_time(s.schedule, micro, v, t, e, sync);
  est.host = host_cpu_bound(c, est.stages, micro);
  est.iteration_time_s = std::max(est.pipeline_time_s, est.host.bound_s);
  for (auto& se : est.stages) se.bubble_s = std::max(0.0, pipe - static_cast<double>(micro) * se.time_s);

  finish_estimate(est, m, s, opt, c.num_devices(),
                  pre && pre->peak_flops_sum >= 0 ? pre->peak_flops_sum : hw::total_peak_flops(c, s.dtype));
  return est;
}

void finish_estimate(Estimate& est, const model::Model& m, const Strategy& s, const CostOptions& opt, int devices,
                     double peak_flops_sum) {
  const double gbs = static_cast<double>(s.global_batch);
  est.samples_per_s = est.iteration_time_s > 0 ? gbs / est.iteration_time_s : 0;
  est.tokens_per_s = est.samples_per_s * static_cast<double>(m.seq > 0 ? m.seq : 1);
  // One FLOPs source (model::layer_cost via the model's sums) and one peak source per device, as `strata describe`
  // prints them.
  const model::SampleFlops per_sample = opt.sample_flops ? *opt.sample_flops : model::sample_flops(m);
  const double flops = per_sample.ptdp * gbs;          // tflops_per_gpu (PTD-P convention)
  const double model_flops = per_sample.train * gbs;   // MFU numerator (no recompute)
  const double n = devices;
  est.tflops_per_gpu = est.iteration_time_s > 0 ? flops / est.iteration_time_s / n / 1e12 : 0;
  est.mfu = est.iteration_time_s > 0 && peak_flops_sum > 0 ? model_flops / est.iteration_time_s / peak_flops_sum : 0;
  est.fits = true;
  for (std::size_t st = 0; st < est.stages.size(); ++st) {
    const auto& se = est.stages[st];
    est.peak_memory_bytes = std::max(est.peak_memory_bytes, se.memory_bytes);
    if (!se.fits && est.fits) {
      est.fits = false;
      est.not_fit_reason = fmt::format("stage {} needs {} per device but its {} has {} ({} after the headroom)", st,
                                       core::format_bytes(se.memory_bytes), se.gpu,
                                       core::format_bytes(se.memory_capacity_bytes),
                                       core::format_bytes(se.memory_usable_bytes));
    }
  }
}

nlohmann::ordered_json to_json(const Estimate& e) {
  nlohmann::ordered_json j;
  j["iteration_time_s"] = e.iteration_time_s;
  j["samples_per_s"] = e.samples_per_s;
  j["tokens_per_s"] = e.tokens_per_s;
  j["tflops_per_gpu"] = e.tflops_per_gpu;
  j["mfu"] = e.mfu;
  j["fits"] = e.fits;
  j["peak_memory_bytes"] = e.peak_memory_bytes;
  if (!e.fits) j["not_fit_reason"] = e.not_fit_reason;
  j["pipeline_time_s"] = e.pipeline_time_s;
  if (e.host.node >= 0) {
    nlohmann::ordered_json h;
    h["node"] = e.host.node;
    h["ranks"] = e.host.ranks;
    h["cpu_cores"] = e.host.cores;
    h["busy_s"] = e.host.busy_s;
    h["blocking_s"] = e.host.blocking_s;
    h["bound_s"] = e.host.bound_s;
    h["binding"] = e.host.bound_s > e.pipeline_time_s;
    j["host_cpu_bound"] = h;
  }
  j["stages"] = nlohmann::ordered_json::array();
  for (const auto& s : e.stages) {
    nlohmann::ordered_json st;
    st["gpu"] = s.gpu;
    st["devices"] = s.devices;
    st["layers"] = s.layers;
    st["time_s"] = s.time_s;
    st["fwd_s"] = s.fwd_s;
    st["bwd_s"] = s.bwd_s;
    st["compute_s"] = s.compute_s;
    st["tp_comm_s"] = s.tp_comm_s;
    st["p2p_s"] = s.p2p_s;
    st["dp_comm_s"] = s.dp_comm_s;
    st["zero3_busy_s"] = s.zero3_busy_s;
    st["optimizer_s"] = s.optimizer_s;
    st["bubble_s"] = s.bubble_s;
    st["memory_bytes"] = s.memory_bytes;
    st["memory_capacity_bytes"] = s.memory_capacity_bytes;
    st["memory_usable_bytes"] = s.memory_usable_bytes;
    st["fits"] = s.fits;
    nlohmann::ordered_json mem;
    mem["weights_bytes"] = s.memory.weights_bytes;
    mem["gradients_bytes"] = s.memory.gradients_bytes;
    mem["optimizer_bytes"] = s.memory.optimizer_bytes;
    mem["activations_bytes"] = s.memory.activations_bytes;
    mem["buffers_bytes"] = s.memory.buffers_bytes;
    mem["recompute_bytes"] = s.memory.recompute_bytes;
    mem["workspace_bytes"] = s.memory.workspace_bytes;
    if (s.memory.optimizer_step_bytes > 0) mem["optimizer_step_bytes"] = s.memory.optimizer_step_bytes;  // optim=
    st["memory"] = mem;
    j["stages"].push_back(st);
  }
  return j;
}

}  // namespace strata::cost
