// sched/simulate: the event-driven cluster simulator (thesis §5.6 methodology): jobs arrive (static or Poisson),
// the policy re-computes X when the set of jobs changes (or every round), the round-based mechanism runs each
// round, jobs progress at their placed throughput and complete; metrics: JCT (average, percentiles), makespan,
// cost, utilisation, fairness. Also the seeded trace generator with Gavel's job-size/duration distributions.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/sched/cloud.hpp"
#include "strata/sched/policy.hpp"
#include "strata/sched/slurm.hpp"

namespace strata::sched {

// --- trace generation -----------------------------------------------------------------------------------------

// Which simulator's conventions a generated trace follows (and, in the CLI, the scheduler's defaults):
//   kGavel:  Gavel's utils.generate_job (c4fa400; ../shared/gavel/README.md): scale factor 1/2/4/8 with
//            70/10/15/5 % (multi=1), a job type drawn uniformly until it supports that scale factor, the duration
//            expressed on the V100 (steps = duration × V100 steps/s of that type and size; the fastest type when
//            the table has no v100). The default.
//   kStrata: strata's earlier generator: duration on the fastest type, 70 % 1 GPU, 25 % 2–4, 5 % 8.
enum class Conventions { kGavel, kStrata };

struct GenerateSpec {
  int jobs = 100;
  Conventions conventions = Conventions::kGavel;
  double rate_per_hour = 0;   // Poisson arrival rate λ (jobs/hour); 0 = static trace (all jobs at t = 0)
  std::uint64_t seed = 0;
  bool multi_gpu = false;     // false: every job 1 GPU; true: 70 % 1, 25 % 2–4, 5 % 8 GPUs
  // Extras (drawn from a second PRNG stream, so the base trace of a seed is the same with or without them):
  int pairs_per_job = 0;      // space sharing: pair each job with up to this many later jobs of its size
  bool slo = false;           // SLO = factor × duration on the fastest type, factor uniform in {1.2, 2, 10}
  int entities = 0;           // hierarchical: K entities "e0".."e{K-1}", weights 1..K, job's entity uniform
  double high_priority = 0;   // fraction of jobs with weight `high_priority_weight` (LAS priorities)
  double high_priority_weight = 5;
};

// "jobs=200,rate=4,seed=1[,multi=1]" (keys in any order; jobs required). InputError naming `flag`.
GenerateSpec parse_generate_spec(const std::string& spec, const std::string& flag = "--generate");

// Job-type table: a throughputs file whose jobs are job types (single-GPU throughput per GPU type), plus
// "multi_gpu_scaling" (efficiency per doubling of GPUs, consolidated / unconsolidated). The default table is
// data/sched/gavel_job_types.json.
struct JobTypeTable {
  Problem types;                          // jobs = job types; their "steps" are ignored
  double consolidated_efficiency = 1.0;   // per doubling of the GPU count
  double unconsolidated_efficiency = 1.0;
  // Space sharing ("colocation" in the table): per job type the fraction of a GPU it keeps busy alone
  // (gpu_demand, (0, 1]); two co-located jobs each run at interference / max(1, d_a + d_b) of their solo speed.
  std::vector<double> gpu_demand;         // per job type; empty = the table has no co-location data
  double colocation_interference = 1.0;
  // Gavel's measured table (gavel_throughputs_from_json): steps/s per (job type, scale factor) and GPU type of
  // `types.types`, consolidated and unconsolidated, and the measured co-located pairs. Empty for strata's own
  // tables (multi_gpu_scaling and the co-location model stand in).
  struct Measured {
    int type = 0;            // index into types.jobs
    int scale_factor = 1;
    std::vector<double> consolidated, unconsolidated;  // per GPU type of types.types
  };
  std::vector<Measured> measured;
  // (measured index a, measured index b) -> per GPU type {steps/s of a, of b} when sharing the GPUs.
  std::map<std::pair<int, int>, std::vector<std::array<double, 2>>> measured_pairs;
  int measured_index(int type, int scale_factor) const;  // -1 when absent
};
// Fraction of solo throughput each of two co-located job types keeps (the table's co-location model).
double colocated_fraction(const JobTypeTable& t, int type_a, int type_b);
JobTypeTable job_types_from_json(const core::Json& j, const std::string& origin);
JobTypeTable default_job_types();
// Gavel's simulation_throughputs.json format: {"<gpu>": {"('<job type>', <sf>)": {"null": steps/s,
// "('<other>', <sf>)": [this, other]}}, "<gpu>_unconsolidated": {...}} (sched/gavel_table.cpp).
bool is_gavel_throughputs(const core::Json& j);
JobTypeTable gavel_throughputs_from_json(const core::Json& j, const std::string& origin);
// A job-type table file in either format (strata's throughputs-file format, or Gavel's).
JobTypeTable load_job_types(const std::string& path);

// Gavel's generator (thesis §5.6): inter-arrival ~ Exp(λ), job type uniform, duration 10^x minutes with
// x ~ U[1.5, 3] w.p. 0.8 and U[3, 4] w.p. 0.2, steps = reference throughput × duration, size and reference
// type per GenerateSpec::conventions. With a measured (Gavel) table a k-GPU job's throughputs are the measured
// ones of its (type, k) entry. std::mt19937_64 with our own distribution code, so traces are identical on every
// standard library. Throughput of a k-GPU job: k · T_1 · efficiency^log2(k).
Problem generate_trace(const JobTypeTable& table, const std::vector<WorkerType>& cluster, const GenerateSpec& spec);

// --- simulation -----------------------------------------------------------------------------------------------

enum class Reallocate { kOnChange, kEveryRound };

struct SimOptions {
  Policy policy;
  PolicyOptions policy_options;
  double round_s = 360;                    // round length (thesis default: 6 minutes)
  double restart_overhead_s = 5;           // checkpoint + restore when a job is not renewed (thesis: < 5 s)
  // false (Gavel's simulator): a k-GPU job runs at its consolidated steps/s wherever its GPUs are — Gavel's
  // scheduler.py (c4fa400) sets a job's throughput from oracle[<gpu>][(type, k)]["null"] and never reads the
  // "<gpu>_unconsolidated" entries when simulating. true (strata): a job spread over servers, or larger than a
  // server, runs at its unconsolidated steps/s, in the policy's LP and in the simulator. A placement-sensitive
  // policy (PolicyOptions::placement_sensitive) always sees placement affect speed.
  bool placement_affects_speed = true;
  Reallocate reallocate = Reallocate::kOnChange;
  // Gavel re-solves the allocation at most every minimum_time_between_allocation_resets = 1920 s (scheduler.py,
  // c4fa400); between solves, arriving jobs get a zero allocation (they run on leftover GPUs) and finished jobs'
  // shares go unused. 0 = re-solve at every arrival/completion (strata's earlier convention). A price change
  // (price trace) re-solves at once.
  double reset_interval_s = 1920;
  bool place_leftover = true;              // mechanism: run unplaced jobs on leftover GPUs (RoundOptions)
  int measure_from = 0, measure_to = -1;   // job index window for the metrics (arrival order); -1 = to the end
  double max_sim_s = 365.0 * 86400;        // safety stop (a job that never gets GPUs)
  // Steady-state runs (Gavel's methodology: a window deep in a continuous trace): stop once every job of the
  // measure window has finished instead of draining the trace (the metrics cover the window only; makespan and
  // utilisation then cover the simulated span).
  bool stop_after_window = false;
  // Warm starts: each re-solve's LP starts from the basis of the previous one, mapped by job name (issue 39:
  // consecutive re-solves differ by a few jobs). Same optimum; where an LP has several optimal vertices the
  // allocation may be another of them. false = every LP solved cold.
  bool warm_start = true;
  // Cloud (thesis ch. 6): time-varying prices and spot preemptions. Preemptions apply when the price is spot.
  std::optional<PriceTrace> price_trace;
  bool switch_on_price_change = true;      // re-solve the policy when prices change (false: keep the decision)
  // Called after each re-allocation with (simulated time s, finished jobs, total jobs); e.g. a progress line.
  std::function<void(double, int, int)> progress;
  // Called after each round with (round start s, its placements, each with the moment the model finished the job
  // inside the round): a back-end (e.g. Slurm) acts on it.
  std::function<void(double, const std::vector<RoundPlacement>&)> on_round;
};

struct JobResult {
  std::string name, job_type;
  int scale_factor = 1;
  double arrival_s = 0, start_s = -1, completion_s = -1;  // -1: never started / not finished
  double jct_s = -1;
  double steps = 0;
  double gpu_seconds = 0;                                 // GPU-time used
  double cost_usd = 0;
  double slowdown = 0;                                    // JCT / (steps / fastest throughput)
  int type_switches = 0;                                  // rounds placed on a different GPU type than its last
};

struct SimMetrics {
  int jobs_measured = 0, jobs_finished = 0;
  double avg_jct_s = 0, p50_jct_s = 0, p90_jct_s = 0, p99_jct_s = 0;
  double makespan_s = 0;        // last completion − first arrival (all jobs)
  double total_cost_usd = 0;    // busy GPU-time × on-demand (or spot) price; 0 without prices
  double utilization = 0;       // busy GPU-time / (GPUs × makespan)
  double avg_slowdown = 0, max_slowdown = 0;
  double jain_fairness = 0;     // Jain's index of the slowdowns (1 = perfectly even)
  int rounds = 0, reallocations = 0, lp_solves = 0;
  int slo_jobs = 0, slo_violations = 0;  // measured jobs with an SLO (deadline from arrival) / finished late
  int preemptions = 0, price_changes = 0, type_switches = 0;  // price-trace runs (all jobs)
};

struct SimResult {
  std::vector<JobResult> jobs;  // input order
  SimMetrics metrics;
};

// Sets the convention-dependent defaults (docs/scheduler.md "Conventions"): gavel = proportional normalisation
// and agnostic split, max-min fairness as Gavel's single LP, re-solve at most every 1920 s, leftover GPUs to
// unplaced jobs; strata = equal-share normalisation, fill-order agnostic split, water-filling, re-solve on every
// change, only X > 0 cells run.
void apply_conventions(Conventions c, PolicyOptions& p);
void apply_conventions(Conventions c, SimOptions& o);
// "gavel" / "strata"; InputError naming `flag` otherwise.
Conventions parse_conventions(const std::string& name, const std::string& flag = "--conventions");

// Runs `trace` (types = the cluster; jobs with arrival_s and steps) under `opt`.
SimResult simulate(const Problem& trace, const SimOptions& opt);

core::OrderedJson to_json(const SimResult& r);
// One CSV row per job: name,job_type,scale_factor,arrival_s,start_s,completion_s,jct_s,gpu_seconds,cost_usd,slowdown
std::string jobs_csv(const SimResult& r);

}  // namespace strata::sched
