// plan/plan_json: the plan file (docs/planner.md §Plan file). `best.strategy` is what `strata estimate
// --strategy-file`, the simulator, the exporter and the executor read back (cost::load_strategy_file).
// Deterministic bytes for the same input (insertion-ordered keys) except search_time_s.
#include "strata/core/json.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

core::OrderedJson candidate_json(const Candidate& cand, const hw::Cluster& c) {
  core::OrderedJson j;
  j["strategy"] = cost::to_json(cand.strategy);
  j["cli"] = cost::to_cli_string(cand.strategy);
  j["placement"] = placement_summary(c, cand.strategy);
  j["placement_label"] = cand.placement_label;
  j["split_objective_s"] = cand.split_objective_s;
  j["estimate"] = cost::to_json(cand.estimate);
  return j;
}

}  // namespace

nlohmann::ordered_json plan_to_json(const PlanResult& r, const model::Model& m, const hw::Cluster& c,
                                    const PlanOptions& opt) {
  core::OrderedJson j;
  j["model"] = m.name;
  j["cluster"] = c.name;
  j["devices"] = c.num_devices();
  j["gbs"] = opt.global_batch;
  j["seq"] = m.seq;
  j["space"] = std::string(to_string(opt.space));
  j["placement_mode"] = std::string(to_string(opt.placement));
  if (!r.top.empty()) j["best"] = candidate_json(r.top.front(), c);
  j["candidates"] = core::OrderedJson::array();
  for (const auto& cand : r.top) j["candidates"].push_back(candidate_json(cand, c));
  core::OrderedJson baselines = core::OrderedJson::object(), strategies = core::OrderedJson::object(),
                    speedups = core::OrderedJson::object(), notes = core::OrderedJson::object();
  for (const auto& b : r.baselines) {
    notes[b.name] = b.note;
    if (!b.found && b.estimate.stages.empty()) {
      baselines[b.name] = nullptr;
      continue;
    }
    baselines[b.name] = cost::to_json(b.estimate);
    strategies[b.name] = cost::to_json(b.strategy);
    if (b.found && !r.top.empty())
      speedups[b.name] = b.estimate.iteration_time_s / r.top.front().estimate.iteration_time_s;
  }
  j["baselines"] = baselines;
  j["baseline_strategies"] = strategies;
  j["speedups"] = speedups;
  j["baseline_notes"] = notes;
  core::OrderedJson rej = core::OrderedJson::array();
  for (const auto& x : r.rejected) {
    core::OrderedJson e;
    e["reason"] = x.reason;
    e["count"] = x.count;
    e["example"] = x.example;
    rej.push_back(e);
  }
  j["rejected"] = rej;
  j["explanation"] = r.explanation;
  j["space_size"] = r.space_size;
  j["evaluated"] = r.evaluated;
  j["pruned_by_bound"] = r.pruned_by_bound;
  j["splits_solved"] = r.splits_solved;
  j["search_time_s"] = r.search_time_s;
  return j;
}

}  // namespace strata::plan
