// sched/planner_throughputs: the throughput matrix from plan::plan (one best-plan query per model, GPU type,
// count and consolidation, cached).
#include "strata/sched/planner_throughputs.hpp"

#include <fmt/format.h>

#include <map>
#include <string_view>
#include <tuple>
#include <utility>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::sched {
namespace {

// A cluster of `count` GPUs of one type: one node (consolidated, PCIe 3 between GPUs; NVLink 2 for V100s as in
// p3 instances) or `count` nodes of one GPU each over 25 GbE (unconsolidated).
hw::Cluster planner_cluster(const std::string& gpu, int count, bool consolidated, const hw::Catalog& catalog) {
  const bool nvlink = gpu.rfind("v100", 0) == 0;
  core::Json node = {{"name", consolidated ? "sched-server" : "sched-single"},
                     {"gpu", gpu},
                     {"gpus", consolidated ? count : 1},
                     {"intra_link", nvlink ? "nvlink2" : "pcie3"},
                     {"nics", 1},
                     {"nic_link", "eth-25g"},
                     {"count", consolidated ? 1 : count}};
  core::Json spec = {{"name", fmt::format("{}x{}", gpu, count)}, {"nodes", core::Json::array({node})}};
  return hw::cluster_from_json(spec, "--from-planner", catalog);
}

double best_throughput(const model::Model& m, const hw::Cluster& c, std::int64_t gbs) {
  plan::PlanOptions o;
  o.global_batch = gbs;
  o.space = plan::Space::three_d;
  o.top_k = 1;
  o.baselines = false;
  try {
    const plan::PlanResult r = plan::plan(m, c, o);
    if (r.top.empty() || !(r.top[0].estimate.iteration_time_s > 0)) return 0.0;
    return 1.0 / r.top[0].estimate.iteration_time_s;
  } catch (const core::InputError&) {
    return 0.0;  // nothing fits / gbs not divisible: the job cannot run on this type and count
  }
}

}  // namespace

std::string catalog_gpu_for(const std::string& type_name, const hw::Catalog& catalog) {
  // The scheduler's short names (Gavel's) for catalog GPUs that come in several memory sizes or form factors;
  // documented in docs/scheduler.md §GPU types. Every other type must be a catalog name (k80, p100, t4, ...).
  static constexpr std::pair<std::string_view, std::string_view> kAliases[] = {
      {"v100", "v100-16gb"}, {"a100", "a100-40gb"}, {"h100", "h100-sxm"}};
  const std::string name = core::to_lower(type_name);
  if (const auto* g = catalog.find_gpu(name)) return g->name;
  for (const auto& [alias, target] : kAliases)
    if (name == alias && catalog.find_gpu(target)) return std::string(target);
  throw core::InputError(fmt::format(
      "--from-planner: GPU type '{}' is not in the hardware catalog (valid: {}; aliases: v100, a100, h100)",
      core::printable(type_name), core::join(catalog.gpu_names())));
}

void fill_throughputs_from_planner(Problem& p, const hw::Catalog& catalog,
                                   const std::function<void(int, int)>& progress) {
  std::map<std::string, model::Model> models;
  std::map<std::tuple<std::string, std::int64_t, std::string, int, bool>, double> cache;
  int total = 0, done = 0;
  for (const auto& j : p.jobs)
    if (!j.model.empty()) total += 2 * p.num_types();
  for (auto& j : p.jobs) {
    if (j.model.empty()) continue;
    if (!models.count(j.model)) models.emplace(j.model, model::resolve_model(j.model));
    const model::Model& m = models.at(j.model);
    j.throughputs.assign(p.num_types(), 0.0);
    j.unconsolidated.assign(p.num_types(), 0.0);
    for (int t = 0; t < p.num_types(); ++t) {
      const std::string gpu = catalog_gpu_for(p.types[t].name, catalog);
      for (bool cons : {true, false}) {
        const auto key = std::make_tuple(j.model, j.global_batch, gpu, j.scale_factor, cons);
        auto it = cache.find(key);
        if (it == cache.end()) {
          const double tp = (j.scale_factor == 1 && !cons)
                                ? -1.0  // one GPU is always "consolidated"
                                : best_throughput(m, planner_cluster(gpu, j.scale_factor, cons, catalog),
                                                  j.global_batch);
          it = cache.emplace(key, tp).first;
        }
        (cons ? j.throughputs : j.unconsolidated)[t] = it->second;
        if (progress) progress(++done, total);
      }
      if (j.unconsolidated[t] < 0) j.unconsolidated[t] = j.throughputs[t];
    }
  }
}

}  // namespace strata::sched
