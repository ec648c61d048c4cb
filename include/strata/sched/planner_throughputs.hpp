// sched/planner_throughputs: `--from-planner` — the throughput matrix from strata's own planner instead of
// profiling (what Gavel's throughput estimator does by measurement). For each job with a "model" and
// "global_batch", and each GPU type and the job's GPU count, one best-plan query (plan::plan, 3D space: dp/tp/pp
// and micro-batch) gives the iteration time; throughput = 1 / iteration time (steps/s, one step = one global
// batch). Consolidated = one server of `count` GPUs (intra-node link); unconsolidated = `count` single-GPU
// servers over Ethernet. Queries are cached by (model, global batch, GPU, count, consolidated).
#pragma once
#include <functional>
#include <string>

#include "strata/hw/hardware.hpp"
#include "strata/sched/problem.hpp"

namespace strata::sched {

// Catalog GPU of a scheduler type name: the same name ("k80"), else a documented alias ("v100" → "v100-16gb",
// "a100" → "a100-40gb", "h100" → "h100-sxm"). InputError listing the catalog when none matches.
std::string catalog_gpu_for(const std::string& type_name, const hw::Catalog& catalog);

// Fills throughputs (and unconsolidated throughputs) of every job that names a model. Nothing fits on a type
// → throughput 0 there (the job cannot run on it). `progress(done, total)` after each query (may be empty).
void fill_throughputs_from_planner(Problem& p, const hw::Catalog& catalog,
                                   const std::function<void(int, int)>& progress);

}  // namespace strata::sched
