// cost/zero: the communication of ZeRO-3 / FSDP (full shard) for one layer and one micro-batch, as the engines issue
// it — how many collectives run, of which size and dtype, how long they keep the links busy, and how much of that
// the compute hides given how far ahead the engine prefetches.
//
// FSDP / DeepSpeed ZeRO-3 (Rajbhandari et al. 2020 §5; PyTorch FSDP, Zhao et al. 2023 §3.3): per micro-batch, an
// all-gather of a wrap unit's (FSDP) or module's (DeepSpeed) weights before its forward, another before its
// backward (the forward's copy is freed: reshard_after_forward), and a reduce-scatter of its gradients after its
// backward. Each collective is a ring over the dp·cp ranks — NCCL has no tree algorithm for all-gather or
// reduce-scatter — so each pays (n − nodes)·α_intra + (nodes − 1)·α_inter of latency (cost/comm nccl_ring_time),
// milliseconds at thousands of ranks. The engine prefetches `prefetch_depth` collectives ahead of the compute; a
// collective can hide only behind the compute issued before it, and the collectives run one after another on the
// links. Engine facts and their sources: docs/cost-model.md §ZeRO-3 collectives.
#pragma once
#include <span>
#include <string_view>
#include <vector>

namespace strata::cost {

// Which engine's ZeRO-3 is costed. fsdp: PyTorch FSDP2 as torchtitan runs it (and FSDP1 as llm-foundry does): one
// collective per wrap unit (a strata layer), gradients reduced in fp32. deepspeed: DeepSpeed ZeRO-3: one
// all-gather per parameterised module (a strata layer's linear GEMMs), gradients reduce-scattered in buckets of
// reduce_bucket_size elements in the compute dtype, small parameters persistent.
enum class Zero3EngineKind { fsdp, deepspeed };
std::string_view to_string(Zero3EngineKind k);

struct Zero3Engine {
  Zero3EngineKind kind = Zero3EngineKind::fsdp;
  bool per_module = false;                // all-gathers per module (DeepSpeed) instead of per unit (FSDP)
  int prefetch_depth = 1;                 // all-gathers issued ahead of the compute that needs them
  double persistence_threshold_params = 0;  // modules with fewer parameters stay gathered (no collective)
  double reduce_bucket_params = 0;        // > 0: reduce-scatters per reduce_bucket_params elements; 0: one per unit
  bool reduce_in_fp32 = true;             // gradients reduce-scattered in fp32 (4 B/param) instead of grad_comm
};
// The engine defaults (zero.cpp, each with its source file and commit).
Zero3Engine zero3_engine(Zero3EngineKind k);

// One parameterised piece of a layer as the engine gathers it: its parameters (per tp rank) and the compute that
// runs while it is gathered (forward and backward of one micro-batch).
struct Zero3Module {
  double params = 0;
  double fwd_s = 0, bwd_s = 0;
};

// The dp group's α–β of one ring all-gather / reduce-scatter (cost/stage StageContext dp_allgather_*) and the bytes
// of one parameter in the gathered (compute) and the reduced dtype.
struct Zero3Links {
  double latency_s = 0;         // one collective's latency: the ring's (n − 1) steps
  double s_per_byte = 0;        // per byte of the gathered output (= of the reduce-scatter input)
  double gather_bytes_per_param = 2;
  double reduce_bytes_per_param = 4;
  double overlap_slowdown = 1;  // γ ≥ 1: compute and communication overlapping both slow down (Galvatron)
};

struct Zero3LayerComm {
  int gathers = 0;                 // all-gathers of the layer's weights per micro-batch (forward + backward)
  int reduce_scatters = 0;         // reduce-scatters of its gradients per micro-batch
  double latency_s = 0;            // Σ α over those collectives (the part that does not shrink with bytes)
  double busy_s = 0;               // time the collectives keep the links busy per micro-batch (all of them)
  double fwd_exposed_s = 0;        // added to the forward beyond the compute
  double bwd_exposed_s = 0;        // added to the backward beyond the compute
};

// The layer's modules as `e` gathers them: FSDP one unit (all parameters, the layer's compute); DeepSpeed one
// module per linear GEMM whose weights reach the persistence threshold (the compute split by GEMM FLOPs), the
// rest persistent. `gemm_params` / `gemm_flops`: the layer's linear GEMMs' weights per tp rank and their FLOPs.
std::vector<Zero3Module> zero3_modules(const Zero3Engine& e, double layer_params, std::span<const double> gemm_params,
                                       std::span<const double> gemm_flops, double fwd_s, double bwd_s);

// Steady state of a stack of identical layers (each layer's modules follow the previous layer's): a compute stream
// and one serial communication stream; forward, the all-gather of module j is issued when the compute of module
// j − prefetch_depth starts; backward (modules in reverse), the same for its all-gather, and its reduce-scatter
// when its backward ends. Exposed = the layer's span − its compute, plus (γ − 1)·min(compute, communication).
Zero3LayerComm zero3_layer_comm(const Zero3Engine& e, std::span<const Zero3Module> modules, const Zero3Links& l);

// The former closed form for one unit with prefetch depth 1 and equal gather / reduce-scatter links (kept for the
// layer-wise planner's SDP layers): fwd_exposed = overlapped(neighbour_fwd, gather) − neighbour_fwd,
// bwd_exposed = overlapped(neighbour_bwd, gather + reduce_scatter) − neighbour_bwd, busy = 2·gather + rs.
Zero3LayerComm zero3_layer_comm(double gather_s, double reduce_scatter_s, double neighbour_fwd_s,
                                double neighbour_bwd_s, double overlap_slowdown);

}  // namespace strata::cost
