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
  j["memory_margin"] = memory_margin(cand.estimate);  // share of usable memory left free (plan/rank.cpp)
  j["estimate"] = cost::to_json(cand.estimate);
  return j;
}

// The plan file's members in order, handed to `sink` one at a time (member(key, value); the candidates through
// array_begin / element / array_end), so the writer need not hold the whole tree (plan_file_text).
template <class Sink>
void plan_members(const PlanResult& r, const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                  Sink& sink) {
  sink.member("model", m.name);
  sink.member("cluster", c.name);
  sink.member("devices", c.num_devices());
  sink.member("gbs", opt.global_batch);
  sink.member("seq", m.seq);
  sink.member("space", std::string(to_string(opt.space)));
  sink.member("placement_mode", std::string(to_string(opt.placement)));
  sink.member("objective", std::string(to_string(opt.objective)));  // how `candidates` is ordered (plan/rank)
  if (opt.engine) sink.member("engine", opt.engine->name);  // plan --engine: the profile it was searched for
  if (!r.top.empty()) sink.member("best", candidate_json(r.top.front(), c));
  sink.array_begin("candidates");
  for (const auto& cand : r.top) sink.element(candidate_json(cand, c));
  sink.array_end();
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
  sink.member("baselines", std::move(baselines));
  sink.member("baseline_strategies", std::move(strategies));
  sink.member("speedups", std::move(speedups));
  sink.member("baseline_notes", std::move(notes));
  core::OrderedJson rej = core::OrderedJson::array();
  for (const auto& x : r.rejected) {
    core::OrderedJson e;
    e["reason"] = x.reason;
    e["count"] = x.count;
    e["example"] = x.example;
    rej.push_back(std::move(e));
  }
  sink.member("rejected", std::move(rej));
  sink.member("explanation", r.explanation);
  sink.member("space_size", r.space_size);
  sink.member("evaluated", r.evaluated);
  sink.member("pruned_by_bound", r.pruned_by_bound);
  sink.member("splits_solved", r.splits_solved);
  sink.member("search_time_s", r.search_time_s);
}

// Builds the tree (plan_to_json).
struct TreeSink {
  core::OrderedJson& j;
  std::string array_key;
  void member(std::string_view key, core::OrderedJson value) { j[std::string(key)] = std::move(value); }
  void array_begin(std::string_view key) {
    array_key = key;
    j[array_key] = core::OrderedJson::array();
  }
  void element(core::OrderedJson value) { j[array_key].push_back(std::move(value)); }
  void array_end() {}
};

// Appends the text member by member (plan_file_text).
struct TextSink {
  core::JsonObjectWriter& w;
  void member(std::string_view key, const core::OrderedJson& value) { w.member(key, value); }
  void array_begin(std::string_view key) { w.array_begin(key); }
  void element(const core::OrderedJson& value) { w.element(value); }
  void array_end() { w.array_end(); }
};

}  // namespace

nlohmann::ordered_json plan_to_json(const PlanResult& r, const model::Model& m, const hw::Cluster& c,
                                    const PlanOptions& opt) {
  core::OrderedJson j;
  TreeSink sink{j, {}};
  plan_members(r, m, c, opt, sink);
  return j;
}

std::string plan_file_text(const PlanResult& r, const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                           const nlohmann::ordered_json& extra) {
  std::string out;
  core::JsonObjectWriter w(out);
  TextSink sink{w};
  plan_members(r, m, c, opt, sink);
  for (auto it = extra.begin(); extra.is_object() && it != extra.end(); ++it) w.member(it.key(), it.value());
  w.close();
  out += '\n';
  return out;
}

}  // namespace strata::plan
