// cost/memory: the one memory model of a device — what a stage's device holds at its peak (stage_memory, declared
// in stage.hpp next to the sums it reads, defined in src/cost/memory.cpp) and how much of the device's memory a
// plan may use (capacity − headroom). estimate(), the planner's split DP and the simulator all call these, so
// "fits" means the same everywhere (docs/cost-model.md §Memory).
#pragma once
#include <string>
#include <string_view>

#include "strata/cost/strategy.hpp"

namespace strata::cost {

struct CostConstants;
struct Strategy;

// Temporary bytes AdamW's step allocates on a device (the `optim=` key, docs/cost-model.md §Memory): fused 0;
// foreach one state-sized tensor per parameter whose states the device holds (`state_params`); forloop two
// tensors of one parameter, bounded by the largest layer (`largest_layer_params`). stage_memory adds what
// exceeds the memory the step finds freed (MemoryBreakdown::optimizer_step_bytes).
double optimizer_step_temp_bytes(OptimizerStep step, double state_params, double largest_layer_params);
// The gradients' share of a device's peak under the strategy's grads= form (GradBuffer): all of them for a
// persistent buffer or gradient accumulation; with one micro-batch per step and on-demand .grad tensors only what
// exceeds the activations (backward frees those as it allocates these); DDP adds its buckets.
double gradient_peak_bytes(const Strategy& s, double grad_bytes, double activation_bytes);

// Memory kept free on every device: an absolute reserve or a share of the device's capacity. The default
// (neither given) is default_headroom_fraction of the capacity (per stack: the caching allocator's
// reserved-vs-allocated gap and the allocations no formula sees; docs/cost-model.md §Memory).
struct MemoryHeadroom {
  double bytes = -1;        // ≥ 0: this many bytes; < 0: not given
  double fraction = -1;     // in [0, 1): this share of the capacity; < 0: not given
};

// Parses `--memory-headroom`: "GIB" (binary gigabytes, e.g. "4" or "2.5") or "PCT%" (of each device's capacity,
// e.g. "10%"). InputError naming `flag` on anything else, a negative or non-finite value, or a share ≥ 100 %.
MemoryHeadroom parse_memory_headroom(std::string_view text, const std::string& flag);

// The default headroom share for the stack a strategy runs: the caching allocator's reserved-vs-allocated gap.
// A fused Megatron-like stack keeps the constants' fragmentation_fraction (5 %); eager PyTorch (elementwise=eager)
// kEagerAllocatorGapFraction, which is 5 % too for now: published eager runs bound it (a 10 % gap would put 12
// llm-foundry runs that ran predicted out of memory; the largest predicted use of those rows is 94.0 % of the
// device), so a larger eager gap waits for reserved-memory measurements. s = nullptr: the fused default.
// The one place this rule lives (docs/cost-model.md §Memory, Headroom).
inline constexpr double kEagerAllocatorGapFraction = 0.05;
double default_headroom_fraction(const Strategy* s, const CostConstants& k);
// Headroom in bytes on a device of `capacity_bytes` (the stack's default when `h` gives neither).
double memory_headroom_bytes(double capacity_bytes, const MemoryHeadroom& h, const CostConstants& k,
                             const Strategy* s = nullptr);
// What a plan may use on that device: max(0, capacity − headroom). A stage fits when its memory ≤ this.
double usable_memory_bytes(double capacity_bytes, const MemoryHeadroom& h, const CostConstants& k,
                           const Strategy* s = nullptr);
// The headroom as the CLI prints it: "4 GiB" or "5%" (default marked "(default)").
std::string describe_headroom(const MemoryHeadroom& h, const CostConstants& k);

}  // namespace strata::cost
