// plan/placement: which physical devices serve each (stage, dp-rank, tp-rank). Megatron's heuristic (identity
// on the node-major device order: tp inside a node, then dp, then pp), heterogeneity-aware variants (tp groups
// never mix GPU types and sit on the node's fastest links; stage groups ordered by GPU type, every order of the
// types tried so the split DP can give the faster GPUs more layers), and AMP's simulated annealing over device
// swaps for irregular bandwidth matrices (seed_000 §4.2, §6.3). Rank order: r = (stage·dp + dp_rank)·tp + tp_rank.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::plan {

enum class PlacementMode { megatron, hetero, anneal };
std::string_view to_string(PlacementMode m);
PlacementMode parse_placement_mode(std::string_view text, const std::string& where);  // InputError otherwise

struct PlacementCandidate {
  std::vector<int> placement;  // size dp·tp·pp
  std::string label;           // "megatron", "types t4>v100-16gb", ...
};

// Megatron: identity on the node-major order.
std::vector<int> megatron_placement(const hw::Cluster& c);

// Heterogeneity-aware placements for (dp, tp, pp): tp groups inside one node on its fastest links (greedy on the
// node's bandwidth matrix when it has one), grouped by GPU type, stage groups in every order of the GPU types
// (all permutations up to 4 types, else appearance / fastest-first / slowest-first). The Megatron identity is
// always the first candidate; duplicates are removed. Deterministic.
std::vector<PlacementCandidate> hetero_placements(const hw::Cluster& c, const cost::Dims& d);

// AMP-style simulated annealing (seeded, deterministic): starting from `start`, swap two devices of the same GPU
// type or two whole tp groups, accept by the Metropolis rule on cost(placement), geometric cooling. Returns the
// best placement seen (never worse than `start`).
std::vector<int> anneal_placement(const hw::Cluster& c, const cost::Dims& d, const std::vector<int>& start,
                                  const std::function<double(const std::vector<int>&)>& cost,
                                  std::uint64_t seed, int iterations);

// "stages 0-2: v100-16gb, 3: t4" (the GPU type of each stage; "mixed" when a stage spans types).
std::string placement_summary(const hw::Cluster& c, const cost::Strategy& s);
// Device ids as runs, in their order: "0-63,128-191" (a run = consecutive increasing ids; 0+1+2+3 → "0-3").
std::string device_ranges(std::span<const int> devices);
// Where each stage of a complete strategy (either form) runs, compactly: "stage 0 a100 devices 0-63; stage 1 h100
// devices 64-127" (device_ranges of its rank order). What the CLI prints instead of a one-id-per-device `place=`.
std::string placement_ranges(const hw::Cluster& c, const cost::Strategy& s);
// Where the first stage's parallel groups sit in the cluster's tiers (a complete uniform strategy): its tp group,
// tp·cp group and dp group each "inside one node" (the scale-up domain: NVLink / Infinity Fabric) or "across N
// nodes" (the network), and whether pipeline boundaries cross the network. One line for `strata plan`, e.g. "tp 4 x
// cp 2 inside one nvlink5 domain (72 GPUs); dp 9 across 9 domains; pp 2 across domains".
std::string group_tiers_summary(const hw::Cluster& c, const cost::Strategy& s);
// The GPU type index of each stage (−1 when its devices span types).
std::vector<int> stage_gpu_types(const hw::Cluster& c, const cost::Strategy& s);

}  // namespace strata::plan
