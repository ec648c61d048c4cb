// cli/plan_oases: `strata plan --oases-blocks` — Oases' per-block tensor-parallel degree plan (plan/oases_tp) and
// its Table 3 ablation against Megatron TP, printed as tables (docs/planner.md).
#pragma once
#include <cstdint>
#include <cstdio>

#include "plan_layerwise.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

void run_oases_blocks(const model::Model& m, const hw::Cluster& c, std::int64_t gbs, hw::Dtype dtype,
                      const cost::CostOptions& cost, std::FILE* out);

}  // namespace strata::cli
