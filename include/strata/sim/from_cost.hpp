// sim/from_cost: fills the simulator's abstract inputs for a (model, cluster, complete strategy) from the cost
// model's building blocks — per-chunk compute and TP times (cost::sum_stage_layers over layer_stage_cost, on each
// worker's own GPUs), memory (cost::stage_memory), DP buckets (cost::dp_bucket_partition), optimizer step, and
// every transfer's duration alone from cost/comm — and builds the link resources (per-GPU intra-node ports, NICs;
// one direction each) the flows share. No formula is repeated here: the simulator only decides *when* things
// run and *who shares a link*.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/pipeline.hpp"

namespace strata::sim {

struct CostSimOptions {
  int iterations = 0;               // 0 = default: 1 for flush schedules, 4 for pipedream / 2bw (steady state)
  double overlap_slowdown = 0;      // 0 = the cost model's fitted constant (Galvatron ≈ 1.3); ≥ 1 otherwise
  cost::CostOptions cost;           // profile / constants / memory headroom handed to the cost model; the DP
                                    // buckets are the constants' (cost::dp_bucket_partition, per chunk here)
  bool full = false;                // simulate every dp replica (`strata simulate --full`); default: one
                                    // representative per class of identical replicas (docs/simulator.md §Scale)
};

// Default iteration count for a schedule (see CostSimOptions::iterations).
int default_iterations(cost::Schedule s);

// Abstract inputs of one simulated run. `s` must be complete (cost::complete_strategy). Unless opt.full, the
// workers are one representative per class of identical dp replicas (in.dp = classes, in.replica_count their
// sizes; docs/simulator.md §Scale); with opt.full (or nothing to aggregate) every replica.
PipelineInput pipeline_from_cost(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                 const CostSimOptions& opt = {});

// A worker's simulated peak against its devices' memory (the smallest of its tp group).
struct WorkerMemory {
  double capacity_bytes = 0;
  double usable_bytes = 0;          // capacity − headroom (cost::usable_memory_bytes, as the estimate's "fits")
  bool fits = true;                 // result.workers[w].peak_memory_bytes ≤ usable_bytes
};

struct Simulation {
  PipelineInput input;
  SimResult result;
  cost::Estimate estimate;          // the analytical model on the same strategy, for comparison
  std::vector<WorkerMemory> memory; // [worker]
  bool fits = true;                 // every worker fits
  std::string not_fit_reason;       // the first worker that does not (empty when all fit)
  // Aggregated mode (docs/simulator.md §Scale): `input` and `result.workers` are expanded to every (stage, dp
  // rank), each with its class representative's input and statistics; `input.sync` and the timeline are the
  // representatives'. events/tasks count the tasks played out.
  int simulated_replicas = 1;       // dp replicas played out (= dp in full mode)
  std::string full_reason;          // why every replica was played out although --full was not asked ("" = not)
};

Simulation simulate(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                    const CostSimOptions& opt = {}, const SimOptions& sim_opt = {});

// Micro-batch passes (forward + backward) a simulation of `s` plays out; InputError "simulate: N micro-batch passes
// to play out (more than 1e8, ...)" past 1e8, where a run takes hours. sim/run_size.cpp.
double check_simulation_size(const cost::Strategy& s, const CostSimOptions& opt);
// The checks on a simulation's options that `strata simulate` and the Python API share (messages name the CLI
// flags): iterations >= 1, overlap slowdown finite and >= 1, DP bucket size in (0, 1e6] MiB (`bucket_text` = the
// value as the user wrote it, for the message). sim/run_size.cpp.
void check_simulation_options(std::optional<int> iterations, std::optional<double> overlap_slowdown,
                              std::optional<double> bucket_mib, const std::string& bucket_text = "");

// What `strata simulate --json` prints (and the Python API's Simulation.to_dict()); sim/sim_json.cpp.
nlohmann::ordered_json simulation_report_json(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                              const Simulation& r);

}  // namespace strata::sim
