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
  mb.activations_bytes =
      sums.activation_bytes * in_flight_micro_batches(s.schedule, s.pp, stage, s.num_micro_batches(), s.virtual_stages);
  mb.buffers_bytes = (s.zero_stage >= 3 && s.dp > 1) ? 2.0 * sums.max_unsharded_weight_bytes : 0.0;
  // The backward of a recomputed layer re-materialises what its recompute mode dropped while the stage still
  // holds every in-flight micro-batch (the first backward follows the last warm-up forward): one layer at a time.
  mb.recompute_bytes = sums.max_recomputed_bytes;
  mb.workspace_bytes = k.workspace_bytes;
  return mb;
}

}  // namespace strata::cost
