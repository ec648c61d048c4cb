// cost/stage: one layer on one stage's devices — roofline compute with the fitted GEMM-efficiency curve (or the
// measured profile), Megatron TP collectives, ZeRO-3 gathers, static and activation memory — plus the stage
// context (groups and their α–β), pipeline p2p, the DP bucket partition and sync, optimizer step. Stage memory:
// cost/memory.cpp. See stage.hpp.
#include "strata/cost/stage.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/context_parallel.hpp"
#include "strata/cost/overlap.hpp"
#include "strata/cost/p2p_classes.hpp"
#include "strata/cost/precision.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/zero.hpp"

namespace strata::cost {
namespace {

const CostConstants& consts_of(const CostOptions& o) { return o.constants ? *o.constants : builtin_constants(); }

// Linear α–β view of a collective on a group: t(bytes) = α + β·bytes (every closed form in comm is linear).
struct AlphaBeta {
  double alpha = 0, beta = 0;
};
constexpr double kProbeBytes = 1 << 26;

AlphaBeta worst(AlphaBeta a, AlphaBeta b) { return {std::max(a.alpha, b.alpha), std::max(a.beta, b.beta)}; }

AlphaBeta fit_linear(Collective kind, int n, const GroupBandwidth& g, const Profile* profile) {
  if (n <= 1) return {};
  if (profile) {
    for (const auto& f : profile->fits)
      if (f.op == kind && f.group_size == n) return {f.alpha_s, f.beta_s_per_byte};
  }
  const double t0 = collective_time(kind, n, g, 0.0);
  const double t1 = collective_time(kind, n, g, kProbeBytes);
  return {t0, (t1 - t0) / kProbeBytes};
}

// Devices of multi-node groups leaving through each NIC: a count per global NIC, kept in a per-thread buffer so
// that a stage of any size costs O(its devices) (only the touched entries are reset).
struct NicLoad {
  std::vector<int>& count;
  std::vector<int> touched;
  explicit NicLoad(const hw::Cluster& c) : count(buffer()) {
    if (count.size() < static_cast<std::size_t>(hw::num_nics(c))) count.assign(hw::num_nics(c), 0);
  }
  ~NicLoad() {
    for (int n : touched) count[n] = 0;
  }
  void add(int nic) {
    if (count[nic]++ == 0) touched.push_back(nic);
  }
  int of(int nic) const { return count[nic]; }
  static std::vector<int>& buffer() {
    thread_local std::vector<int> b;
    return b;
  }
};

bool same_links(const hw::GroupLinks& a, const hw::GroupLinks& b) {
  return a.bw_bytes_per_s == b.bw_bytes_per_s && a.latency_s == b.latency_s && a.intra_node == b.intra_node &&
         a.num_nodes == b.num_nodes && a.max_devices_per_node == b.max_devices_per_node &&
         a.intra_bw_bytes_per_s == b.intra_bw_bytes_per_s && a.inter_bw_bytes_per_s == b.inter_bw_bytes_per_s &&
         a.intra_latency_s == b.intra_latency_s && a.inter_latency_s == b.inter_latency_s &&
         a.min_devices_per_node == b.min_devices_per_node && a.uniform_per_node == b.uniform_per_node &&
         a.max_devices_per_nic == b.max_devices_per_nic && a.num_racks == b.num_racks;
}

// The devices of a call's groups that decide its result. The groups cover stage devices [0, extent) either as
// consecutive blocks (stride_member 1) or as interleaved residues (stride_group 1); their member pattern repeats
// every period P = lcm(node size, block) devices. When those devices are whole identical nodes in one rack
// (hw::identical_whole_nodes) and extent > 2P, the first two periods hold every distinct (links, concurrency):
// a group outside them is a whole-node translation of one inside (blocks), or the same pattern repeated on more
// nodes (residues: its node count is the window's times extent / 2P), and a NIC's load comes from the devices of
// its own node only. Issue 22: O(period), not O(stage devices), per stage context.
struct GroupWindow {
  int limit;               // devices [0, limit) of the call's extent are scanned
  double node_scale;       // the full groups' node count / the window's (1 when limit = extent)
  bool residues = false;   // interleaved groups (each keeps its members in the window), else blocks
};
GroupWindow group_window(const hw::Cluster& c, std::span<const int> stage_devices, int groups, int group_size,
                         int stride_group, int stride_member) {
  const int extent = groups * group_size;
  const GroupWindow full{extent, 1.0, false};
  const bool blocks = stride_member == 1 && stride_group == group_size;
  const bool residues = stride_group == 1 && stride_member == groups;
  if (!blocks && !residues) return full;
  const int block = blocks ? group_size : groups;
  const int first = stage_devices[0];
  for (int i = 1; i < extent; ++i)  // consecutive ids (node-major placements)
    if (stage_devices[i] != first + i) return full;
  const int node_size = hw::identical_whole_nodes(c, first, extent);
  if (node_size <= 0) return full;
  const long long period = std::lcm(static_cast<long long>(node_size), static_cast<long long>(block));
  if (extent % period != 0 || extent <= 2 * period) return full;
  return {static_cast<int>(2 * period), static_cast<double>(extent) / static_cast<double>(2 * period), !blocks};
}

// The α–β of `kinds` over a set of groups that communicate at the same time (the stage's tp groups, or its dp
// groups), keeping the worst group. NIC sharing: a multi-node group's members on NIC n share it with every other
// multi-node group member on n, so its concurrency is max over its own NICs of (load on n) / (its members on n)
// — counted on the group's own NICs, not the stage's most crowded one. A group whose links and concurrency equal
// the previous group's gives the same α–β (worst() is idempotent), so it is not fitted again; with
// `periodic` only the groups' members inside group_window are scanned (the same result, see there).
void groups_alpha_beta(const hw::Cluster& c, std::span<const int> stage_devices, int groups, int group_size,
                       int stride_group, int stride_member, CommOptions co, const Profile* profile, Collective k1,
                       AlphaBeta& out1, Collective k2, AlphaBeta& out2, bool periodic = true) {
  if (group_size <= 1) return;
  const GroupWindow win = periodic ? group_window(c, stage_devices, groups, group_size, stride_group, stride_member)
                                   : GroupWindow{groups * group_size, 1.0, false};
  // Inside the window: blocks keep whole groups (fewer of them), residues keep every group with fewer members.
  const bool windowed = win.node_scale != 1.0;
  const int scan_groups = windowed && !win.residues ? win.limit / group_size : groups;
  const int scan_members = windowed && win.residues ? win.limit / groups : group_size;
  std::vector<int> members(static_cast<std::size_t>(scan_members));
  auto fill = [&](int g) {
    for (int j = 0; j < scan_members; ++j) members[j] = stage_devices[g * stride_group + j * stride_member];
  };
  std::vector<hw::GroupLinks> links(static_cast<std::size_t>(scan_groups));
  NicLoad load(c);
  for (int g = 0; g < scan_groups; ++g) {
    fill(g);
    links[g] = hw::group_links(c, members);
    if (windowed && win.residues) {  // the same per-node pattern on node_scale times as many nodes
      links[g].num_nodes = static_cast<int>(std::lround(links[g].num_nodes * win.node_scale));
      links[g].intra_node = links[g].num_nodes == 1;
    }
    if (!links[g].intra_node)
      for (int d : members) load.add(hw::nic_of(c, d));
  }
  int last_group = -1, last_concurrent = 0;
  for (int g = 0; g < scan_groups; ++g) {
    const auto& l = links[g];
    int concurrent = 1;
    if (!l.intra_node) {
      fill(g);
      int busiest = 1;
      for (int d : members) busiest = std::max(busiest, load.of(hw::nic_of(c, d)));
      const int own = std::max(1, l.max_devices_per_nic);
      concurrent = std::max(1, (busiest + own - 1) / own);
    }
    if (last_group >= 0 && concurrent == last_concurrent && same_links(l, links[last_group])) continue;
    last_group = g;
    last_concurrent = concurrent;
    co.concurrent_groups_per_nic = concurrent;
    const auto gb = group_bandwidth(l, group_size, co);
    out1 = worst(out1, fit_linear(k1, group_size, gb, profile));
    out2 = worst(out2, fit_linear(k2, group_size, gb, profile));
  }
}

// Time of the overlapped region when `comm` runs concurrently with `comp` on one device, both slowed by the
// contention factor while they overlap (Galvatron, notes_001): max + (slowdown − 1)·min.
double overlapped(double comp, double comm, double slowdown) {
  return std::max(comp, comm) + (slowdown - 1.0) * std::min(comp, comm);
}

}  // namespace

// The eager stack's host time (Python and the dispatcher launching one kernel per op) is a floor under a
// transformer block's GPU time: the host runs ahead of the GPU, so a pass whose kernels are shorter than their
// launches takes the launches' time. Forward eager_host_block_s (by the block's norm form, a proxy for its op
// count: Hugging Face RMSNorm and RoPE are ~8 and ~12 ops where LayerNorm is one), backward 2×, and a full
// recompute adds eager_host_recompute_ratio forwards (the re-run forward plus checkpoint's hooks). Fitted to
// strata's launch-bound single-GPU rows (data/cost_constants.json).
static void apply_eager_host_floor(const model::LayerSpec& layer, const StageContext& ctx, model::Recompute mode,
                                   LayerStageCost& out) {
  const CostConstants& k = *ctx.constants;
  if (!ctx.strategy->eager_elementwise || ctx.cpu || layer.heads <= 0) return;  // blocks only (they have heads)
  const double fwd = layer.norm == model::Norm::rmsnorm ? k.eager_host_block_rmsnorm_s : k.eager_host_block_s;
  if (fwd <= 0) return;
  const double recompute = mode == model::Recompute::full ? k.eager_host_recompute_ratio * fwd : 0.0;
  out.fwd_compute_s = std::max(out.fwd_compute_s, fwd);
  out.bwd_compute_s = std::max(out.bwd_compute_s, 2.0 * fwd + recompute);
}

// The eager stack under torch.autocast over fp32 parameters (plain loops, DDP: not FSDP/DeepSpeed's 16-bit
// parameters) with a 16-bit compute dtype: its 16-bit weights are autocast's per-forward casts.
static bool autocast_weight_casts(const model::LayerQuery& q, const Strategy& s) {
  return q.eager_elementwise && !q.eager_bf16_params && (s.dtype == hw::Dtype::bf16 || s.dtype == hw::Dtype::fp16);
}

void StageSums::add(const LayerStageCost& l, bool is_embedding, bool is_block) {
  if (is_block) {  // what offload= can move to host memory (memory.cpp)
    ++blocks;
    block_activation_bytes += l.activation_bytes;
  }
  fwd_s += l.fwd_s;
  bwd_s += l.bwd_s;
  weight_bytes += l.weight_bytes;
  grad_bytes += l.grad_bytes;
  optimizer_bytes += l.optimizer_bytes;
  activation_bytes += l.activation_bytes;
  params_per_device += l.params_per_device;
  shared_static_bytes += l.shared_static_bytes;
  max_unsharded_weight_bytes = std::max(max_unsharded_weight_bytes, l.unsharded_weight_bytes);
  max_recomputed_bytes = std::max(max_recomputed_bytes, l.recomputed_bytes);
  holds_embedding = holds_embedding || is_embedding;
}

namespace {
StageContext build_stage_context(const hw::Cluster& c, const Strategy& s, std::span<const int> stage_devices,
                                 const CostOptions& opt, bool periodic) {
  if (stage_devices.empty() || static_cast<int>(stage_devices.size()) != s.dp_cp() * s.tp)
    throw std::invalid_argument("make_stage_context: stage_devices must hold dp·cp·tp devices");
  StageContext ctx;
  ctx.strategy = &s;
  ctx.cluster = &c;
  ctx.constants = &consts_of(opt);
  if (const auto recipe = effective_recipe(s); !recipe_matches(*ctx.constants, recipe)) {
    ctx.recipe_constants = std::make_shared<const CostConstants>(with_recipe(*ctx.constants, recipe));
    ctx.constants = ctx.recipe_constants.get();
  }
  ctx.profile = opt.profile;
  ctx.zero3_engine = opt.zero3_engine;
  ctx.devices.assign(stage_devices.begin(), stage_devices.end());
  // The slowest GPU sets the pace of a mixed stage; the smallest memory bounds it.
  ctx.peak_flops = std::numeric_limits<double>::infinity();
  ctx.memory_capacity_bytes = std::numeric_limits<double>::infinity();
  int last_type = -1;
  for (int d : stage_devices) {
    if (c.devices[d].gpu_type == last_type) continue;  // node-major placements repeat the same type
    last_type = c.devices[d].gpu_type;
    const auto& g = c.gpu_of(d);
    double peak = g.peak(s.dtype) * gpu_compute_factor(*ctx.constants, g.name);  // achievable scale
    if (s.dtype == hw::Dtype::fp4) peak *= fp4_gemm_gpu_factor(*ctx.constants, g.name);  // NVFP4 per part
    if (peak < ctx.peak_flops) {
      ctx.peak_flops = peak;
      ctx.gpu_type = c.devices[d].gpu_type;
      ctx.cpu = g.vendor == "cpu";
      ctx.memory_bw_bytes_per_s = g.memory_bw_bytes_per_s;
    }
    ctx.memory_capacity_bytes = std::min(ctx.memory_capacity_bytes, g.memory_bytes);
  }
  if (opt.memory_budget_bytes > 0) ctx.memory_capacity_bytes = std::min(ctx.memory_capacity_bytes, opt.memory_budget_bytes);
  ctx.memory_usable_bytes = usable_memory_bytes(ctx.memory_capacity_bytes, opt.memory_headroom, *ctx.constants, &s);
  const int dp = s.dp_cp(), tp = s.tp;  // gradients are reduced over dp·cp (Megatron, with context parallelism)
  CommOptions co;
  co.constants = ctx.constants;
  AlphaBeta tp_ar, tp_rs, dp_ar, dp_ag;
  // tp groups: dp groups of tp consecutive devices; dp groups: tp groups of dp devices tp apart.
  groups_alpha_beta(c, stage_devices, dp, tp, tp, 1, co, opt.profile, Collective::allreduce, tp_ar,
                    Collective::reduce_scatter, tp_rs, periodic);
  groups_alpha_beta(c, stage_devices, tp, dp, 1, tp, co, opt.profile, Collective::allreduce, dp_ar,
                    Collective::allgather, dp_ag, periodic);
  ctx.tp_allreduce_latency_s = tp_ar.alpha;
  ctx.tp_allreduce_s_per_byte = tp_ar.beta;
  ctx.tp_rs_latency_s = tp_rs.alpha;
  ctx.tp_rs_s_per_byte = tp_rs.beta;
  ctx.dp_allreduce_latency_s = dp_ar.alpha;
  ctx.dp_allreduce_s_per_byte = dp_ar.beta;
  ctx.dp_allgather_latency_s = dp_ag.alpha;
  ctx.dp_allgather_s_per_byte = dp_ag.beta;
  if (s.cp > 1) {
    // cp groups: ranks (d·cp + c)·tp + r for c = 0..cp−1 (the first dp replica's, others are translations). One
    // ring-attention step = one step of a ring all-gather of the cp K/V blocks (cost/context_parallel.hpp).
    AlphaBeta cp_ag, unused;
    groups_alpha_beta(c, stage_devices, tp, s.cp, 1, tp, co, opt.profile, Collective::allgather, cp_ag,
                      Collective::reduce_scatter, unused, periodic);
    ctx.cp_step_latency_s = cp_ag.alpha / (s.cp - 1);
    ctx.cp_step_s_per_byte = cp_ag.beta * s.cp / (s.cp - 1);
  }
  return ctx;
}
}  // namespace

StageContext make_stage_context(const model::Model& /*m*/, const hw::Cluster& c, const Strategy& s,
                                std::span<const int> stage_devices, const CostOptions& opt) {
  return build_stage_context(c, s, stage_devices, opt, true);
}

StageContext detail::make_stage_context_every_group(const hw::Cluster& c, const Strategy& s,
                                                    std::span<const int> stage_devices, const CostOptions& opt) {
  return build_stage_context(c, s, stage_devices, opt, false);
}

bool is_block(model::LayerKind k) {
  return k == model::LayerKind::transformer || k == model::LayerKind::encoder || k == model::LayerKind::decoder ||
         k == model::LayerKind::conv || k == model::LayerKind::generic;
}

model::Recompute layer_recompute_mode(const Strategy& s, int stage, int index_in_stage) {
  if (s.recompute_layers.empty() || stage < 0 || stage >= static_cast<int>(s.recompute_layers.size()))
    return s.recompute;
  return index_in_stage < s.recompute_layers[stage] ? s.recompute : model::Recompute::none;
}

double recomputed_tp_collectives(model::Recompute mode, const model::LayerCost& lc, bool sequence_parallel) {
  if (mode != model::Recompute::full || lc.recompute_flops <= 0 || lc.tp_allreduces_fwd <= 0) return 0;
  const double all = lc.tp_allreduces_fwd;
  if (!lc.recompute_skips_last_gemm) return all;
  return std::max(0.0, all - (sequence_parallel ? 0.5 : 1.0));
}

double gemm_time_s(const StageContext& ctx, const model::Gemm& g, double elem_bytes) {
  // Roofline per GEMM: the FLOP time at the size-dependent efficiency or the bytes moved, whichever is more.
  // A batched product (count > 1: the attention core's per-head, per-window GEMMs) is one batched kernel
  // (cuBLAS strided-batched GEMM): its efficiency follows the whole launch's FLOPs, not one small product's.
  const CostConstants& k = *ctx.constants;
  const double one = 2.0 * g.m * g.n * g.k;
  // CPU: the peak at libtorch's efficiency plus a per-kernel floor, not the GPU-fitted curve (cost/constants.hpp).
  const double flop_s = ctx.cpu ? g.count * one / (ctx.peak_flops * k.cpu_gemm_efficiency) + k.cpu_kernel_overhead_s
                                : g.count * one / (ctx.peak_flops * gemm_efficiency(k, g.count * one, ctx.strategy->dtype));
  const double byte_s = g.count * (g.m * g.k + g.k * g.n + g.m * g.n) * elem_bytes /
                        (ctx.memory_bw_bytes_per_s * k.memory_bw_efficiency);
  return std::max(flop_s, byte_s);
}

namespace {
// ZeRO-3: the engine's all-gathers of the layer's weights before forward and backward and reduce-scatters of its
// gradients, hidden by the compute as far as its prefetch reaches (cost/zero.hpp).
void apply_zero3_comm(const model::LayerCost& lc, const StageContext& ctx, double params, LayerStageCost& out) {
  const CostConstants& k = *ctx.constants;
  const Zero3Engine eng = zero3_engine(ctx.zero3_engine);
  std::vector<double> gemm_params, gemm_flops;
  for (const auto& g : lc.fwd_gemms)
    if (g.count == 1) {  // a linear layer: (tokens × k)·(k × n), weights k·n per tp rank
      gemm_params.push_back(g.k * g.n);
      gemm_flops.push_back(g.flops());
    }
  const auto mods = zero3_modules(eng, params, gemm_params, gemm_flops, out.fwd_compute_s, out.bwd_compute_s);
  Zero3Links l;
  l.latency_s = ctx.dp_allgather_latency_s;  // the ring's (n − 1) steps (cost/comm nccl_ring_time)
  l.s_per_byte = ctx.dp_allgather_s_per_byte;
  // Parameters gathered in the compute dtype, or in the stored low-precision format with lpweights=on (Megatron's
  // --fp8/--fp4-param-gather gathers the fp8/fp4 weights: effective_recipe's weight bytes).
  l.gather_bytes_per_param = std::min(k.grad_comm_bytes_per_param, k.weight_bytes_per_param);
  l.reduce_bytes_per_param = eng.reduce_in_fp32 ? std::max(4.0, k.grad_comm_bytes_per_param) : k.grad_comm_bytes_per_param;
  l.overlap_slowdown = k.overlap_slowdown;
  const Zero3LayerComm z = zero3_layer_comm(eng, mods, l);
  out.zero3_comm_s = z.fwd_exposed_s + z.bwd_exposed_s;
  out.zero3_busy_s = z.busy_s;
  out.fwd_s += z.fwd_exposed_s;
  out.bwd_s += z.bwd_exposed_s;
}
}  // namespace

LayerStageCost layer_stage_cost(const model::Model& m, const model::LayerSpec& layer, const StageContext& ctx,
                                model::Recompute mode) {
  const Strategy& s = *ctx.strategy;
  const CostConstants& k = *ctx.constants;
  model::LayerQuery q;
  q.micro_batch = s.micro_batch;
  q.seq = layer.seq > 0 ? layer.seq : m.seq;
  q.tp = s.tp;
  q.sequence_parallel = s.sequence_parallel && s.tp > 1;
  q.recompute = mode;
  q.recompute_early_stop = s.recompute_early_stop;
  const PrecisionRecipe& recipe = precision_recipe(s.dtype);
  q.bytes_per_element = recipe.activation_bytes_per_element;
  q.gemm_input_bytes_per_element = recipe.gemm_input_activation_bytes_per_element;
  q.attention = attention_kernel_for(s, ctx.cluster->gpu_types[ctx.gpu_type]);
  q.eager_elementwise = s.eager_elementwise;  // the eager stack's saved tensors (model/layer_eager.cpp)
  // Sharded data parallelism on the eager stack is FSDP / DeepSpeed, whose mixed precision keeps 16-bit compute
  // parameters (no autocast over fp32 ones): llm-foundry, torchtitan. Plain loops and DDP run autocast.
  q.eager_bf16_params = s.eager_elementwise && s.zero_stage >= 1 && s.dp > 1;
  q.loss = s.fp32_loss ? model::LossPath::fp32 : model::LossPath::fused;
  q.cp = s.cp;
  const model::LayerCost lc = model::layer_cost(layer, q);
  double attention_s = 0;      // the attention core's forward compute (what hides ring attention's K/V exchange)
  double attention_bwd_s = 0;  // and its backward
  double flash_bwd_s = 0;      // the fused kernel's backward

  LayerStageCost out;
  // ---- compute -------------------------------------------------------------------------------------------------
  std::optional<LayerTimes> measured;
  if (ctx.profile) {
    measured = profile_layer_times(*ctx.profile, layer.kind, layer.hidden, q.seq, s.tp, s.micro_batch,
                                   ctx.cluster->gpu_types[ctx.gpu_type].name);
  }
  const double recompute_ratio = lc.fwd_flops > 0 ? lc.recompute_flops / lc.fwd_flops : 0.0;
  if (measured) {
    // Measured per-rank times; with includes_tp_comm they also hold the layer's TP collectives (not added below).
    out.fwd_compute_s = measured->fwd_s;
    out.recompute_s = recompute_ratio * measured->fwd_s;
    out.bwd_compute_s = measured->bwd_s + out.recompute_s;
  } else {
    const double mem_bw = ctx.memory_bw_bytes_per_s * k.memory_bw_efficiency;
    const double elem_bytes = q.bytes_per_element;
    double gemm_s = 0, gemm_flops = 0;
    double batched_s = 0, score_elements = 0;  // attention core: batched (count > 1) products and their scores
    for (const auto& g : lc.fwd_gemms) {
      const double g_s = gemm_time_s(ctx, g, elem_bytes);
      gemm_s += g_s;
      gemm_flops += g.flops();
      if (g.count > 1) {
        if (batched_s == 0) score_elements = g.count * g.m * g.n;  // the first batched product is QK^T
        batched_s += g_s;
      }
    }
    // FLOPs not described by GEMMs (generic layers) run at the curve's efficiency for their size.
    const auto& gpu = ctx.cluster->gpu_types[ctx.gpu_type];  // fused attention core in the non-GEMM dtype
    // The fused kernel's executed FLOPs (a causal mask skips the tiles above the diagonal); the skipped part is
    // still model FLOPs (fwd_flops), so it is subtracted from the non-GEMM remainder below, not timed.
    const double attention_peak = gpu.peak(recipe.non_gemm_dtype) * attention_gpu_factor(k, q.attention, gpu.name);
    const double flash_s = flash_attention_time(k, q.attention, lc.flash_attention_work_flops, attention_peak);
    flash_bwd_s = flash_attention_time(k, q.attention, lc.flash_attention_bwd_work_flops, attention_peak);
    gemm_s += flash_s;
    attention_s = flash_s + batched_s;
    attention_bwd_s = flash_bwd_s + (lc.fwd_flops > 0 ? lc.bwd_flops / lc.fwd_flops : 2.0) * batched_s;
    const double other_flops = std::max(0.0, lc.fwd_flops - gemm_flops - lc.flash_attention_flops);
    const double other_eff = ctx.cpu ? k.cpu_gemm_efficiency : gemm_efficiency(k, other_flops, s.dtype);
    const double other_s = other_flops > 0 ? other_flops / (ctx.peak_flops * other_eff) : 0;
    const double overhead_s = k.layer_overhead_s + (ctx.cpu ? k.cpu_layer_overhead_s : 0.0);
    // The autocast stack's element-wise traffic is counted op by op (model/layer_eager.cpp), so it runs at the
    // plain achievable bandwidth; the other eager stacks' fused-form count takes the fitted eager factor.
    const bool per_op = autocast_weight_casts(q, s) && layer.heads > 0;  // transformer blocks
    const double elem_mem_bw = s.eager_elementwise && !per_op ? mem_bw * k.eager_elementwise_efficiency : mem_bw;
    const double elem_s = (lc.fwd_elementwise_bytes + fp8_scaling_bytes(lc, recipe, s.fp8_separate_casts)) / elem_mem_bw;
    out.fwd_compute_s = gemm_s + other_s + elem_s + overhead_s;
    // Backward: dgrad + wgrad GEMMs (bwd_flops = 2× forward for GEMM layers), the fused attention kernel's own
    // backward (2.5× its forward's work, model::kFlashBackwardWorkRatio) and element-wise backward ≈ 2× forward.
    const double bwd_ratio = lc.fwd_flops > 0 ? lc.bwd_flops / lc.fwd_flops : 2.0;
    if (mode == model::Recompute::selective && batched_s > 0 && lc.recompute_flops > 0) {
      // Selective recompute re-runs the attention core (Korthikanti §5): the batched score/value products plus
      // softmax and dropout over the score matrix (read + write each).
      out.recompute_s = batched_s + score_elements * elem_bytes * 4.0 / mem_bw;
    } else if (mode == model::Recompute::op && gemm_flops > 0) {
      // Per-op SAC: the re-run matmuls (their share of the GEMM time) and every element-wise op again.
      out.recompute_s = lc.recompute_flops / gemm_flops * (gemm_s - flash_s) + elem_s;
    } else if (lc.recompute_skips_last_gemm) {
      // Full recompute with early stop: the whole forward but its last GEMM (the MLP's output projection).
      out.recompute_s = std::max(0.0, out.fwd_compute_s - gemm_time_s(ctx, lc.fwd_gemms.back(), elem_bytes));
    } else {
      out.recompute_s = recompute_ratio * out.fwd_compute_s;
    }
    out.bwd_compute_s = bwd_ratio * (gemm_s - flash_s + other_s) + flash_bwd_s + 2.0 * elem_s + 2.0 * overhead_s +
                        out.recompute_s;
    apply_eager_host_floor(layer, ctx, mode, out);
  }
  // ---- tensor-parallel collectives (Megatron: blocking; overlap=on: Oases) --------------------------------------------------
  if (s.tp > 1 && !(measured && measured->includes_tp_comm)) {
    const double msg = lc.tp_message_bytes;
    // With sequence parallelism each all-reduce becomes a reduce-scatter + all-gather pair (same volume).
    const double one = q.sequence_parallel ? 2.0 * (ctx.tp_rs_latency_s + ctx.tp_rs_s_per_byte * msg)
                                           : ctx.tp_allreduce_latency_s + ctx.tp_allreduce_s_per_byte * msg;
    out.tp_comm_fwd_s = lc.tp_allreduces_fwd * one;
    // Full recompute re-runs the forward's collectives inside backward; selective recomputes no comm. Early stop
    // skips the last one: the reduce-scatter after the output projection (half of an sp pair), or its all-reduce.
    const double recomputed = recomputed_tp_collectives(mode, lc, q.sequence_parallel);
    out.tp_comm_bwd_s = (lc.tp_allreduces_bwd + recomputed) * one;
    // Per-op SAC keeps the reduce-scatter outputs but re-runs the all-gathers (half of each sp pair).
    if (mode == model::Recompute::op && q.sequence_parallel) out.tp_comm_bwd_s += 0.5 * lc.tp_allreduces_fwd * one;
    // Oases (overlap=on): two sub-batches, each one's collectives behind the other's compute (cost/overlap).
    if (s.tp_overlap) apply_tp_overlap(m, layer, ctx, mode, lc, out);
    // Chunked collective matmul (overlap=async): each collective hidden behind its GEMM's chunks (cost/overlap).
    else if (s.tp_async && !measured && lc.tp_sites().size() == static_cast<std::size_t>(lc.tp_allreduces_fwd))
      apply_tp_async_overlap_sites(ctx, mode, lc, q.bytes_per_element, one / 2.0, out);
    else if (s.tp_async) apply_tp_async_overlap(ctx, mode, lc, out);
  }
  // ---- memory --------------------------------------------------------------------------------------------------
  const double dp = s.dp_cp();  // ZeRO shards over the dp·cp replicas (Megatron's data-parallel group with cp)
  double lc_recompute_extra = 0;  // autocast casts re-made inside a recomputed layer (below)
  const double p = lc.params_per_tp_rank;
  out.params_per_device = p;
  out.unsharded_weight_bytes = p * k.weight_bytes_per_param;
  out.weight_bytes = p * k.weight_bytes_per_param / (s.zero_stage >= 3 ? dp : 1.0);
  if (autocast_weight_casts(q, s)) {
    // Autocast over fp32 parameters: the 16-bit "weights" are autocast's cached casts, which outlive the autocast
    // region only as tensors autograd saved. An embedding lookup is not autocast (no cast); a fully recomputed
    // layer saves nothing in its forward, so its casts are made again, one layer at a time, in its recompute
    // (measured: data/calibration/gpu_train_h100-sxm.json, the recompute=full rows).
    if (model::is_embedding(layer.kind)) out.weight_bytes = 0;
    else if (mode == model::Recompute::full) {
      out.weight_bytes = 0;
      lc_recompute_extra = out.unsharded_weight_bytes;
    }
  }
  out.grad_bytes = p * k.grad_bytes_per_param / (s.zero_stage >= 2 ? dp : 1.0);
  out.optimizer_bytes = p * k.optimizer_bytes_per_param / (s.zero_stage >= 1 ? dp : 1.0);
  out.static_bytes = out.weight_bytes + out.grad_bytes + out.optimizer_bytes;
  out.shared_static_bytes = lc.shared_params_per_tp_rank *
                            (k.weight_bytes_per_param / (s.zero_stage >= 3 ? dp : 1.0) +
                             k.grad_bytes_per_param / (s.zero_stage >= 2 ? dp : 1.0) +
                             k.optimizer_bytes_per_param / (s.zero_stage >= 1 ? dp : 1.0));
  out.activation_bytes = lc.act_total_bytes();
  out.recomputed_bytes = lc.act_recomputed_bytes + lc_recompute_extra;
  out.output_bytes = lc.output_bytes;
  out.flops_fwd = lc.fwd_flops;
  // ---- ZeRO-3: gather the layer's weights before forward and backward, reduce-scatter its gradients ----------
  // ---- context parallelism: ring attention's K/V exchange, hidden by the attention steps (context_parallel.hpp) --
  if (s.cp > 1) {
    const double kv = cp_kv_block_bytes(layer, s.micro_batch, q.seq, s, q.bytes_per_element);
    const RingAttentionComm r = ring_attention_comm(s.cp, attention_s, attention_bwd_s, kv,
                                                    ctx.cp_step_latency_s, ctx.cp_step_s_per_byte, k.overlap_slowdown);
    // The ring-attention kernel waits for its blocks: the exposed part lengthens the layer's compute.
    out.fwd_compute_s += r.fwd_exposed_s;
    out.bwd_compute_s += r.bwd_exposed_s;
  }
  if (s.zero_stage >= 3 && dp > 1 && p > 0) apply_zero3_comm(lc, ctx, p, out);
  out.fwd_s += out.fwd_compute_s + out.tp_comm_fwd_s;
  out.bwd_s += out.bwd_compute_s + out.tp_comm_bwd_s;
  return out;
}

std::vector<LayerStageCost> layer_stage_costs(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                              std::span<const int> stage_devices, const CostOptions& opt) {
  const StageContext ctx = make_stage_context(m, c, s, stage_devices, opt);
  std::vector<LayerStageCost> out;
  out.reserve(m.layers.size());
  for (const auto& l : m.layers) out.push_back(layer_stage_cost(m, l, ctx, s.recompute));
  return out;
}

double p2p_time(const hw::Cluster& c, const Strategy& s, std::span<const int> from, std::span<const int> to,
                double bytes, const CostOptions& opt) {
  // The rank rule (Megatron scatter-gather, NIC sharing) lives in cost/p2p_classes: one scan, then the classes.
  if (from.empty() || from.size() != to.size() || bytes <= 0) return 0;
  return p2p_time(c, p2p_classes(c, s.tp, from, to), s.sequence_parallel, bytes, opt);
}

BucketPartition dp_bucket_partition(double grad_bytes, const CostConstants& k) {
  if (!(grad_bytes > 0)) return {};
  const double n = std::clamp(std::ceil(grad_bytes / k.dp_bucket_bytes), 1.0, std::max(1.0, k.dp_max_buckets));
  return {static_cast<int>(n), grad_bytes / n};
}

double dp_sync_exposed_time(const StageContext& ctx, double grad_params, double overlap_window_s) {
  const Strategy& s = *ctx.strategy;
  const CostConstants& k = *ctx.constants;
  if (s.dp_cp() <= 1 || s.zero_stage >= 3 || grad_params <= 0) return 0;
  const double bytes = grad_params * k.grad_comm_bytes_per_param;
  // Buckets (PyTorch DDP / Megatron): n equal buckets, bucket j released after 1/n-th of the backward; each one a
  // collective of its own (latency included). ZeRO 0: all-reduce; ZeRO 1/2: reduce-scatter (+ the all-gather of
  // the updated weights after the optimizer step).
  const BucketPartition buckets = dp_bucket_partition(bytes, k);
  const double n = buckets.count;
  const double one = s.zero_stage == 0 ? ctx.dp_allreduce_latency_s + ctx.dp_allreduce_s_per_byte * buckets.bytes_per_bucket
                                       : ctx.dp_allgather_latency_s + ctx.dp_allgather_s_per_byte * buckets.bytes_per_bucket;
  // Buckets 0..n−2 overlap the rest of the backward (the last (n−1)/n of it), slowed by the contention factor;
  // the last bucket starts when both the backward and the earlier buckets are done.
  const double window = std::max(0.0, overlap_window_s) * (n - 1) / n;
  const double early = (n - 1) * one;
  const double exposed = overlapped(window, early, k.overlap_slowdown) - window + one;
  const double gather = s.zero_stage == 0 ? 0.0 : ctx.dp_allgather_latency_s + ctx.dp_allgather_s_per_byte * bytes;
  return exposed + gather;
}

double optimizer_step_time(const StageContext& ctx, double params_per_device) {
  const Strategy& s = *ctx.strategy;
  const CostConstants& k = *ctx.constants;
  const double owned = params_per_device / (s.zero_stage >= 1 ? s.dp_cp() : 1);
  return owned * k.optimizer_traffic_bytes_per_param / (ctx.memory_bw_bytes_per_s * k.memory_bw_efficiency);
}

double stage_sync_lower_bound_s(const StageContext& ctx, double min_params, double max_window_s) {
  const Strategy& s = *ctx.strategy;
  const CostConstants& k = *ctx.constants;
  if (!(min_params > 0)) return 0;
  // optimizer_step_time is linear in P.
  double bound = optimizer_step_time(ctx, min_params);
  if (s.dp_cp() <= 1 || s.zero_stage >= 3 || k.overlap_slowdown < 1.0) return bound;
  // dp_sync_exposed_time with n buckets of `one` each, window w' = w·(n−1)/n ≤ w and overlapped(a, c, σ) ≥ max(a, c)
  // (σ ≥ 1): exposed ≥ max(0, (n−1)·one − w) + one = max(one, n·one − w). With bytes = P·grad_comm_bytes_per_param:
  //   one = α + β·bytes/n ≥ α + β·min(bytes, B/2)   (n = clamp(⌈bytes/B⌉, 1, M): bytes/n = bytes when n = 1, else
  //         > B·bytes/(bytes + B) ≥ B/2 when n = ⌈bytes/B⌉, and > B when capped at M)
  //   n·one = n·α + β·bytes ≥ α + β·bytes.
  // Both increase in bytes, and the ZeRO-1/2 all-gather α + β·bytes does too.
  const double bytes = min_params * k.grad_comm_bytes_per_param;
  const bool all_reduce = s.zero_stage == 0;
  const double alpha = all_reduce ? ctx.dp_allreduce_latency_s : ctx.dp_allgather_latency_s;
  const double beta = all_reduce ? ctx.dp_allreduce_s_per_byte : ctx.dp_allgather_s_per_byte;
  const double one = alpha + beta * std::min(bytes, k.dp_bucket_bytes / 2);
  bound += std::max(one, alpha + beta * bytes - std::max(0.0, max_window_s));
  if (!all_reduce) bound += ctx.dp_allgather_latency_s + ctx.dp_allgather_s_per_byte * bytes;
  return bound;
}

}  // namespace strata::cost
