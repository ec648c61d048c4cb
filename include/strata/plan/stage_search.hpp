// plan/stage_search: the per-stage planner (issue 14) — every pipeline stage its own (GPU type, dp_i, tp_i),
// searched jointly with the exact layer split, devices possibly left idle. An exact dynamic program over
// (layers placed, stages placed, devices used per GPU type, configuration of the neighbouring stage) in the
// spirit of PipeDream's partitioner (notes_003 §1.3: A(j, m) over layers and worker counts) generalised to
// several GPU types and tensor parallelism (Sailor/Metis/FlashFlex, notes_anchors.md). Objectives: fastest,
// cheapest ($/sample from data/gpu_prices.json), fastest within a budget ($/hour of the GPUs used).
// Algorithm, cost terms and what is approximated: docs/planner.md §Per-stage search.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::plan {

enum class StageObjective { fastest, cheapest, budget };
std::string_view to_string(StageObjective o);
StageObjective parse_stage_objective(std::string_view text, const std::string& where);  // InputError otherwise

struct StageSearchOptions {
  std::int64_t global_batch = 0;
  std::vector<std::int64_t> micro_batches;   // candidates; empty = 1, 2, 4, 8 that divide gbs
  cost::Schedule schedule = cost::Schedule::one_f_one_b;  // gpipe, 1f1b, pipedream, 2bw
  int zero_stage = 0;
  model::Recompute recompute = model::Recompute::none;
  hw::Dtype dtype = hw::Dtype::bf16;
  bool eager_elementwise = false;            // elementwise=eager on every stage (docs/strategy.md)
  int max_tp = 0;                            // 0 = the GPUs of one node of the type
  int max_stages = 0;                        // 0 = no limit (the chain length)
  StageObjective objective = StageObjective::fastest;
  double budget_usd_per_hour = 0;            // objective budget: the GPUs used may cost at most this
  std::map<std::string, double> usd_per_gpu_hour;  // GPU type → price; empty = data/gpu_prices.json
  cost::CostOptions cost;
};

// One stage configuration: a GPU type and its widths (the search's unit).
struct StageConfig {
  int gpu_type = 0;          // index into Cluster::gpu_types
  int dp = 1, tp = 1;
  int devices() const { return dp * tp; }
};

struct StageSearchResult {
  bool found = false;
  cost::Strategy strategy;                   // complete per-stage strategy (or uniform when it collapses)
  cost::Estimate estimate;                   // cost::estimate of `strategy`
  double objective_s = 0;                    // the search's iteration time (cost/per_stage closed form)
  std::vector<int> idle_devices;             // devices no stage uses
  double usd_per_hour = 0, usd_per_sample = 0;  // of the GPUs used (0 when a type has no price)
  std::int64_t micro_batch = 0;
  std::int64_t configs = 0;                  // stage configurations considered (all mbs)
  std::int64_t passes = 0;                   // dynamic-programming solves (one per micro-batch size)
  std::int64_t states = 0;                   // Pareto entries kept over all DP states
  double search_time_s = 0;
};

// The search. InputError when nothing fits memory or the objective cannot be met (budget too small, a GPU type
// without a price), naming the option.
StageSearchResult search_per_stage(const model::Model& m, const hw::Cluster& c, const StageSearchOptions& opt);

// Price of one GPU of each cluster type ($/hour): opt.usd_per_gpu_hour, else data/gpu_prices.json; -1 = unknown.
std::vector<double> gpu_type_prices(const hw::Cluster& c, const StageSearchOptions& opt);

// ---- for tests and the brute-force reference --------------------------------------------------------------------
// The search's own model of one candidate pipeline (stage i = configs[i] over sizes[i] layers, micro-batch mbs):
// the cost/per_stage closed form with each stage costed on its configuration's canonical devices (the first
// dp·tp devices of its type, node-major); +inf when a stage does not fit memory or the devices do not suffice.
struct StageTables;                           // precomputed per (mbs): configurations, ranges, boundaries
double candidate_time(const StageTables& t, const std::vector<int>& configs, const std::vector<int>& sizes);
// Builds the tables the search uses for one micro-batch size.
std::shared_ptr<const StageTables> build_stage_tables(const model::Model& m, const hw::Cluster& c,
                                                      const StageSearchOptions& opt, std::int64_t mbs);
const std::vector<StageConfig>& table_configs(const StageTables& t);
// Exhaustive enumeration of every pipeline (configs and sizes) on `t`: the best time and devices used per type
// (fastest objective). Tests only: exponential.
double brute_force_best_time(const StageTables& t);
// The DP's best time on `t` (fastest objective).
double dp_best_time(const StageTables& t);

}  // namespace strata::plan
