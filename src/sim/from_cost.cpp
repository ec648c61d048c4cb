// sim/from_cost: cost model → simulator inputs (see from_cost.hpp).
#include "strata/sim/from_cost.hpp"

#include "from_layerwise.hpp"
#include "replicas.hpp"
#include "strata/cost/layerwise.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "strata/core/text.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/stage.hpp"

namespace strata::sim {
namespace {

using cost::Schedule;

// Link resources: per device an intra-node transmit and receive port, per NIC a transmit and receive port.
struct Links {
  std::vector<int> intra_tx, intra_rx, nic_tx, nic_rx;
};

// Ports of the devices flagged in `used` (every device in full mode; the representatives' when aggregated).
Links make_links(const hw::Cluster& c, const std::vector<char>& used, PipelineInput& in) {
  Links l;
  auto add = [&](double bw, std::string name) {
    in.resource_bw.push_back(bw);
    in.resource_names.push_back(std::move(name));
    return static_cast<int>(in.resource_bw.size()) - 1;
  };
  l.intra_tx.assign(c.devices.size(), -1);
  l.intra_rx.assign(c.devices.size(), -1);
  for (const auto& d : c.devices) {
    if (!used[d.id]) continue;
    const double bw = c.nodes[d.node].intra.bw_bytes_per_s;
    l.intra_tx[d.id] = add(bw > 0 ? bw : 1.0, "gpu" + std::to_string(d.id) + ".intra.tx");
    l.intra_rx[d.id] = add(bw > 0 ? bw : 1.0, "gpu" + std::to_string(d.id) + ".intra.rx");
  }
  const int nics = hw::num_nics(c);
  l.nic_tx.assign(nics, -1);
  l.nic_rx.assign(nics, -1);
  for (const auto& d : c.devices) {
    if (!used[d.id]) continue;
    const int n = hw::nic_of(c, d.id);
    if (n < 0 || n >= nics || l.nic_tx[n] >= 0) continue;
    const double bw = c.nodes[d.node].nic.bw_bytes_per_s;
    l.nic_tx[n] = add(bw > 0 ? bw : 1.0, "nic" + std::to_string(n) + ".tx");
    l.nic_rx[n] = add(bw > 0 ? bw : 1.0, "nic" + std::to_string(n) + ".rx");
  }
  return l;
}

// Ports used by a message from device a to device b.
void hop(const hw::Cluster& c, const Links& l, int a, int b, std::vector<int>& out) {
  if (a == b) return;
  if (c.devices[a].node == c.devices[b].node) {
    out.push_back(l.intra_tx[a]);
    out.push_back(l.intra_rx[b]);
  } else {
    const int na = hw::nic_of(c, a), nb = hw::nic_of(c, b);
    if (na >= 0 && l.nic_tx[na] >= 0) out.push_back(l.nic_tx[na]);
    if (nb >= 0 && l.nic_rx[nb] >= 0) out.push_back(l.nic_rx[nb]);
  }
}

// A ring over the group in rank order (NCCL ring; hierarchical variants cross the same ports).
std::vector<int> ring_ports(const hw::Cluster& c, const Links& l, const std::vector<int>& group) {
  std::vector<int> out;
  const std::size_t n = group.size();
  if (n > 1)
    for (std::size_t i = 0; i < n; ++i) hop(c, l, group[i], group[(i + 1) % n], out);
  return out;
}

// Aggregated mode (docs/simulator.md §Scale): the ring's ports on the class representatives only. Member i's
// outgoing hop (intra-node or over the NIC) puts its representative's transmit port of that kind in the flow, its
// incoming hop the receive port; every member of a class carries the same flows as its representative (shifted
// copies in lockstep), so the ring's bottleneck share is the same as over all its ports.
std::vector<int> representative_ring_ports(const hw::Cluster& c, const Links& l, const std::vector<int>& group,
                                           const std::vector<int>& rep_device) {
  std::vector<int> out;
  const std::size_t n = group.size();
  if (n <= 1) return out;
  auto add = [&](int port) {
    if (port >= 0 && std::find(out.begin(), out.end(), port) == out.end()) out.push_back(port);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const int a = group[i], b = group[(i + 1) % n];
    if (a == b) continue;
    const int ra = rep_device[i], rb = rep_device[(i + 1) % n];
    if (c.devices[a].node == c.devices[b].node) {
      add(l.intra_tx[ra]);
      add(l.intra_rx[rb]);
    } else {
      const int na = hw::nic_of(c, ra), nb = hw::nic_of(c, rb);
      if (na >= 0) add(l.nic_tx[na]);
      if (nb >= 0) add(l.nic_rx[nb]);
    }
  }
  return out;
}

// `rep_device` (aggregated mode): each member's class representative; empty = every member simulated.
Flow collective_flow(cost::Collective kind, const hw::Cluster& c, const Links& l, const std::vector<int>& group,
                     double bytes, const cost::CommOptions& co, const std::vector<int>& rep_device = {}) {
  Flow f;
  if (group.size() <= 1 || bytes <= 0) return f;
  // Alone on idle links (concurrent_groups_per_nic = 1): the simulator shares the ports itself. Over the full
  // group in either mode (the cost model's collective time).
  f.time_s = cost::collective_time(kind, c, group, bytes, co);
  f.latency_s = cost::collective_time(kind, c, group, 0.0, co);
  f.resources = rep_device.empty() ? ring_ports(c, l, group) : representative_ring_ports(c, l, group, rep_device);
  return f;
}

// One direction of the pipeline p2p between two workers (tp ranks pairwise): cost::p2p_time counts the
// activation and its gradient (2 messages), so one direction is half of it, on a dp = 1 view of the strategy
// (this worker's ranks only; the other dp replicas' sends are separate flows that share the ports).
Flow p2p_flow(const hw::Cluster& c, const Links& l, const cost::Strategy& s1, const std::vector<int>& from,
              const std::vector<int>& to, double bytes, const cost::CostOptions& copt) {
  Flow f;
  if (bytes <= 0) return f;
  f.time_s = 0.5 * cost::p2p_time(c, s1, from, to, bytes, copt);
  f.latency_s = 0.5 * cost::p2p_time(c, s1, from, to, 1.0, copt);
  for (std::size_t j = 0; j < from.size(); ++j) hop(c, l, from[j], to[j], f.resources);
  return f;
}

}  // namespace

int default_iterations(Schedule s) { return (s == Schedule::pipedream || s == Schedule::two_bw) ? 4 : 1; }

PipelineInput pipeline_from_cost(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                 const CostSimOptions& opt) {
  if (cost::is_layerwise(s, c)) return detail::pipeline_from_layerwise(m, c, s, opt);  // issue 16
  cost::require_uniform(s, "simulating");
  const detail::ReplicaClasses rc = detail::replica_classes(c, s, opt.full);
  const int sim_dp = static_cast<int>(rc.rep.size());  // dp ranks played out
  const cost::CostConstants& k = opt.cost.constants ? *opt.cost.constants : cost::builtin_constants();
  // One worker per (stage, dp·cp replica): with context parallelism each cp rank is a worker of its own that
  // runs every micro-batch of its replica on its seq/cp tokens (dp ranks d·cp + c, Megatron's order).
  const int p = s.pp, v = s.virtual_stages, dp = s.dp_cp(), tp = s.tp, chunks = p * v;
  PipelineInput in;
  in.schedule = s.schedule;
  in.p = p;
  in.v = v;
  in.dp = sim_dp;
  if (rc.aggregated()) in.replica_count = rc.count;
  in.m = s.num_micro_batches();
  in.iterations = opt.iterations > 0 ? opt.iterations : default_iterations(s.schedule);
  in.zero_stage = s.zero_stage;
  in.overlap_slowdown = opt.overlap_slowdown >= 1.0 ? opt.overlap_slowdown : k.overlap_slowdown;
  std::vector<char> used(c.devices.size(), 0);
  for (int d : rc.rep)
    for (int dev : detail::replica_devices(s, d)) used[dev] = 1;
  const Links links = make_links(c, used, in);
  const auto bounds = cost::chunk_boundaries(s);
  // A dp = 1 view of the strategy: each worker's own tp group for compute / TP / p2p times.
  cost::Strategy s1 = s;
  s1.dp = 1;
  s1.global_batch = s.micro_batch * s.num_micro_batches();
  // With cp > 1 the worker's layer costs need its cp group (ring attention): the group's cp·tp devices.
  auto cost_devices = [&](int r, int d) {
    std::vector<int> out;
    for (int c0 = d / s.cp * s.cp, j = 0; j < s.cp; ++j)
      for (int t = 0; t < tp; ++t) out.push_back(s.device(r, c0 + j, t));
    return out;
  };
  s1.zero_stage = 0;
  cost::CommOptions co;
  co.constants = &k;

  auto worker_devices = [&](int r, int d) {
    std::vector<int> out;
    for (int j = 0; j < tp; ++j) out.push_back(s.device(r, d, j));
    return out;
  };
  in.workers.resize(static_cast<std::size_t>(p) * sim_dp);
  in.sync.resize(p);
  std::vector<std::vector<double>> chunk_out_bytes(p, std::vector<double>(v, 0.0));
  for (int r = 0; r < p; ++r) {
    std::vector<int> stage_devs;
    for (int d = 0; d < dp; ++d)
      for (int j = 0; j < tp; ++j) stage_devs.push_back(s.device(r, d, j));
    const cost::StageContext sctx = cost::make_stage_context(m, c, s, stage_devs, opt.cost);
    // Memory and parameters: the stage's context (ZeRO sharding over dp), per chunk — the estimate's own loop.
    const cost::StageLayerSums stage = cost::sum_stage_layers(
        m, s, bounds, r, true,
        [&](int li, model::Recompute mode) { return cost::layer_stage_cost(m, m.layers[li], sctx, mode); });
    const cost::MemoryBreakdown mb = cost::stage_memory(sctx, r, stage.sums);
    const int versions = cost::weight_versions(s.schedule, p, r);
    const double one_version = mb.weights_bytes / std::max(1, versions);
    const double optimizer_s = cost::optimizer_step_time(sctx, stage.sums.params_per_device);
    for (int c_local = 0; c_local < v; ++c_local) chunk_out_bytes[r][c_local] = stage.chunks[c_local].output_bytes;
    // Compute and TP per worker, on its own GPUs (heterogeneous replicas take their own durations).
    for (int d = 0; d < sim_dp; ++d) {
      WorkerInput& w = in.workers[r * sim_dp + d];
      w.devices = worker_devices(r, rc.rep[d]);
      const cost::StageContext wctx =
          cost::make_stage_context(m, c, s1, s.cp > 1 ? cost_devices(r, rc.rep[d]) : w.devices, opt.cost);
      const cost::StageLayerSums own = cost::sum_stage_layers(
          m, s1, bounds, r, true,
          [&](int li, model::Recompute mode) { return cost::layer_stage_cost(m, m.layers[li], wctx, mode); });
      w.chunks.resize(v);
      for (int c_local = 0; c_local < v; ++c_local) {
        const cost::ChunkSums& x = own.chunks[c_local];
        ChunkWork& cw = w.chunks[c_local];
        cw.fwd_s = x.fwd_compute_s;
        cw.bwd_s = x.bwd_compute_s - x.recompute_s;
        cw.recompute_s = x.recompute_s;
        cw.tp_fwd_s = x.tp_comm_fwd_s;
        cw.tp_bwd_s = x.tp_comm_bwd_s;
        if (x.tp_blocks_fwd > 0) {  // overlap=on: the two-sub-batch chain on a TP stream (sim/pipeline.hpp)
          cw.tp_blocks_fwd = x.tp_blocks_fwd;
          cw.tp_blocks_bwd = std::max(1, x.tp_blocks_bwd);
          cw.tp_sub_fwd_s = x.tp_sub_comm_fwd_s;
          cw.tp_sub_bwd_s = x.tp_sub_comm_bwd_s;
          cw.tp_fwd_s = x.tp_blocking_fwd_s;
          cw.tp_bwd_s = x.tp_blocking_bwd_s;
        }
        // Stored and re-materialised bytes per device come from the stage's (dp-sharded) view, as in the estimate.
        cw.act_bytes = stage.chunks[c_local].activation_bytes;
        cw.recompute_bytes = stage.chunks[c_local].max_recomputed_bytes;
      }
      // Everything of stage_memory but the activations (per micro-batch, tracked by the simulator), the recompute
      // re-materialisation (per backward) and the extra weight versions (per stash).
      w.weight_bytes = one_version;
      // optimizer_step_bytes: the optim= step's temporaries beyond what the step finds freed (cost/memory.cpp), as
      // the estimate counts them.
      w.static_bytes = one_version + mb.gradients_bytes + mb.optimizer_bytes + mb.buffers_bytes + mb.workspace_bytes +
                       mb.optimizer_step_bytes;
      w.optimizer_s = optimizer_s;
    }
    // Data-parallel traffic per chunk and tp rank, in the cost model's bucket partition.
    StageSync& ss = in.sync[r];
    ss.grad_buckets.assign(v, {});
    ss.param_gather.assign(v, {});
    ss.zero3_gather.assign(v, {});
    if (dp > 1) {
      for (int c_local = 0; c_local < v; ++c_local) {
        const double bytes = stage.chunks[c_local].params_per_device * k.grad_comm_bytes_per_param;
        const cost::BucketPartition buckets = cost::dp_bucket_partition(bytes, k);
        if (buckets.count == 0) continue;
        ss.grad_buckets[c_local].assign(buckets.count, {});
        for (int j = 0; j < tp; ++j) {
          std::vector<int> group, rep_device;
          for (int d = 0; d < dp; ++d) group.push_back(s.device(r, d, j));
          if (rc.aggregated())
            for (int d = 0; d < dp; ++d) rep_device.push_back(s.device(r, rc.rep[rc.class_of[d]], j));
          const auto reduce = s.zero_stage == 0 ? cost::Collective::allreduce : cost::Collective::reduce_scatter;
          const Flow bucket = collective_flow(reduce, c, links, group, buckets.bytes_per_bucket, co, rep_device);
          for (auto& b : ss.grad_buckets[c_local]) b.push_back(bucket);
          const Flow gather = collective_flow(cost::Collective::allgather, c, links, group, bytes, co, rep_device);
          if (s.zero_stage == 1 || s.zero_stage == 2) ss.param_gather[c_local].push_back(gather);
          if (s.zero_stage == 3) ss.zero3_gather[c_local].push_back(gather);
        }
      }
    }
  }
  // Pipeline p2p between consecutive chunks' workers (same dp rank).
  for (int r = 0; r < p; ++r) {
    for (int d = 0; d < sim_dp; ++d) {
      WorkerInput& w = in.workers[r * sim_dp + d];
      for (int c_local = 0; c_local < v; ++c_local) {
        const int g = c_local * p + r;
        const double bytes = chunk_out_bytes[r][c_local];
        if (g + 1 < chunks) {
          const int rn = (g + 1) % p;
          w.chunks[c_local].send_next = p2p_flow(c, links, s1, w.devices, in.workers[rn * sim_dp + d].devices, bytes,
                                                 opt.cost);
        }
        if (g > 0) {
          const int rp = (g - 1) % p, cp = (g - 1) / p;
          w.chunks[c_local].send_prev = p2p_flow(c, links, s1, w.devices, in.workers[rp * sim_dp + d].devices,
                                                 chunk_out_bytes[rp][cp], opt.cost);
        }
      }
    }
  }
  return in;
}

Simulation simulate(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s, const CostSimOptions& opt,
                    const SimOptions& sim_opt) {
  Simulation out;
  // A timeline (trace) has one process per device: every replica is played out then.
  CostSimOptions o = opt;
  o.full = opt.full || sim_opt.keep_timeline;
  out.input = pipeline_from_cost(m, c, s, o);
  out.result = simulate_pipeline(out.input, sim_opt);
  out.simulated_replicas = out.input.dp;
  const detail::ReplicaClasses rc = detail::replica_classes(c, s, o.full);
  out.full_reason = rc.full_reason;
  if (rc.aggregated()) detail::expand_replicas(s, rc, out);
  out.estimate = cost::estimate(m, c, s, opt.cost);
  const cost::CostConstants& k = opt.cost.constants ? *opt.cost.constants : cost::builtin_constants();
  out.memory.resize(out.input.workers.size());
  for (std::size_t w = 0; w < out.memory.size(); ++w) {
    WorkerMemory& wm = out.memory[w];
    wm.capacity_bytes = std::numeric_limits<double>::infinity();
    for (int d : out.input.workers[w].devices) wm.capacity_bytes = std::min(wm.capacity_bytes, c.gpu_of(d).memory_bytes);
    wm.usable_bytes = cost::usable_memory_bytes(wm.capacity_bytes, opt.cost.memory_headroom, k, &s);
    const double peak = out.result.workers[w].peak_memory_bytes;
    wm.fits = peak <= wm.usable_bytes;
    if (!wm.fits && out.fits) {
      out.fits = false;
      out.not_fit_reason = fmt::format("stage {} (dp rank {}) peaks at {} per device but its devices have {} ({} after "
                                       "the headroom)",
                                       static_cast<int>(w) / std::max(1, s.dp_cp()), static_cast<int>(w) % std::max(1, s.dp_cp()),
                                       core::format_bytes(peak), core::format_bytes(wm.capacity_bytes),
                                       core::format_bytes(wm.usable_bytes));
    }
  }
  return out;
}

}  // namespace strata::sim
