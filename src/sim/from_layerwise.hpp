// sim/from_layerwise (internal): the pipeline input of a per-layer strategy (cost::is_layerwise) — what
// pipeline_from_cost hands over to for such strategies.
#pragma once
#include "strata/sim/from_cost.hpp"

namespace strata::sim::detail {

// One worker per stage (its whole device group: the layers' data parallelism changes inside the stage, so the
// stage's round — dp_i·mbs samples — is the unit a worker runs), durations and bytes from cost::layerwise_stages:
// compute, recompute, TP + ZeRO-3 + Slice-Gather communication on the compute stream, p2p between stages (cost's
// time, no link sharing), the stage's exposed DP sync before its optimizer step (cost's dp_sync_exposed_time).
PipelineInput pipeline_from_layerwise(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                      const CostSimOptions& opt);

}  // namespace strata::sim::detail
