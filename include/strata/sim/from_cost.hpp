// sim/from_cost: fills the simulator's abstract inputs for a (model, cluster, complete strategy) from the cost
// model's building blocks — per-layer compute and TP times (cost::layer_stage_cost, on each worker's own GPUs),
// memory (cost::stage_memory), optimizer step, and every transfer's duration alone from cost/comm — and builds
// the link resources (per-GPU intra-node ports, NICs; one direction each) the flows share. No formula is
// repeated here: the simulator only decides *when* things run and *who shares a link*.
#pragma once
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
  double bucket_bytes = 50e6;       // DP gradient bucket size (bytes of the reduced message), ≤ 16 per chunk
  double overlap_slowdown = 0;      // 0 = the cost model's fitted constant (Galvatron ≈ 1.3); ≥ 1 otherwise
  cost::CostOptions cost;           // profile / constants handed to the cost model
};

// Default iteration count for a schedule (see CostSimOptions::iterations).
int default_iterations(cost::Schedule s);

// Abstract inputs of one simulated run. `s` must be complete (cost::complete_strategy).
PipelineInput pipeline_from_cost(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                 const CostSimOptions& opt = {});

struct Simulation {
  PipelineInput input;
  SimResult result;
  cost::Estimate estimate;          // the analytical model on the same strategy, for comparison
};

Simulation simulate(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                    const CostSimOptions& opt = {}, const SimOptions& sim_opt = {});

}  // namespace strata::sim
