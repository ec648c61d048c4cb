// cost/memory: the one memory model (see memory.hpp) — a stage's memory per device from its layer sums, and the
// usable share of a device after the headroom.
#include "strata/cost/memory.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/units.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/stage.hpp"

namespace strata::cost {

MemoryHeadroom parse_memory_headroom(std::string_view text, const std::string& flag) {
  std::string body(text);
  const bool percent = !body.empty() && body.back() == '%';
  if (percent) body.pop_back();
  const char* begin = body.c_str();
  char* end = nullptr;
  const double value = body.empty() ? NAN : std::strtod(begin, &end);
  if (body.empty() || end != begin + body.size() || !std::isfinite(value) || value < 0)
    throw core::InputError(fmt::format("{}: expected GiB (e.g. 4) or a percentage of each device's memory "
                                       "(e.g. 5%), got '{}'",
                                       flag, std::string(text)));
  MemoryHeadroom h;
  if (percent) {
    if (value >= 100) throw core::InputError(fmt::format("{}: must be < 100%, got '{}'", flag, std::string(text)));
    h.fraction = value / 100.0;
  } else {
    if (value > 1e6) throw core::InputError(fmt::format("{}: must be <= 1e6 GiB, got '{}'", flag, std::string(text)));
    h.bytes = value * core::kGiB;
  }
  return h;
}

double default_headroom_fraction(const Strategy* s, const CostConstants& k) {
  // PyTorch's caching allocator reserves whole segments (2 MiB for small blocks, 20 MiB or the rounded request for
  // large ones; c10/cuda/CUDACachingAllocator.cpp) and splits them; what it reserves beyond what is allocated is
  // lost to the model. A fused stack (Megatron-core, TransformerEngine: few, long-lived, same-sized buffers) keeps
  // the gap near the fitted 5 %; eager PyTorch allocates one differently-sized temporary per op and fragments
  // more, but the published eager runs of data/calibration bound its default today (memory.hpp).
  if (s && s->eager_elementwise) return std::max(k.fragmentation_fraction, kEagerAllocatorGapFraction);
  return k.fragmentation_fraction;
}

double memory_headroom_bytes(double capacity_bytes, const MemoryHeadroom& h, const CostConstants& k,
                             const Strategy* s) {
  if (h.bytes >= 0) return h.bytes;
  const double fraction = h.fraction >= 0 ? h.fraction : default_headroom_fraction(s, k);
  return fraction * capacity_bytes;
}

double usable_memory_bytes(double capacity_bytes, const MemoryHeadroom& h, const CostConstants& k,
                           const Strategy* s) {
  return std::max(0.0, capacity_bytes - memory_headroom_bytes(capacity_bytes, h, k, s));
}

std::string describe_headroom(const MemoryHeadroom& h, const CostConstants& k) {
  if (h.bytes >= 0) return fmt::format("{:g} GiB", h.bytes / core::kGiB);
  if (h.fraction >= 0) return fmt::format("{:g}%", 100.0 * h.fraction);
  if (kEagerAllocatorGapFraction > k.fragmentation_fraction)
    return fmt::format("{:g}% (default; {:g}% for elementwise=eager)", 100.0 * k.fragmentation_fraction,
                       100.0 * kEagerAllocatorGapFraction);
  return fmt::format("{:g}% (default)", 100.0 * k.fragmentation_fraction);
}

double optimizer_step_temp_bytes(OptimizerStep step, double state_params, double largest_layer_params) {
  // AdamW's temporaries are shaped like exp_avg_sq, an fp32 tensor in every recipe (data/precision_recipes.json:
  // optimizer_bytes_per_param 12 = fp32 master + exp_avg + exp_avg_sq; 8 in fp32 training = the two moments).
  // Source: PyTorch torch/optim/adamw.py at commit
  // 002d2f0bb40cf08beb74bce80f52ce4f2eda46a0 (v2.2 line): _fused_adamw updates in place (torch._fused_adamw_);
  // _multi_tensor_adamw's `exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)` allocates one tensor per
  // parameter of the whole (device, dtype) group at once, updated in place after; _single_tensor_adamw's
  // `(exp_avg_sq.sqrt() / bias_correction2_sqrt)` holds two such tensors of one parameter at a time.
  constexpr double state_element_bytes = 4.0;  // fp32
  switch (step) {
    case OptimizerStep::fused: return 0.0;
    // Every parameter whose states the device holds (one group; err high: two groups (decay / no decay) would each
    // allocate only their own share).
    case OptimizerStep::foreach: return state_params * state_element_bytes;
    // One parameter at a time: bounded by two tensors of the largest layer (a layer holds its largest tensor).
    case OptimizerStep::forloop: return 2.0 * largest_layer_params * state_element_bytes;
  }
  return 0.0;
}

double gradient_peak_bytes(const Strategy& s, double grad_bytes, double activation_bytes) {
  if (s.grads == GradBuffer::persistent) return grad_bytes;
  // DDP's all-reduce buckets (gradient_as_bucket_view=False): a persistent copy of the gradients' size.
  const double buckets = (s.grads == GradBuffer::ddp && s.dp_cp() > 1 && s.zero_stage == 0) ? grad_bytes : 0.0;
  // On-demand param.grad: with gradient accumulation the gradients of the first micro-batch are held while later
  // micro-batches' activations build up (their sum). With one micro-batch per step, backward walks the layers in
  // reverse, allocating a layer's gradients as it frees that layer's activations: the live total
  // j·a + (L−j)·g is linear in the layers done, so it peaks at an end, max(activations, gradients) — counted here
  // as the part of the gradients above the activations (measured: data/calibration/gpu_train_h100-sxm.json,
  // one-micro-batch rows against the accum2 row).
  if (s.num_micro_batches() > 1) return buckets + grad_bytes;
  return buckets + std::max(0.0, grad_bytes - activation_bytes);
}

MemoryBreakdown stage_memory(const StageContext& ctx, int stage, const StageSums& sums) {
  const Strategy& s = *ctx.strategy;
  const CostConstants& k = *ctx.constants;
  MemoryBreakdown mb;
  const int versions = weight_versions(s.schedule, s.pp, stage);
  const double shared = sums.holds_embedding ? 0.0 : sums.shared_static_bytes;
  // The tied copy splits like the other static state: weights 2, grads 4, optimizer 12 of 18 bytes.
  const double per_param = k.weight_bytes_per_param + k.grad_bytes_per_param + k.optimizer_bytes_per_param;
  const double sw = per_param > 0 ? shared * k.weight_bytes_per_param / per_param : 0;
  const double sg = per_param > 0 ? shared * k.grad_bytes_per_param / per_param : 0;
  mb.weights_bytes = (sums.weight_bytes + sw) * versions;
  mb.gradients_bytes = sums.grad_bytes + sg;
  mb.optimizer_bytes = sums.optimizer_bytes + (shared - sw - sg);
  // offload=N (Megatron's CPU offloading, pp = 1): N blocks' activations wait in host memory for their backward.
  const double offloaded = s.activation_offload_layers > 0 && sums.blocks > 0
                               ? std::min(s.activation_offload_layers, sums.blocks) * sums.block_activation_bytes /
                                     sums.blocks
                               : 0.0;
  mb.activations_bytes = (sums.activation_bytes - offloaded) *
                         in_flight_micro_batches(s.schedule, s.pp, stage, s.num_micro_batches(), s.virtual_stages);
  mb.buffers_bytes = (s.zero_stage >= 3 && s.dp > 1) ? 2.0 * sums.max_unsharded_weight_bytes : 0.0;
  // The backward of a recomputed layer re-materialises what its recompute mode dropped while the stage still
  // holds every in-flight micro-batch (the first backward follows the last warm-up forward): one layer at a time.
  mb.recompute_bytes = sums.max_recomputed_bytes;
  mb.gradients_bytes = gradient_peak_bytes(s, mb.gradients_bytes, mb.activations_bytes);
  mb.workspace_bytes = k.workspace_bytes;
  // The optimizer step's temporaries (optim=): the step runs after the last backward, when a flushed schedule has
  // freed the activations and the recompute buffer, so only what exceeds them raises the peak; PipeDream and 2BW
  // step while other micro-batches' activations are live (no flush): all of it.
  const double per_param_state = k.optimizer_bytes_per_param;
  const double state_params = per_param_state > 0 ? mb.optimizer_bytes / per_param_state : 0.0;
  const double largest_params =
      k.weight_bytes_per_param > 0 ? sums.max_unsharded_weight_bytes / k.weight_bytes_per_param : 0.0;
  const double temp = optimizer_step_temp_bytes(s.optim, state_params, largest_params);
  const bool flushed = s.schedule != Schedule::pipedream && s.schedule != Schedule::two_bw;
  mb.optimizer_step_bytes = std::max(0.0, temp - (flushed ? mb.activations_bytes + mb.recompute_bytes : 0.0));
  return mb;
}

}  // namespace strata::cost
