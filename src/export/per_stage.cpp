// export/per_stage: what the engines can do with a per-stage or per-layer strategy (docs/export.md §Per-stage
// plans). Megatron-LM, torchtitan and DeepSpeed give every pipeline stage the same tensor- and data-parallel
// degrees over every launched rank (one --tensor-model-parallel-size / parallelism.tensor_parallel_degree for the
// job) and one layout for all layers, so a per-stage strategy is expressible exactly when complete_strategy folds
// it into the uniform form (alike stages over every device: a uniform plan with its uneven split); anything else is
// refused by name instead of writing the zeros of the unused uniform fields.
#include <fmt/format.h>

#include "internal.hpp"
#include "strata/cost/layerwise.hpp"

namespace strata::exporter::detail {

std::string per_stage_problem(const hw::Cluster& c, const cost::Strategy& s) {
  if (cost::is_uniform(s)) return "";
  for (const auto& st : s.stages)
    if (!st.layer_choices.empty())
      return "per-layer choices (layers=: a tensor-parallel degree or ZeRO-3 per layer; the engines set one for "
             "every layer)";
  for (const auto& st : s.stages)
    if (st.dp != s.stages.front().dp || st.tp != s.stages.front().tp)
      return fmt::format("per-stage (dp, tp) that differ between stages (stage 0 dp{} tp{}, another dp{} tp{}; the "
                         "engines give every stage the same degrees)",
                         s.stages.front().dp, s.stages.front().tp, st.dp, st.tp);
  return fmt::format("a per-stage plan that leaves devices idle (it uses {} of the cluster's {}; the engines launch "
                     "every rank of the job: plan for the devices you will launch)",
                     cost::devices_used(s), c.num_devices());
}

bool per_stage_closest(const model::Model& m, const hw::Cluster& c, cost::Strategy& s) {
  if (cost::is_uniform(s) || !cost::is_layerwise(s, c)) return false;
  // Alike stages over every device with per-layer choices: the nearest plan the engines run is every layer at its
  // stage's layout, which complete_strategy folds into the uniform form.
  for (auto& st : s.stages) st.layer_choices.clear();
  s = cost::complete_strategy(s, m, c);
  return cost::is_uniform(s);
}

}  // namespace strata::exporter::detail
