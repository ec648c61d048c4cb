// cost/strategy: what a parallel training strategy is — plain, JSON-serialisable data — plus its CLI syntax,
// documented defaults (uniform Megatron split, Megatron placement) and the validity rules. It lives in `cost`
// (not `plan`) because the cost model evaluates it and every module above reads it (see docs/ARCHITECTURE.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/dims.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {

enum class Schedule { gpipe, one_f_one_b, interleaved, pipedream, two_bw };
std::string_view to_string(Schedule s);                                     // "gpipe", "1f1b", "interleaved", ...
Schedule parse_schedule(std::string_view text, const std::string& where);  // InputError otherwise

// How AdamW's step runs (`optim=`, docs/strategy.md): PyTorch's fused kernel (torch.optim.AdamW(fused=True);
// Megatron's and DeepSpeed's fused Adam alike), foreach (foreach=True, PyTorch's default on CUDA: multi-tensor
// ops over a whole parameter group, whose out-of-place steps allocate state-sized temporaries) or the for-loop
// (foreach=False: one parameter at a time). cost::optimizer_step_temp_bytes prices the difference.
enum class OptimizerStep { fused, foreach, forloop };
std::string_view to_string(OptimizerStep o);                                         // "fused", "foreach", ...
OptimizerStep parse_optimizer_step(std::string_view text, const std::string& where);  // InputError otherwise

// Where gradients live (`grads=`, docs/strategy.md; cost::stage_memory prices it): a persistent buffer held from
// the first backward to the optimizer step (Megatron's main_grad buffers, DeepSpeed, FSDP: the default); on demand
// (a single-process PyTorch loop: each param.grad is allocated in backward and freed by
// zero_grad(set_to_none=True), so with one micro-batch per step the backward turns activations into gradients
// and the peak holds the larger of the two, not their sum); or DDP (PyTorch DistributedDataParallel with its
// default gradient_as_bucket_view=False: persistent all-reduce buckets of the gradients' size besides the
// on-demand param.grad tensors; with one process it is the on-demand form).
enum class GradBuffer { persistent, ondemand, ddp };
std::string_view to_string(GradBuffer g);                                     // "persistent", "ondemand", "ddp"
GradBuffer parse_grad_buffer(std::string_view text, const std::string& where);  // InputError otherwise

// --- Per-stage and per-layer choices (docs/strategy.md "Per-stage strategies") ---------------------------------
// A uniform strategy has one (dp, tp) for every pipeline stage and uses every device (Megatron). A per-stage
// strategy lists its stages: each its own device set, (dp_i, tp_i) and layer count, optionally one choice per
// layer (Galvatron-BMW's per-layer space, Oases' overlapped TP). Only the representation and its rules live here;
// costing them is issues 14, 16 and 17 (require_uniform says so to consumers that cannot handle them yet).

// How a layer's data-parallel replicas hold its weights: plain DP (replicated weights; the strategy's zero stage,
// capped at 2, shards optimizer states/gradients) or SDP (ZeRO-3 / FSDP: weights sharded too).
enum class LayerDataParallel { dp, sdp };
std::string_view to_string(LayerDataParallel d);  // "dp", "sdp"
// Which ranks of the stage group form a layer's tensor-parallel groups (Galvatron's tp_consecutive_flag):
// consecutive = ranks g·tp … g·tp+tp−1 (inside a node first), strided = ranks r, r+dp_l, r+2·dp_l, … .
enum class TpOrder { consecutive, strided };
std::string_view to_string(TpOrder o);  // "consecutive", "strided"

// One layer's choice inside its stage's group of dp_i·tp_i devices.
struct LayerChoice {
  int tp = 0;  // tensor-parallel degree of the layer (divides dp_i·tp_i); 0 = the stage's tp (complete_strategy)
  LayerDataParallel data_parallel = LayerDataParallel::dp;  // over the remaining dp_i·tp_i / tp ranks
  model::Recompute recompute = model::Recompute::none;       // activation recomputation of this layer
  TpOrder tp_order = TpOrder::consecutive;
  bool overlap_tp = false;  // Oases: TP collectives overlapped with the other half-micro-batch's compute
  bool operator==(const LayerChoice&) const = default;
};

// One pipeline stage of a per-stage strategy.
struct StageChoice {
  std::string gpu;           // GPU type (a cluster GPU type name; "" = given by `devices`, may mix types)
  std::vector<int> devices;  // dp·tp devices in rank order (dp_rank·tp + tp_rank); empty = allocate by `gpu`
  int dp = 1, tp = 1;
  int layers = 1;            // consecutive entries of the model's layer chain (embedding and head included)
  std::vector<LayerChoice> layer_choices;  // empty = every layer follows the stage; else one per layer
  bool operator==(const StageChoice&) const = default;
};

// The degrees (dp, tp, pp, cp) are the Dims base (cost/dims.hpp: one type, its completion and the rank order).
struct Strategy : Dims {
  std::int64_t micro_batch = 1;          // mbs
  std::int64_t global_batch = 1;         // gbs; micro-batches per pipeline m = gbs / (dp·mbs)
  int virtual_stages = 1;                // v: model chunks per device (interleaved schedule)
  Schedule schedule = Schedule::one_f_one_b;
  int zero_stage = 0;                    // 0..3 (3 = sharded data parallel / FSDP)
  model::Recompute recompute = model::Recompute::none;
  // Optional per-stage number of recomputed layers (size pp); empty = every layer follows `recompute`.
  std::vector<int> recompute_layers;
  // `earlystop=on`: full recompute as PyTorch's non-reentrant checkpoint runs it (torchtitan, FSDP's
  // apply_activation_checkpointing, torch.compile): the re-run forward of a block stops once the tensors its
  // backward needs exist, skipping the last GEMM and the collective after it (model::LayerQuery). Off = Megatron's
  // full recompute, which re-runs the whole forward. Only layers that recompute fully are affected.
  bool recompute_early_stop = false;
  bool sequence_parallel = false;
  // Oases overlapped tensor parallelism (`overlap=on`, cost/overlap.hpp): every layer splits the micro-batch in
  // two sub-batches and runs one's TP collective while the other computes. Off = Megatron (blocking TP).
  bool tp_overlap = false;
  // Chunked collective matmul (`overlap=async`, cost/overlap.hpp): each sequence-parallel all-gather /
  // reduce-scatter is split into tp chunks that overlap the neighbouring GEMM's chunks (Megatron/TE
  // --tp-comm-overlap, torchtitan async TP). Needs sp = on; any mbs. Exclusive with tp_overlap.
  bool tp_async = false;
  hw::Dtype dtype = hw::Dtype::bf16;     // compute dtype (mixed precision)
  // `fp8cast=separate` (dtype=fp8 only): each GEMM operand gets its own amax and cast kernels, re-cast in
  // backward, as torchao float8's dynamic tensorwise scaling (torchtitan) runs it; fused (false) = TransformerEngine's
  // cast(-transpose) kernels fused into the neighbouring ops (Megatron-core, NeMo). data/precision_recipes.json.
  bool fp8_separate_casts = false;
  // Element-wise kernels: fused (false; Megatron-core / TransformerEngine) or one eager PyTorch kernel per op
  // (true; `elementwise=eager`: torchtitan without torch.compile, llm-foundry): CostConstants::
  // eager_elementwise_efficiency scales their memory time.
  bool eager_elementwise = false;
  // The LM head's loss path (`loss=fused|fp32`, model::LossPath): fused (false; Megatron's fused vocab-parallel
  // cross-entropy keeps only the fp32 softmax) or `cross_entropy(logits.float())` (true; plain PyTorch loops:
  // bf16 logits, their fp32 log-softmax and its gradients, per micro-batch on the last stage).
  bool fp32_loss = false;
  // Attention kernel; unset = the default of each stage's GPU (attention_kernel_for: flash where supported).
  std::optional<model::AttentionKernel> attention;
  OptimizerStep optim = OptimizerStep::fused;  // `optim=`: how the AdamW step runs (see OptimizerStep)
  GradBuffer grads = GradBuffer::persistent;   // `grads=`: where gradients live (see GradBuffer)
  // `gradbuf=bf16`: the persistent gradient buffer and its data-parallel reduction in bf16 (Megatron
  // --grad-reduce-in-bf16; Megatron-Bridge's grad_reduce_in_fp32=False): 2 B per parameter instead of fp32 main
  // grads' 4 (data/precision_recipes.json's grad_bytes_per_param). Megatron-LM's default with --bf16 is fp32.
  bool grad_buffer_bf16 = false;
  // `lpweights=on` (dtype fp8, mxfp8, fp4 with a sharded optimizer): the compute weights kept only in the
  // low-precision format, gathered in it (Megatron --fp8-param-gather / --fp4-param-gather): weight bytes per
  // parameter = hw::dtype_bytes(dtype) instead of bf16's 2; the fp32 master copy stays in the optimizer state.
  bool low_precision_weights = false;
  // `offload=N`: the activations of N transformer blocks of the stage kept in host memory between their forward
  // and backward (Megatron --cpu-offloading-num-layers N; TransformerEngine's CPU offload overlaps the copies with
  // compute). Megatron's rules: pp = 1, no recompute, N < the model's blocks. 0 = none.
  int activation_offload_layers = 0;
  // Layers per pipeline chunk, in chain order (size pp·v), counting entries of the model's layer chain
  // (embedding and head included). Empty = default: blocks spread evenly, embedding with the first chunk, head
  // with the last (Megatron).
  std::vector<int> split;
  // placement[r] = physical device of rank r, where r = (stage·dp + dp_rank)·tp + tp_rank (tp fastest, then dp,
  // then pp: Megatron's order). Empty = identity on the cluster's node-major device order.
  std::vector<int> placement;
  // Per-stage form (size pp) when not empty; then dp, tp, split and placement are unused (0 / empty) and v = 1:
  // read a strategy of either form through stage_views. Empty = the uniform form above.
  std::vector<StageChoice> stages;

  // Uniform form: m = gbs/(dp·mbs) micro-batches per pipeline (0 in the per-stage form: see StageView).
  std::int64_t num_micro_batches() const {
    return dp > 0 && micro_batch > 0 ? global_batch / (static_cast<std::int64_t>(dp) * micro_batch) : 0;
  }
  int num_devices() const { return world(); }  // uniform form (0 in the per-stage form: devices_used)
  // The device of a rank (Dims::rank: dp_rank = d·cp + c over the stage's dp·cp replicas, tp fastest).
  int device(int stage, int dp_rank, int tp_rank) const { return placement[rank(stage, dp_rank, tp_rank)]; }
  bool operator==(const Strategy&) const = default;
};

// CLI syntax: "dp=8,tp=8,pp=16,mbs=1,gbs=1536,v=3,schedule=interleaved,zero=1,recompute=full,sp=on,
// split=6+6+…,rlayers=2+2+…,dtype=bf16,place=0+1+2…"; per-stage form "mbs=1,gbs=64,stages=a100:dp2:tp1:12/
// v100-16gb@16+17+18+19:dp1:tp4:12,layers=-/tp4*3+tp2.sdp.full*9" (docs/strategy.md). InputError naming the key on anything invalid.
// `where` = "--strategy". Keys not given are left for complete_strategy: dp/tp/pp/gbs come back as 0 (= unset),
// the rest with the struct's defaults (docs/strategy.md). strategy_from_json does the same for JSON.
Strategy parse_strategy(std::string_view text, const std::string& where = "--strategy");
std::string to_cli_string(const Strategy& s);
nlohmann::ordered_json to_json(const Strategy& s);
Strategy strategy_from_json(const nlohmann::json& j, const std::string& origin);
// Reads a strategy file, or a plan file (takes its "best" entry's strategy).
Strategy load_strategy_file(const std::string& path);

// Fills documented defaults (split, placement, pp=devices/(dp·tp) when dp·tp·pp is short...) and checks every
// rule: dp·tp·pp = devices, gbs divisible by dp·mbs, tp divides heads, v ≥ 1 and interleaving needs m % pp == 0,
// stages ≤ layers, split sums to the layer count, placement is a permutation... InputError naming the rule.
// A per-stage strategy gets its own rules (devices exist, have the named type, none used twice, layers sum to the
// chain, gbs divisible by every dp_i·mbs, per-layer tp divides the stage group...), its stages' devices and GPU
// names and its layers' tp filled, layer choices equal to the stage's default dropped, and it comes back in the
// uniform form when its stages are all alike (collapse_to_uniform).
Strategy complete_strategy(Strategy s, const model::Model& m, const hw::Cluster& c);

// The attention kernel a stage on `gpu` runs: the strategy's choice, else flash where FlashAttention 2 exists for
// GPU × dtype — GPUs with bf16 tensor cores (sm80+: Ampere/Hopper, AMD MI200+; all of them, and only they in the
// catalog, list bf16) and a 16-bit attention dtype (bf16, fp16, fp8's bf16) — eager elsewhere (V100, T4, CPU;
// fp32/tf32, where SDPA runs its math path with eager attention's memory). docs/strategy.md.
model::AttentionKernel attention_kernel_for(const Strategy& s, const hw::GpuSpec& gpu);
// Why `kernel` cannot run on `gpu` with training dtype `dtype` (one line naming the rule, for the validity error),
// or "" when it can.
// Why `dtype` cannot train on the cluster ("" when it can): fp6 is a catalog peak only; mxfp8 and fp4 need every
// GPU type to list them (no fallback for block-scaled formats); the message names the GPUs that have them.
std::string dtype_unsupported(hw::Dtype dtype, const hw::Cluster& c);
std::string attention_unsupported(model::AttentionKernel kernel, const hw::GpuSpec& gpu,
                                  hw::Dtype dtype = hw::Dtype::bf16);

// True for the uniform form (one dp and tp for every stage, every device, no per-layer choices): all that the
// cost model, planner, simulator and executor handle today.
bool is_uniform(const Strategy& s);
// The one check consumers that handle only the uniform form call at their entry: InputError naming what the
// strategy has that they cannot do yet ("per-stage (dp, tp) differs between stages: simulating such strategies is
// not supported yet (...)"). `doing` = "costing", "simulating", "running"...
void require_uniform(const Strategy& s, std::string_view doing = "costing");

// One pipeline stage of a complete strategy of either form, so consumers can be written once.
// A stage's degrees are its Dims (pp = 1; cp > 1 in the uniform form only).
struct StageView : Dims {
  std::vector<int> devices;             // dp·cp·tp devices in rank order ((d·cp + c)·tp + tp_rank)
  int gpu_type = -1;                    // index into Cluster::gpu_types; -1 = the devices mix types
  struct Chunk {
    int index = 0;        // chunk number in chain order (stage, stage+pp, … with v > 1)
    int first_layer = 0;  // first chain entry
    int num_layers = 0;
  };
  std::vector<Chunk> chunks;            // the chunks it holds, in chain order (one unless interleaved)
  int num_layers = 0;                   // chain entries over all its chunks
  int recompute_layers = -1;            // the rlayers entry (-1 = every layer follows `recompute`)
  std::vector<LayerChoice> layer_choices;  // empty = every layer follows the stage
  std::int64_t micro_batches = 0;       // per replica and iteration: gbs/(dp·mbs) (round-robin dealing)
  int device(int dp_rank, int tp_rank) const { return devices[dp_rank * tp + tp_rank]; }
};
// The per-stage view of a complete strategy: a uniform one gives pp stages with its dp/tp, chunks from `split`
// and device sets from `placement` (Megatron's rank order); a per-stage one its stages. std::invalid_argument
// when `s` is not complete.
std::vector<StageView> stage_views(const Strategy& s, const hw::Cluster& c);
// Devices a complete strategy uses (dp·tp·pp for the uniform form, Σ dp_i·tp_i for the per-stage form).
int devices_used(const Strategy& s);
// A complete uniform strategy (v = 1) written in the per-stage form: stage i = {its devices, dp, tp, split[i]};
// InputError when v > 1 (per-stage strategies have one chunk per stage).
Strategy to_per_stage(const Strategy& s, const hw::Cluster& c);
// The reverse: a complete per-stage strategy whose stages all have the same (dp, tp), no per-layer choices and
// together use every device, in the uniform form (split = layers, placement = the stages' devices); nullopt
// when it is not all alike. complete_strategy applies it.
std::optional<Strategy> collapse_to_uniform(const Strategy& s, const hw::Cluster& c);

// The first layer index of each chunk (size pp·v + 1; last entry = number of layers); in the per-stage form the
// chunks are the stages.
std::vector<int> chunk_boundaries(const Strategy& s);
// The Megatron default split of `num_chunks` chunks over the model's chain.
std::vector<int> default_split(const model::Model& m, int num_chunks);

}  // namespace strata::cost
