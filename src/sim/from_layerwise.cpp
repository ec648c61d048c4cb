// sim/from_layerwise: pipeline input of a per-layer strategy from cost::layerwise_stages (see from_layerwise.hpp,
// docs/simulator.md §Per-layer strategies).
#include "from_layerwise.hpp"

#include <algorithm>

#include "strata/cost/constants.hpp"
#include "strata/cost/layerwise.hpp"

namespace strata::sim::detail {

PipelineInput pipeline_from_layerwise(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                      const CostSimOptions& opt) {
  const cost::CostConstants& k = opt.cost.constants ? *opt.cost.constants : cost::builtin_constants();
  const auto stages = cost::layerwise_stages(m, c, s, opt.cost);
  const int p = s.pp;
  PipelineInput in;
  in.schedule = s.schedule;
  in.p = p;
  in.v = 1;
  in.dp = 1;
  in.m = s.global_batch / (static_cast<std::int64_t>(s.stages.front().dp) * s.micro_batch);
  in.iterations = opt.iterations > 0 ? opt.iterations : default_iterations(s.schedule);
  in.zero_stage = 0;  // ZeRO-3 layers' gathers are inside the layers' communication (cost/zero)
  in.overlap_slowdown = opt.overlap_slowdown >= 1.0 ? opt.overlap_slowdown : k.overlap_slowdown;
  in.workers.resize(p);
  for (int r = 0; r < p; ++r) {
    const cost::StageEstimate& se = stages[r].stage;
    const cost::ChunkSums& x = stages[r].chunk;
    WorkerInput& w = in.workers[r];
    w.devices = se.devices;
    ChunkWork cw;
    cw.fwd_s = x.fwd_compute_s;
    cw.bwd_s = x.bwd_compute_s - x.recompute_s;
    cw.recompute_s = x.recompute_s;
    // The estimate's forward / backward communication split (fwd_s − forward compute); ZeRO-3's exposed gathers
    // and the Slice-Gathers included.
    cw.tp_fwd_s = std::max(0.0, se.fwd_s - x.fwd_compute_s);
    cw.tp_bwd_s = std::max(0.0, se.bwd_s - x.bwd_compute_s);
    cw.act_bytes = x.activation_bytes;
    cw.recompute_bytes = x.max_recomputed_bytes;
    if (r + 1 < p) cw.send_next.time_s = 0.5 * se.p2p_s;
    if (r > 0) cw.send_prev.time_s = 0.5 * stages[r - 1].stage.p2p_s;
    w.chunks.push_back(cw);
    const int versions = cost::weight_versions(s.schedule, p, r);
    w.weight_bytes = se.memory.weights_bytes / std::max(1, versions);
    w.static_bytes = w.weight_bytes + se.memory.gradients_bytes + se.memory.optimizer_bytes + se.memory.buffers_bytes +
                     se.memory.workspace_bytes;
    // The exposed DP sync runs between the last backward and the step (estimate: sync = dp_comm + optimizer).
    w.optimizer_s = se.optimizer_s + se.dp_comm_s;
  }
  return in;
}

}  // namespace strata::sim::detail
