// sched/problem: the scheduler's input — worker types (count, GPUs per server, prices), jobs with their throughput
// on every type (steps/s of the whole job on scale_factor GPUs), optional job-pair throughputs (space sharing) and
// entities (hierarchical fairness) — and the throughputs-file reader (docs/scheduler.md). Every read goes through
// core/json.hpp; infeasible input is a one-line InputError naming the file and field.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "strata/core/json.hpp"

namespace strata::sched {

inline constexpr double kNoSlo = std::numeric_limits<double>::infinity();

struct WorkerType {
  std::string name;                // "v100"
  int count = 0;                   // GPUs of this type
  int per_server = 0;              // GPUs per server (consolidation unit)
  double price_on_demand = -1;     // $ per GPU-hour; < 0 = not given
  double price_spot = -1;          // $ per GPU-hour; < 0 = not given
};

struct JobSpec {
  std::string name;
  std::string job_type;                    // model/type label (generated traces), may be empty
  std::vector<double> throughputs;         // per worker type; steps/s of the whole job, consolidated; 0 = cannot run
  std::vector<double> unconsolidated;      // per worker type; steps/s when spread over servers (= throughputs if absent)
  int scale_factor = 1;                    // GPUs the job uses at a time
  double weight = 1;                       // fairness weight / priority
  double steps = 0;                        // remaining steps (iterations)
  double arrival_s = 0;                    // arrival time (traces)
  double elapsed_s = 0;                    // time since arrival (finish-time fairness t_m)
  double elapsed_isolated_s = 0;           // time the job would have needed so far in isolation (FTF t_iso)
  double slo_s = kNoSlo;                   // deadline from now (min-cost-slo)
  std::string entity;                      // hierarchical: owning entity ("" = its own entity)
  std::string model;                       // --from-planner: zoo name or model file of the job
  std::int64_t global_batch = 0;           // --from-planner: samples per step
};

// Space sharing: two jobs on the same GPUs; throughputs[j] = {steps/s of job a, of job b} on type j.
struct PairSpec {
  int a = 0, b = 0;
  std::vector<std::array<double, 2>> throughputs;
};

enum class EntityPolicy { kFairness, kFifo };

struct EntitySpec {
  std::string name;
  double weight = 1;
  EntityPolicy policy = EntityPolicy::kFairness;
};

struct Problem {
  std::vector<WorkerType> types;
  std::vector<JobSpec> jobs;       // in arrival order (FIFO order)
  std::vector<PairSpec> pairs;
  std::vector<EntitySpec> entities;

  int num_types() const { return static_cast<int>(types.size()); }
  int num_jobs() const { return static_cast<int>(jobs.size()); }
  int type_index(const std::string& name) const;  // -1 when unknown
};

// Parses a throughputs file (docs/scheduler.md). `require_workers` = false lets traces omit "workers" (the
// --cluster flag gives them); then job throughputs may name any type and are resolved later. A job with a
// "model" may omit "throughputs" (filled by --from-planner); the feasibility checks (validate_problem) then wait
// for the caller.
Problem problem_from_json(const core::Json& j, const std::string& origin, bool require_workers = true);
Problem load_problem(const std::string& path, bool require_workers = true);

// Feasibility checks shared by every entry point: every job runs on at least one type, fits on some type
// (scale_factor <= that type's GPUs), pairs have equal scale factors. InputError naming `origin` otherwise.
void validate_problem(const Problem& p, const std::string& origin);

// The cluster syntax of `strata schedule --cluster`: "TYPE:COUNT[/PER_SERVER],..." e.g. "v100:36,k80:36/8"
// (PER_SERVER defaults to 4, the last server of a type may be partial). Prices come from `prices` when given.
std::vector<WorkerType> parse_cluster_spec(const std::string& spec, const std::string& flag = "--cluster");

// Re-indexes a problem's jobs onto another set of worker types (by name; throughputs for types the jobs do not
// list become 0 = cannot run). Prices are kept from `types`, or taken from the problem's types of the same name.
Problem with_worker_types(const Problem& p, const std::vector<WorkerType>& types);

// Fastest throughput of job m over all types (steps/s).
double fastest_throughput(const JobSpec& j);
// Throughput under an equal time share of every type: Σ_j T_mj / num_types (thesis: X^equal_m).
double equal_share_throughput(const JobSpec& j);

// The reference a job's throughput is normalised by (fairness utilities, secondary objectives, reports).
//   kProportional: Gavel's ProportionalPolicy — each type in proportion to its GPU count, Σ_j T_mj·W_j / Σ_j W_j
//                  (gavel policies/proportional.py at c4fa400; ../shared/gavel/README.md). The default.
//   kEqualShare:   strata's earlier convention, an equal time share of every type (thesis §5.2's X^equal).
// On a cluster with equal counts per type the two agree.
enum class Normalization { kProportional, kEqualShare };
double reference_throughput(const Problem& p, const JobSpec& j, Normalization n);
// Isolated throughput of every job (finish-time fairness' X^isolated, "1/n of the cluster"), n jobs, W_j GPUs of
// type j, ΣW in all:
//   kBySize: strata's earlier share, a time fraction s·W_j/ΣW with s = min(1, ΣW/Σ scale_factor) — a k-GPU job
//            gets k GPUs' worth of the 1/Σ scale_factor split;
//   kPerJob: Gavel's IsolatedPolicy (policies/isolated.py, c4fa400): every job 1/n of each type's GPUs, i.e. a
//            time fraction W_j/(n·k) for a k-GPU job, scaled down so that the fractions sum to at most 1. The two
//            agree when every job has one GPU.
enum class IsolatedShare { kBySize, kPerJob };
std::vector<double> isolated_throughputs(const Problem& p, IsolatedShare share = IsolatedShare::kBySize);

}  // namespace strata::sched
