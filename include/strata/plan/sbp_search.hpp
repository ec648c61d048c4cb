// plan/sbp_search: AutoDDL's search over per-layer SBP matmul layouts (seed_004 §4.5–4.6): exhaustive for few
// layers, coordinate descent with random restarts or Metropolis–Hastings for many, repeated layers tied
// (§4.5.1), weight replication capped (§4.5.2); minimises communication (α–β time on the cluster's links, or
// bytes) under the memory limit. Plus the problems it runs on (AutoDDL's MLP, a transformer from the model zoo),
// the Megatron TP+DP and DP baselines in the same space, and the bridge to cost::Strategy. docs/sbp.md.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/memory.hpp"
#include "strata/cost/sbp.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::plan {

// Megatron's role of a matmul (column-parallel: W split by output columns; row-parallel: by input rows).
enum class MegatronRole { column, row };

// One searchable matmul O = I·W, I rows×in, W in×out. Repeats of it in the chain share its layout (tied).
struct SbpLayer {
  std::string name;
  double in = 0, out = 0;
  int heads = 0;  // > 0: an attention core follows; its flat split of dim 1 must divide `heads`
  MegatronRole role = MegatronRole::column;
};

struct SbpProblem {
  std::string name;
  std::vector<SbpLayer> layers;    // distinct layers (a tied repeat appears once)
  std::vector<int> chain;          // the network's matmuls in order, as indices into `layers`
  double rows = 0;                 // rows of one micro-batch (samples × sequence length)
  double micro_batches = 1;        // per iteration (gradient accumulation); boxing is paid per micro-batch
  double act_bytes = 2;            // bytes per activation element
  double grad_bytes = 2;           // bytes per gradient element in the weight all-reduce
  double state_bytes = 16;         // bytes per parameter held (weight + gradient + optimizer states)
  double fixed_memory_bytes = 0;   // memory outside the modelled matmuls (per device)
  double memory_limit_bytes = std::numeric_limits<double>::infinity();  // per device
  int max_p0 = 0;                  // AutoDDL §4.5.2: cap on the weight replication p0 (0 = none)
  // Set by transformer_problem (for the bridge to cost::Strategy).
  std::int64_t micro_batch_samples = 0, global_batch = 0;
  hw::Dtype dtype = hw::Dtype::bf16;
};

// AutoDDL §4.6's test case: dense layers widths[0]→widths[1]→…, `rows` rows per micro-batch, one micro-batch,
// bf16 activations and gradients. InputError naming `where` for fewer than 2 widths or a width or rows ≤ 0.
SbpProblem mlp_problem(const std::vector<double>& widths, double rows, const std::string& where = "sbp");
// The blocks of a transformer (QKV → attention → projection → MLP up → MLP down, tied over the blocks) and the
// LM head (h → vocab, tying the embedding), for micro-batches of `mbs` samples (over all devices) and a global
// batch of `gbs`; bytes from the dtype's precision recipe; memory limit from the cluster's GPU and the headroom.
// InputError naming `where` for a model without transformer blocks, MoE blocks, gbs not a multiple of mbs.
SbpProblem transformer_problem(const model::Model& m, const hw::Cluster& c, std::int64_t mbs, std::int64_t gbs,
                               hw::Dtype dtype, const cost::MemoryHeadroom& headroom = {},
                               const std::string& where = "sbp");

// What a device may hold: the smallest GPU memory of the cluster less the headroom (cost/memory).
double sbp_memory_limit(const hw::Cluster& c, const cost::MemoryHeadroom& headroom = {});

enum class SbpAlgorithm { automatic, exhaustive, coordinate_descent, metropolis };
std::string_view to_string(SbpAlgorithm a);  // "auto", "exhaustive", "cd", "mh"
SbpAlgorithm parse_sbp_algorithm(std::string_view text, const std::string& where);
enum class SbpObjective { time, bytes };
std::string_view to_string(SbpObjective o);  // "time", "bytes"
SbpObjective parse_sbp_objective(std::string_view text, const std::string& where);

struct SbpSearchOptions {
  SbpAlgorithm algorithm = SbpAlgorithm::automatic;
  SbpObjective objective = SbpObjective::time;
  std::uint64_t seed = 1;            // coordinate descent restarts and Metropolis–Hastings draw from it
  int restarts = 256;                // coordinate descent: random initial strategies
  int mh_steps = 20000;              // Metropolis–Hastings proposals
  double mh_temperature = 0.5;       // accept a worse strategy with exp(−Δ/(T·cost)) (AutoDDL's β = 1/(T·cost))
  double max_exhaustive = 2e6;       // automatic: exhaustive up to this many strategies, else coordinate descent
};

// Communication (per iteration, per device) and memory (per device) of one assignment of layouts.
struct SbpCost {
  double activation_time_s = 0, activation_bytes = 0;  // boxing between layers, forward + backward
  double weight_time_s = 0, weight_bytes = 0;          // weight-gradient all-reduces
  double memory_bytes = 0;
  bool fits = true;
  double comm_time_s() const { return activation_time_s + weight_time_s; }
  double comm_bytes() const { return activation_bytes + weight_bytes; }
};

struct SbpSearchResult {
  bool found = false;                          // false: no assignment fits the memory limit
  std::vector<cost::MatmulLayout> choice;      // one per problem layer
  SbpCost cost;
  SbpAlgorithm algorithm = SbpAlgorithm::automatic;  // the one that ran
  double space_size = 0;                       // layouts ^ layers
  std::int64_t evaluated = 0;                  // assignments costed
  double search_time_s = 0;
};

// The layouts each layer may take on the comm's mesh (enumerate_layouts, p0 ≤ max_p0).
std::vector<cost::MatmulLayout> sbp_candidate_layouts(const SbpProblem& p, const cost::SbpComm& comm);
SbpCost evaluate_sbp(const SbpProblem& p, const cost::SbpComm& comm, const std::vector<cost::MatmulLayout>& choice);
// InputError naming the algorithm when exhaustive is asked for a space over 1e9 strategies.
SbpSearchResult search_sbp(const SbpProblem& p, const cost::SbpComm& comm, const SbpSearchOptions& o = {});

// ---- baselines in the same space and the bridge to the rest of strata ----------------------------------------
struct SbpBaseline {
  std::string name;           // "megatron", "dp"
  bool found = false;         // false: no such layout fits the memory limit
  int dp = 0, tp = 0;
  std::vector<cost::MatmulLayout> choice;
  SbpCost cost;
};
// Megatron TP (+DP): every column layer (d, t, 1), every row layer (d, 1, t), t on Megatron's placement (inside a
// node, or whole nodes); the fitting t with the least communication by the objective. dp: t = 1.
SbpBaseline megatron_baseline(const SbpProblem& p, const cost::SbpComm& comm, SbpObjective objective);
SbpBaseline dp_baseline(const SbpProblem& p, const cost::SbpComm& comm);
// (dp, tp) when `choice` is Megatron TP + DP (DP included) on Megatron's placement; nullopt otherwise.
std::optional<std::pair<int, int>> megatron_degrees(const SbpProblem& p, const cost::SbpComm& comm,
                                                    const std::vector<cost::MatmulLayout>& choice);
// The cost::Strategy of a Megatron-shaped choice (dp, tp, pp = 1, mbs = micro_batch_samples / dp), completed on
// the cluster; what `strata estimate`, `simulate`, `export` and `run` take. nullopt when not Megatron-shaped or
// the problem is not a transformer_problem.
std::optional<cost::Strategy> sbp_to_strategy(const SbpProblem& p, const cost::SbpComm& comm, const model::Model& m,
                                              const std::vector<cost::MatmulLayout>& choice);

// Explanation: each chain position's layout and the boxing after it (forward collectives; the backward mirrors them).
struct SbpLayerExplain {
  std::string name;           // "block.3.qkv" style: layer name and repeat count
  int layer = 0;              // index into p.layers
  int repeats = 0;            // how often it occurs in the chain
  cost::MatmulLayout layout;
  cost::LayoutClass layout_class = cost::LayoutClass::dp;
  cost::BoxingStep weight;    // its weight-gradient all-reduce
  std::string next;           // the layer its output feeds ("" = the network's output)
  cost::BoxingPath boxing;    // to `next` (or to a split output)
  int boxing_repeats = 0;     // how often that boundary occurs in the chain
};
std::vector<SbpLayerExplain> explain_sbp(const SbpProblem& p, const cost::SbpComm& comm,
                                         const std::vector<cost::MatmulLayout>& choice);

nlohmann::ordered_json sbp_to_json(const SbpProblem& p, const cost::SbpComm& comm, const SbpSearchResult& r,
                                   const std::vector<SbpBaseline>& baselines);

}  // namespace strata::plan
