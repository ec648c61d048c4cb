// sched/policy: Gavel's scheduling policies (thesis ch. 5 Table 5.1, ch. 6) as optimisation problems over the
// time-fraction allocation X (rows: jobs, or job pairs with space sharing; columns: GPU types, split into
// consolidated/unconsolidated with placement sensitivity), using effective throughput
//   throughput(m, X) = Σ_k∈C_m Σ_j T_kjm · X_kj            (thesis §5, eq. after 5.3)
// Each policy has a heterogeneity-aware form and an agnostic baseline ("<name>-agnostic": the policy sees every
// GPU type as equally fast; X is then evaluated with the real throughputs).
#pragma once
#include <string>
#include <vector>

#include "strata/sched/lp.hpp"
#include "strata/sched/problem.hpp"

namespace strata::sched {

enum class PolicyKind {
  kMaxMinFairness,      // LAS / max-min fairness (Tiresias), weighted, water-filling
  kFinishTimeFairness,  // Themis: min max ρ
  kMakespan,            // min max steps/throughput
  kFifo,                // max Σ throughput/fastest · (M − arrival rank)
  kSjf,                 // as FIFO with the rank by remaining duration
  kMaxThroughput,       // max Σ normalised throughput
  kMinCost,             // max Σ normalised throughput per $ (Gavel's cost policy)
  kMinCostSlo,          // min-cost subject to throughput >= steps/SLO
  kMakespanBudget,      // min makespan subject to total cost <= budget (binary search)
  kHierarchical,        // multi-entity fairness, water-filling with the bottleneck MILP
};

struct Policy {
  PolicyKind kind = PolicyKind::kMaxMinFairness;
  bool agnostic = false;
};

// "max-min-fairness", "max-min-fairness-agnostic", "las" (alias), ... InputError naming `flag` otherwise.
Policy parse_policy(const std::string& name, const std::string& flag = "--policy");
std::string policy_name(const Policy& p);
// Every accepted name (aware forms, then agnostic forms).
std::vector<std::string> policy_names();

enum class PriceKind { kOnDemand, kSpot };

// How an agnostic policy's total GPU time per job is split over the types (its LP sees every type as equally
// fast, so the split is not determined by the objective):
//   kProportional: Gavel's agnostic allocation — the central optimum its interior-point solver returns, each job
//                  gets each type in proportion to the type's GPU count (../shared/gavel/README.md). Independent of
//                  the order of the types in the input. The default.
//   kFillOrder:    strata's earlier split — total demand poured into the types in listed order (what Gavel's
//                  mechanism does for `_perf` policies only); kept for comparison, it depends on the input order.
enum class AgnosticSplit { kProportional, kFillOrder };
struct PolicyOptions {
  bool space_sharing = false;        // add rows for the job pairs of Problem::pairs
  bool placement_sensitive = false;  // consolidated and unconsolidated columns per type
  bool water_filling = true;         // max-min fairness: iterate to Pareto efficiency (else one LP)
  Normalization normalization = Normalization::kProportional;  // reference throughput (problem.hpp)
  AgnosticSplit agnostic_split = AgnosticSplit::kProportional;
  IsolatedShare isolated_share = IsolatedShare::kBySize;  // finish-time fairness' X^isolated (problem.hpp)
  PriceKind price = PriceKind::kOnDemand;
  double budget_usd = -1;            // makespan-budget: total budget in $
  // Relative tolerance of finish-time fairness' binary search on ρ; 0 = the policy's own (1e-7). The simulator
  // uses 1e-3: it re-solves every <= 1920 s and realises X in 360 s rounds, far coarser than 0.1 % of ρ, and each
  // halving is one more LP per re-solve. (makespan-budget is one LP since issue 39: no search.)
  double search_rel_tol = 0;
  // Warm starts across calls (the simulator's re-solves): each policy's LP starts from the basis its previous
  // solve left, mapped by job name; nullptr = cold solves (`allocate`). Owned by the caller; not thread-safe.
  WarmStarts* warm = nullptr;
};

struct Combo {
  std::vector<int> jobs;  // one job, or two with space sharing
  int scale_factor = 1;
  int pair = -1;          // index into Problem::pairs, -1 for a single job
};

struct Column {
  int type = 0;
  bool consolidated = true;
};

struct Allocation {
  std::vector<Combo> combos;           // singles first (combo m = job m), then pairs
  std::vector<Column> columns;
  std::vector<std::vector<double>> x;  // [combo][column] time fraction
  double objective = 0;                // policy's value: max-min level, makespan (s), cost rate ($/h) ...
  std::string objective_name;          // what `objective` is
  int lp_solves = 0;                   // LPs/MILPs solved
  int iterations = 0;                  // water-filling iterations / binary-search steps
  std::string note;                    // a warning for the user (e.g. SLOs infeasible, dropped)
};

// Throughput of job `job` (a member of combo k) on column c under the problem's throughputs.
double combo_throughput(const Problem& p, const Combo& k, const Column& c, int job);

// Per job and GPU type: time fraction summed over combos and columns. [job][type]
std::vector<std::vector<double>> job_type_fractions(const Problem& p, const Allocation& a);
// throughput(m, X) with the real throughputs, steps/s.
std::vector<double> effective_throughputs(const Problem& p, const Allocation& a);
// throughput(m, X) / reference_throughput(m) (thesis §5.2; the reference per `n`, problem.hpp).
std::vector<double> normalized_throughputs(const Problem& p, const Allocation& a,
                                           Normalization n = Normalization::kProportional);
// Cost rate of the allocation, $ per hour (price × GPUs × time fraction); 0 when prices are missing.
double cost_per_hour(const Problem& p, const Allocation& a, PriceKind price);

// Solves `policy` on `p`. InputError when the policy needs data the problem lacks (steps, prices, budget,
// SLOs) naming the job/type and field; never returns an allocation that breaks the base constraints.
Allocation allocate(const Problem& p, const Policy& policy, const PolicyOptions& opt = {});

// What `strata allocate --json` prints (and the Python API's Allocation.to_dict()): policy, allocation
// {job: {type: X}}, effective_throughput, normalized_throughput, pairs (with opt.space_sharing), objective,
// cost_usd_per_hour (at opt.price), lp_solves, note. sched/allocate_json.cpp.
core::OrderedJson allocation_report_json(const Problem& p, const Policy& policy, const Allocation& x,
                                         const PolicyOptions& opt);

}  // namespace strata::sched
