// cost/zero: ZeRO-3 / FSDP collectives per layer and micro-batch as the engines issue them (granularity, dtype,
// prefetch depth) and the compute that hides them (see zero.hpp for the model, docs/cost-model.md for the sources).
#include "strata/cost/zero.hpp"

#include <algorithm>
#include <cmath>

namespace strata::cost {

std::string_view to_string(Zero3EngineKind k) { return k == Zero3EngineKind::deepspeed ? "deepspeed" : "fsdp"; }

Zero3Engine zero3_engine(Zero3EngineKind k) {
  Zero3Engine e;
  e.kind = k;
  if (k == Zero3EngineKind::fsdp) {
    // FSDP2 (torch.distributed.fsdp.fully_shard, PyTorch 2.4+): one all-gather and one reduce-scatter per
    // fully_shard unit (torchtitan wraps each transformer block), the next unit's all-gather issued while the
    // current one computes (implicit forward prefetch, explicit backward prefetch of one unit). Gradients are
    // reduced in MixedPrecisionPolicy.reduce_dtype = fp32: torchtitan's mixed_precision_reduce defaults to
    // "float32" (torchtitan/config/job_config.py:290 at 24e91056; torchtitan/config/configs.py:102 at b5bcd76c).
    e.per_module = false;
    e.prefetch_depth = 1;
    e.reduce_in_fp32 = true;
    return e;
  }
  // DeepSpeed ZeRO-3 (deepspeed/runtime/zero/partitioned_param_coordinator.py fetch_sub_module): each submodule's
  // parameters are all-gathered by its pre-forward/pre-backward hook; prefetching stops once
  // stage3_prefetch_bucket_size = 5e7 elements are in flight, i.e. one 150M-600M-parameter linear of a large
  // model; modules under stage3_param_persistence_threshold = 1e5 elements stay gathered; gradients are
  // reduce-scattered per reduce_bucket_size = 5e8 elements (deepspeed/runtime/zero/config.py defaults at
  // edaa7221) in communication_data_type, which defaults to the compute dtype (bf16 under "bf16": engine.py
  // communication_data_type at edaa7221).
  e.per_module = true;
  e.prefetch_depth = 1;
  e.persistence_threshold_params = 1e5;
  e.reduce_bucket_params = 5e8;
  e.reduce_in_fp32 = false;
  return e;
}

std::vector<Zero3Module> zero3_modules(const Zero3Engine& e, double layer_params, std::span<const double> gemm_params,
                                       std::span<const double> gemm_flops, double fwd_s, double bwd_s) {
  if (!(layer_params > 0)) return {};
  double gathered = 0, flops = 0;
  if (e.per_module)
    for (std::size_t i = 0; i < gemm_params.size(); ++i)
      if (gemm_params[i] >= e.persistence_threshold_params) {
        gathered += gemm_params[i];
        flops += gemm_flops[i];
      }
  // A unit (FSDP), or a layer without linear GEMMs (embedding): one module with all parameters and compute.
  if (!e.per_module || !(gathered > 0) || !(flops > 0)) return {{layer_params, fwd_s, bwd_s}};
  std::vector<Zero3Module> out;
  for (std::size_t i = 0; i < gemm_params.size(); ++i) {
    if (gemm_params[i] < e.persistence_threshold_params) continue;
    const double share = gemm_flops[i] / flops;  // non-GEMM work rides with the GEMMs in proportion
    out.push_back({gemm_params[i], share * fwd_s, share * bwd_s});
  }
  return out;
}

namespace {

// One pass direction of the steady-state replay: a compute stream and one serial communication stream.
struct Streams {
  double comp_end = 0, comm_free = 0;
  double run_comm(double issue_s, double dur_s) {
    comm_free = std::max(comm_free, issue_s) + dur_s;
    return comm_free;
  }
};

constexpr int kPasses = 3;  // layers replayed: the third is in steady state (prefetch reaches one layer back)

double forward_span(const Zero3Engine& e, std::span<const Zero3Module> mods, const Zero3Links& l, double* comm_s) {
  const int M = static_cast<int>(mods.size()), N = kPasses * M, d = std::max(1, e.prefetch_depth);
  std::vector<double> start(N, 0);
  Streams st;
  double second_end = 0;
  for (int i = 0; i < N; ++i) {
    const Zero3Module& m = mods[i % M];
    const double issue = i >= d ? start[i - d] : 0.0;
    const double ag = l.latency_s + l.s_per_byte * m.params * l.gather_bytes_per_param;
    const double ready = st.run_comm(issue, ag);
    if (i >= 2 * M) *comm_s += ag;
    start[i] = std::max(st.comp_end, ready);
    st.comp_end = start[i] + m.fwd_s;
    if (i == 2 * M - 1) second_end = st.comp_end;
  }
  return st.comp_end - second_end;
}

// Backward: modules in reverse order; module j's all-gather issued when the compute d modules earlier starts, its
// gradients' reduce-scatter when a bucket fills (every unit at the end of its backward for FSDP).
double backward_span(const Zero3Engine& e, std::span<const Zero3Module> mods, const Zero3Links& l, double* comm_s,
                     int* reduce_scatters) {
  const int M = static_cast<int>(mods.size()), N = kPasses * M, d = std::max(1, e.prefetch_depth);
  std::vector<double> start(N, 0), end(N, 0), rs_bytes(N, 0);
  double pending = 0;  // gradient elements waiting in the bucket
  for (int i = 0; i < N; ++i) {
    pending += mods[M - 1 - i % M].params;
    const bool unit_end = i % M == M - 1;
    if ((e.reduce_bucket_params > 0 && pending >= e.reduce_bucket_params) || (e.reduce_bucket_params <= 0 && unit_end)) {
      rs_bytes[i] = pending * l.reduce_bytes_per_param;
      pending = 0;
    }
  }
  Streams st;
  int next_rs = 0;
  double second_end = 0;
  const auto flush_rs_before = [&](int last) {
    for (; next_rs <= last; ++next_rs) {
      if (rs_bytes[next_rs] <= 0) continue;
      const double rs = l.latency_s + l.s_per_byte * rs_bytes[next_rs];
      st.run_comm(end[next_rs], rs);
      if (next_rs >= 2 * M) {
        *comm_s += rs;
        ++*reduce_scatters;
      }
    }
  };
  for (int i = 0; i < N; ++i) {
    const Zero3Module& m = mods[M - 1 - i % M];
    const double issue = i >= d ? start[i - d] : 0.0;
    flush_rs_before(i - d - 1);  // reduce-scatters issued before this all-gather go first
    const double ag = l.latency_s + l.s_per_byte * m.params * l.gather_bytes_per_param;
    const double ready = st.run_comm(issue, ag);
    if (i >= 2 * M) *comm_s += ag;
    start[i] = std::max(st.comp_end, ready);
    end[i] = st.comp_end = start[i] + m.bwd_s;
    if (i == 2 * M - 1) second_end = st.comp_end;
  }
  flush_rs_before(N - 1);
  // The last layer's reduce-scatters overlap the next layer's backward in a longer stack: charge them as links
  // busy, not as exposed (the replay's last pass ends at its compute).
  return st.comp_end - second_end;
}

}  // namespace

Zero3LayerComm zero3_layer_comm(const Zero3Engine& e, std::span<const Zero3Module> modules, const Zero3Links& l) {
  Zero3LayerComm z;
  if (modules.empty()) return z;
  double fwd_c = 0, bwd_c = 0, fwd_comm = 0, bwd_comm = 0;
  for (const auto& m : modules) {
    fwd_c += m.fwd_s;
    bwd_c += m.bwd_s;
  }
  const double fwd_span = forward_span(e, modules, l, &fwd_comm);
  const double bwd_span = backward_span(e, modules, l, &bwd_comm, &z.reduce_scatters);
  z.gathers = 2 * static_cast<int>(modules.size());
  z.latency_s = (z.gathers + z.reduce_scatters) * l.latency_s;
  z.busy_s = fwd_comm + bwd_comm;
  // Where they overlap, compute and communication both slow down by γ (Galvatron): (γ − 1)·min(compute, comm).
  const double g = l.overlap_slowdown - 1.0;
  z.fwd_exposed_s = std::max(0.0, fwd_span - fwd_c) + g * std::min(fwd_c, fwd_comm);
  z.bwd_exposed_s = std::max(0.0, bwd_span - bwd_c) + g * std::min(bwd_c, bwd_comm);
  return z;
}

Zero3LayerComm zero3_layer_comm(double gather_s, double reduce_scatter_s, double neighbour_fwd_s,
                                double neighbour_bwd_s, double overlap_slowdown) {
  // Compute and communication overlapping on one device both slow down by γ (Galvatron): max + (γ−1)·min.
  const auto exposed = [overlap_slowdown](double compute, double comm) {
    compute = std::max(0.0, compute);
    comm = std::max(0.0, comm);
    return std::max(compute, comm) + (overlap_slowdown - 1.0) * std::min(compute, comm) - compute;
  };
  Zero3LayerComm z;
  z.gathers = 2;
  z.reduce_scatters = 1;
  z.busy_s = 2.0 * gather_s + reduce_scatter_s;
  z.fwd_exposed_s = exposed(neighbour_fwd_s, gather_s);
  z.bwd_exposed_s = exposed(neighbour_bwd_s, gather_s + reduce_scatter_s);
  return z;
}

}  // namespace strata::cost
