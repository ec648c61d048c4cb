// cost/layerwise_estimate: estimate() of a per-layer strategy (is_layerwise) — the stage loop over layers with
// their own choices and the Slice-Gather between them, then the same composition as estimate() (p2p_time,
// pipeline_time / iteration_time, dp_sync_exposed_time per layout, optimizer_step_time, stage_memory, the host
// bound). docs/cost-model.md §Per-layer strategies.
#include <fmt/format.h>

#include <algorithm>

#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/layerwise.hpp"

namespace strata::cost {
namespace {

// The stages as one uniform strategy (dp_i, tp_i, split = layer counts, placement = their devices): the
// stage-level fields every per-layer choice derives from, and what stage_memory / p2p_time read.
Strategy stage_proxy(const Strategy& s) {
  Strategy px = s;
  px.stages.clear();
  px.dp = s.stages.front().dp;
  px.tp = s.stages.front().tp;
  px.virtual_stages = 1;
  px.split.clear();
  px.placement.clear();
  for (const auto& st : s.stages) {
    px.split.push_back(st.layers);
    px.placement.insert(px.placement.end(), st.devices.begin(), st.devices.end());
  }
  return px;
}

// Plain-DP layers of one layout (tp, order) share data-parallel groups: their gradients sync together.
struct LayoutGrads {
  LayerChoice choice;
  double params = 0;
};


// Memory of a per-layer stage: stage_memory of its sums with ZeRO-3 buffers for the SDP layers only.
void stage_memory_into(const model::Model& m, const hw::Cluster& c, const Strategy& px, const StageView& v, int st,
                       const StageSums& sums, bool any_sdp, double max_sdp_unsharded, const CostOptions& opt,
                       StageEstimate& se) {
  Strategy pmem = px;
  pmem.zero_stage = any_sdp ? 3 : std::min(px.zero_stage, 2);
  StageContext mctx = make_stage_context(m, c, pmem, v.devices, opt);
  se.memory = stage_memory(mctx, st, sums);
  // stage_memory adds the buffers when the stage's own dp > 1; an SDP layer of a dp-1 stage (stage tp = G, layer
  // tp < G) gathers over its own dp ranks all the same.
  if (any_sdp && pmem.dp <= 1) se.memory.buffers_bytes = 2.0 * max_sdp_unsharded;
  se.memory_bytes = se.memory.total_bytes();
  se.memory_capacity_bytes = mctx.memory_capacity_bytes;
  se.memory_usable_bytes = mctx.memory_usable_bytes;
  se.fits = se.memory_bytes <= se.memory_usable_bytes;
  se.gpu = c.gpu_types[mctx.gpu_type].name;
}

LayerwiseStageSums cost_stage(const model::Model& m, const hw::Cluster& c, const Strategy& s, const Strategy& px,
                       const StageView& v, int st, const CostOptions& opt) {
  const int G = v.dp * v.tp;
  LayerwiseCoster coster(m, c, px, v.devices, static_cast<std::int64_t>(v.dp) * px.micro_batch, opt);
  StageSums sums;
  LayerwiseStageSums r;
  StageEstimate& se = r.stage;
  ChunkSums& cs = r.chunk;
  std::vector<LayoutGrads> grads;
  double max_sdp_unsharded = 0, opt_s = 0;
  bool any_sdp = false, has_prev = false;
  LayerChoice prev;
  double prev_bytes = 0;
  int block = 0;
  const auto& ch = v.chunks.front();
  for (int li = ch.first_layer; li < ch.first_layer + ch.num_layers; ++li) {
    const LayerChoice choice = stage_layer_choice(m, s, v, st, li, block);
    LayerStageCost lc = coster.cost(li, choice);
    const int dp_l = G / choice.tp;
    const bool sdp = choice.data_parallel == LayerDataParallel::sdp && dp_l > 1;
    if (sdp) {
      any_sdp = true;
      max_sdp_unsharded = std::max(max_sdp_unsharded, lc.unsharded_weight_bytes);
    } else {
      lc.unsharded_weight_bytes = 0;  // only SDP layers are gathered into the buffers
    }
    double transform_s = 0;
    if (has_prev) {
      const TransformCost t = coster.transform(prev, choice, prev_bytes);
      lc.fwd_s += t.fwd_s;
      lc.bwd_s += t.bwd_s;
      transform_s = t.time_s();
      cs.tp_comm_fwd_s += t.fwd_s;
      cs.tp_comm_bwd_s += t.bwd_s;
    }
    cs.fwd_compute_s += lc.fwd_compute_s;
    cs.bwd_compute_s += lc.bwd_compute_s;
    cs.recompute_s += lc.recompute_s;
    cs.tp_comm_fwd_s += lc.tp_comm_fwd_s;
    cs.tp_comm_bwd_s += lc.tp_comm_bwd_s;
    cs.zero3_comm_s += lc.zero3_comm_s;
    cs.activation_bytes += lc.activation_bytes;
    cs.max_recomputed_bytes = std::max(cs.max_recomputed_bytes, lc.recomputed_bytes);
    cs.params_per_device += lc.params_per_device;
    sums.add(lc, model::is_embedding(m.layers[li].kind), model::is_attention_block(m.layers[li].kind));
    se.compute_s += lc.fwd_compute_s + lc.bwd_compute_s;
    se.tp_comm_s += lc.tp_comm_fwd_s + lc.tp_comm_bwd_s + lc.zero3_comm_s + transform_s;
    se.zero3_busy_s += lc.zero3_busy_s;
    se.layers.push_back(li);
    opt_s += optimizer_step_time(coster.context(choice), lc.params_per_device);
    if (!sdp && dp_l > 1) {
      auto it = std::find_if(grads.begin(), grads.end(), [&](const LayoutGrads& g) {
        return g.choice.tp == choice.tp && g.choice.tp_order == choice.tp_order;
      });
      if (it == grads.end()) it = grads.insert(grads.end(), LayoutGrads{choice, 0.0});
      it->params += lc.params_per_device;
    }
    prev = choice;
    prev_bytes = coster.output_bytes_per_sample(li, choice);
    has_prev = true;
  }
  cs.output_bytes = prev_bytes * static_cast<double>(px.micro_batch);
  // Each layout's gradients sync over its own dp groups, overlapping its share of the stage's backward.
  double total_params = 0;
  for (const auto& g : grads) total_params += g.params;
  for (const auto& g : grads) {
    LayerChoice dp_choice = g.choice;
    dp_choice.data_parallel = LayerDataParallel::dp;
    se.dp_comm_s += dp_sync_exposed_time(coster.context(dp_choice), g.params, sums.bwd_s * g.params / total_params);
  }
  se.optimizer_s = opt_s;
  stage_memory_into(m, c, px, v, st, sums, any_sdp, max_sdp_unsharded, opt, se);
  se.devices = v.devices;
  se.fwd_s = sums.fwd_s;
  se.bwd_s = sums.bwd_s;
  se.time_s = sums.fwd_s + sums.bwd_s;
  return r;
}

}  // namespace

std::vector<LayerwiseStageSums> layerwise_stages(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                                 const CostOptions& opt) {
  if (!is_layerwise(s, c)) throw std::invalid_argument("layerwise_stages: not a per-layer strategy");
  const auto views = stage_views(s, c);
  const Strategy px = stage_proxy(s);
  std::vector<LayerwiseStageSums> out;
  for (int st = 0; st < s.pp; ++st) out.push_back(cost_stage(m, c, s, px, views[st], st, opt));
  for (int st = 0; st + 1 < s.pp; ++st)
    out[st].stage.p2p_s = p2p_time(c, px, out[st].stage.devices, out[st + 1].stage.devices, out[st].chunk.output_bytes, opt);
  return out;
}

Estimate estimate_layerwise(const model::Model& m, const hw::Cluster& c, const Strategy& s, const CostOptions& opt) {
  const int p = s.pp;
  const std::int64_t micro = stage_proxy(s).num_micro_batches();
  Estimate est;
  std::vector<double> t(p), e(p > 1 ? p - 1 : 0, 0.0), sync(p);
  for (auto& r : layerwise_stages(m, c, s, opt)) {
    const int st = static_cast<int>(est.stages.size());
    r.stage.zero3_busy_s *= static_cast<double>(micro);
    t[st] = r.stage.time_s;
    if (st + 1 < p) e[st] = r.stage.p2p_s;
    sync[st] = r.stage.dp_comm_s + r.stage.optimizer_s;
    est.stages.push_back(std::move(r.stage));
  }
  // The composition of estimate() (cost/estimate.cpp): schedule, sync, host bound, throughput, MFU, fit.
  const double pipe = pipeline_time(s.schedule, micro, 1, t, e);
  est.pipeline_time_s = iteration_time(s.schedule, micro, 1, t, e, sync);
  est.host = host_cpu_bound(c, est.stages, micro);
  est.iteration_time_s = std::max(est.pipeline_time_s, est.host.bound_s);
  for (auto& se : est.stages) se.bubble_s = std::max(0.0, pipe - static_cast<double>(micro) * se.time_s);
  finish_estimate(est, m, s, opt, c.num_devices(), hw::total_peak_flops(c, s.dtype));
  return est;
}

}  // namespace strata::cost
