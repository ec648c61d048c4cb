// cost/dims: the parallel degrees of a uniform strategy as one value — the named axes (dp, cp, tp, pp), their one
// completion and validation, and the one rank order every module derives its groups from. torchtitan's ParallelDims
// is the model: a new axis (expert parallelism) is a field here, a row of the strategy key table and its cost,
// not a new parameter in every signature (docs/ARCHITECTURE.md §Adding a parallelism axis).
#pragma once
#include <string>

namespace strata::cost {

struct Dims {
  int dp = 1, tp = 1, pp = 1;
  // Context parallelism (ring attention over cp ranks, each holding seq/cp tokens of every sample). 1 = none.
  int cp = 1;

  // Devices of the uniform form: dp·cp·tp·pp.
  int world() const { return dp * cp * tp * pp; }
  // Ranks of a stage that replicate its weights: Megatron's data-parallel group with context parallelism (dp·cp),
  // over which gradients are reduced and ZeRO shards.
  int dp_cp() const { return dp * cp; }
  // Megatron-core's rank order: tp fastest, then cp, then dp, then pp. dp_rank runs over the dp·cp replicas of a
  // stage (dp_rank = d·cp + c), so rank = (stage·dp·cp + dp_rank)·tp + tp_rank.
  int rank(int stage, int dp_rank, int tp_rank) const { return (stage * dp * cp + dp_rank) * tp + tp_rank; }
  bool operator==(const Dims&) const = default;
};

// Fills the degrees left unset (0) as the strategy text documents — tp 1; pp takes the rest when dp is given, else
// 1; dp takes the rest — and checks every rule on `devices` (the cluster's device count; `cluster` names it in
// messages): each degree >= 1, cp divides the devices, dp·cp·tp·pp = devices. InputError naming the rule and the
// offending degrees (the messages of complete_strategy, which calls it).
void complete_dims(Dims& d, int devices, const std::string& cluster);

}  // namespace strata::cost
