// plan/search: the planner — enumerate (dp, tp, pp) × placement × micro-batch × schedule/v × ZeRO × recompute ×
// sequence parallelism, solve the exact layer split of each (plan/split), cost it with cost::estimate, keep the
// top K, and compute the built-in baselines (megatron, uniform, dp-only, zero3-only). Exact (equals exhaustive
// evaluation of the same space, tests/plan), deterministic for any thread count, and fast: per-layer costs are
// computed once per distinct layer shape and stage device class, and configurations are visited in order of a
// valid lower bound and pruned against the current K-th best in fixed-size batches. Algorithm: docs/planner.md.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/cost/engine.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/placement.hpp"

namespace strata::plan {

// 3d: dp/tp/pp/mbs only (AMP: 1F1B, no ZeRO, no recompute, no sp); full: + gpipe, interleaved (v), ZeRO 0–3,
// recompute none/selective/full, sp; all: full + the asynchronous schedules pipedream and 2bw (weight
// stashing / double buffering change the optimizer semantics, so they are opt-in).
enum class Space { three_d, full, all };
std::string_view to_string(Space s);
Space parse_space(std::string_view text, const std::string& where);

// How the top plans are ordered (docs/planner.md §Ranking). margin (default): among the plans within
// `margin_tolerance` (2 %) of the fastest, the one with the most memory margin first (a plan at the edge of memory
// is a risk a practitioner will not take for 2 %); the rest by time. fastest: by time only (the old rule).
enum class Objective { margin, fastest };
std::string_view to_string(Objective o);
Objective parse_objective(std::string_view text, const std::string& where);

struct Candidate;
struct PlanOptions {
  std::int64_t global_batch = 0;
  Space space = Space::full;
  int top_k = 5;
  int threads = 1;
  PlacementMode placement = PlacementMode::hetero;
  int max_tp = 0;                  // 0 = no limit
  int max_pp = 0;                  // 0 = no limit
  hw::Dtype dtype = hw::Dtype::bf16;
  bool eager_elementwise = false;  // every candidate costed with elementwise=eager (--elementwise eager)
  // The stack's forms of full recompute and fp8 (--earlystop, --fp8-cast separate): every candidate with
  // recompute=full gets earlystop=on, every fp8 candidate fp8cast=separate (docs/strategy.md).
  bool recompute_early_stop = false;
  bool fp8_separate_casts = false;
  cost::OptimizerStep optim = cost::OptimizerStep::fused;  // --optim: how AdamW steps (its temporaries' memory)
  bool fp32_loss = false;  // the loss path (strategy key loss=): set by --engine from its profile
  cost::GradBuffer grads = cost::GradBuffer::persistent;  // where gradients live (grads=): set by --engine
  // Attention kernel of every candidate; unset = each GPU's default (cost::attention_kernel_for).
  std::optional<model::AttentionKernel> attention;
  // --engine: search only what this engine can run (cost::engine_cannot_run, filtered before costing) and cost
  // it with the engine's stack traits (cost::apply_engine_traits replaces the four fields above). The plan file
  // records its name. Unset = the full space.
  std::optional<cost::EngineProfile> engine;
  cost::CostOptions cost;          // profile / constants
  bool baselines = true;
  Objective objective = Objective::margin;  // --objective
  double margin_tolerance = 0.02;           // "within 2 % of the fastest" (Objective::margin)
  std::uint64_t anneal_seed = 1;   // --placement anneal
  int anneal_iterations = 300;
  int batch_size = 64;             // pruning batch (results do not depend on it; only `evaluated` may)
  // Micro-batches per pipeline at most; 0 = no cap, < 0 = --gbs auto's cap 2·pp (1 without pipelining).
  std::int64_t max_micro_batches = 0;
  int max_v = 0;                   // largest interleaving v (0 = 8; 1 = no interleaved schedule)
  bool exhaustive = false;         // cost every configuration (no lower-bound pruning): the tests' reference
  // Symmetry-aware evaluation (docs/planner.md §Scale): stage contexts built once per translated-twin stage and
  // reused by estimate, layer costs once per variant. false = the per-device reference path (every stage's
  // context built, every estimate from scratch); the plans are identical (tests/plan/test_plan_symmetry).
  bool symmetry = true;
  // Called between batches with (configurations visited, total) — for a progress line. May be empty.
  std::function<void(std::int64_t, std::int64_t)> progress;
  // Called for every configuration the search costs and keeps as a candidate, with the lower bound it was ordered
  // and pruned by (tests check bound ≤ estimate on exhaustive runs). May be empty.
  std::function<void(double lower_bound_s, const Candidate&)> on_costed;
};

struct Candidate {
  cost::Strategy strategy;          // complete (split and placement filled)
  cost::Estimate estimate;
  std::string placement_label;      // "megatron", "types v100-16gb>t4", "anneal"...
  double split_objective_s = 0;     // the split DP's pipeline objective (AMP eq. 5 / steady state)
  std::int64_t order = 0;           // enumeration index (the deterministic tie-break)
};

struct Baseline {
  std::string name;                 // megatron, uniform, dp-only, zero3-only
  bool found = false;               // a fitting strategy exists
  cost::Strategy strategy;
  cost::Estimate estimate;
  std::string note;                 // how it was chosen / why none
};

struct RejectReason {
  std::string reason;
  std::int64_t count = 0;
  std::string example;              // one strategy (CLI syntax) with that reason
};

struct PlanResult {
  std::vector<Candidate> top;       // best first
  std::vector<Baseline> baselines;
  std::int64_t space_size = 0;      // configurations enumerated (after the divisibility rules)
  std::int64_t lower_bounded = 0;   // configurations given a lower bound
  std::int64_t pruned_by_bound = 0; // never costed: lower bound ≥ the K-th best
  std::int64_t evaluated = 0;       // strategies costed by cost::estimate (search + baselines + annealing)
  std::int64_t splits_solved = 0;
  std::int64_t split_bounds_tried = 0;
  std::vector<RejectReason> rejected;  // sorted by reason
  std::vector<std::string> explanation;  // why the best plan looks the way it does
  double search_time_s = 0;
};

// A plan's memory margin: the share of usable memory (capacity − headroom) its fullest device leaves free,
// min over stages of 1 − memory / usable (0.03 = 97 % used; negative when it does not fit).
double memory_margin(const cost::Estimate& e);
// Orders `top` (already by time) by `opt.objective`: Objective::margin moves the plans within margin_tolerance of
// the fastest to the front, most margin first (ties: time, then enumeration order). Deterministic.
void rank_by_objective(std::vector<Candidate>& top, const PlanOptions& opt);

// Runs the search. InputError when the request is impossible: gbs not divisible by any dp (names the nearest
// gbs that works), or nothing fits memory (says the smallest memory per GPU the model would need and with
// which strategy, and which GPU types of the catalog have that much).
PlanResult plan(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt);

// The largest number of tokens (global batch × sequence length) one iteration may hold: 2^53, the last integer
// a double counts exactly (token, FLOP and micro-batch counts go through doubles). Also bounds the global batch.
inline constexpr std::int64_t kMaxGlobalBatch = std::int64_t{1} << 53;
// InputError (one line, naming --gbs) when gbs × seq exceeds kMaxGlobalBatch tokens: no cluster can process it.
void check_global_batch(const model::Model& m, std::int64_t gbs);
// The checks `strata plan` (and the Python API's strata.plan) run on the options before any search: gbs >= 1,
// top_k >= 1, threads in 1..256, max_tp/max_pp >= 0, then check_global_batch (unless skip_global_batch).
// InputError naming the CLI flag. plan/options_check.cpp.
void check_plan_options(const PlanOptions& opt, const model::Model& m, bool skip_global_batch = false);

// The layer split that plan() would choose for a strategy whose degrees, mbs, schedule... are fixed (split and
// placement given or defaulted): exact for gpipe/1f1b/pipedream/2bw, the Megatron split for interleaved.
// Returns false when no split fits memory.
bool optimal_split(const model::Model& m, const hw::Cluster& c, cost::Strategy& s, const cost::CostOptions& opt = {},
                   double* objective_s = nullptr);

// Plan file (docs/planner.md §Plan file): best {strategy, estimate, placement, cli}, candidates, baselines
// (name → estimate), baseline_strategies, speedups, rejected, evaluated, space_size, search_time_s.
nlohmann::ordered_json plan_to_json(const PlanResult& r, const model::Model& m, const hw::Cluster& c,
                                    const PlanOptions& opt);
// The plan file's text: dump_json(plan_to_json(...)) with `extra`'s members (an object; trials, per_stage)
// appended, and a final newline, written member by member so that the whole tree never exists at once
// (98,304-GPU plans: the tree was most of the process's peak memory).
std::string plan_file_text(const PlanResult& r, const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                           const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace strata::plan
