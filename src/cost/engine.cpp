// cost/engine: reading the engine profiles (data/engines/*.json, embedded) into cost::EngineProfile, the registry
// of built-in profiles, and the profile's JSON summary. The checks and traits are in engine_check.cpp.
#include "strata/cost/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::cost {
namespace {
using core::JsonWhere;

std::vector<std::string> strings(const core::Json& obj, std::string_view key, const JsonWhere& w) {
  std::vector<std::string> out;
  const auto& arr = core::require_field(obj, key, w);
  core::expect_array(arr, w.field(key));
  for (std::size_t i = 0; i < arr.size(); ++i) {
    if (!arr[i].is_string()) core::fail(w.field(key).index(i), "must be a string");
    out.push_back(arr[i].get<std::string>());
  }
  return out;
}

std::vector<bool> bools_of(const core::Json& obj, std::string_view key, const JsonWhere& w,
                           std::string_view yes, std::string_view no) {
  std::vector<bool> out;
  const auto& arr = core::require_field(obj, key, w);
  core::expect_array(arr, w.field(key));
  for (std::size_t i = 0; i < arr.size(); ++i) {
    if (arr[i].is_boolean()) out.push_back(arr[i].get<bool>());
    else if (arr[i].is_string() && arr[i].get<std::string>() == yes) out.push_back(true);
    else if (arr[i].is_string() && arr[i].get<std::string>() == no) out.push_back(false);
    else core::fail(w.field(key).index(i), fmt::format("must be {} or {}", yes, no));
  }
  return out;
}

// A named two-valued trait ("fused"/"eager", "fused"/"separate"): true = the second name.
bool trait(const core::Json& obj, std::string_view key, const JsonWhere& w, std::string_view off, std::string_view on) {
  const std::string v = core::get_string(obj, key, w);
  if (v != off && v != on) core::fail(w.field(key), fmt::format("'{}' is not {} or {}", v, off, on));
  return v == on;
}

std::string one_of(const core::Json& obj, std::string_view key, const JsonWhere& w,
                   std::initializer_list<std::string_view> valid) {
  const std::string v = core::get_string(obj, key, w);
  for (auto x : valid)
    if (v == x) return v;
  std::vector<std::string> names(valid.begin(), valid.end());
  core::fail(w.field(key), fmt::format("'{}' is not one of {}", v, core::join(names)));
}

void read_can(const core::Json& j, const JsonWhere& w, EngineProfile& p) {
  p.devices = one_of(j, "devices", w, {"gpu", "cpu"});
  p.max_devices = static_cast<int>(core::get_int(j, "max_devices", w));
  p.max_tp = static_cast<int>(core::get_int(j, "max_tp", w));
  p.max_pp = static_cast<int>(core::get_int(j, "max_pp", w));
  p.max_cp = static_cast<int>(core::get_int(j, "max_cp", w));
  p.cp_seq_multiple = static_cast<int>(core::get_int(j, "cp_seq_multiple", w));
  const auto& zero = core::require_field(j, "zero", w);
  core::expect_array(zero, w.field("zero"));
  for (std::size_t i = 0; i < zero.size(); ++i) {
    if (!zero[i].is_number_integer() || zero[i].get<int>() < 0 || zero[i].get<int>() > 3)
      core::fail(w.field("zero").index(i), "must be a ZeRO stage 0..3");
    p.zero_stages.push_back(zero[i].get<int>());
  }
  p.sequence_parallel = one_of(j, "sequence_parallel", w, {"optional", "with_tp", "never"});
  for (const auto& s : strings(j, "schedules", w)) p.schedules.push_back(parse_schedule(s, w.field("schedules").str()));
  for (const auto& r : strings(j, "recompute", w))
    p.recompute.push_back(model::parse_recompute(r, w.field("recompute").str()));
  p.rlayers = one_of(j, "rlayers", w, {"none", "uniform_full"});
  p.async_tp = core::get_bool(j, "async_tp", w);
  p.oases_overlap = core::get_bool(j, "oases_overlap", w);
  p.uneven_split = core::get_bool(j, "uneven_split", w);
  p.per_stage = core::get_bool(j, "per_stage", w);
  for (const auto& d : strings(j, "dtypes", w)) p.dtypes.push_back(hw::parse_dtype(d, w.field("dtypes").str()));
  p.model_features = strings(j, "model_features", w);
  const auto& fl = core::require_field(j, "flavors", w);
  core::expect_array(fl, w.field("flavors"));
  for (std::size_t i = 0; i < fl.size(); ++i) {
    const auto fw = w.field("flavors").index(i);
    const auto& f = fl[i];
    p.flavors.push_back(fmt::format("{}:{}:{}:{}:{}:{}:{}", core::get_string(f, "name", fw),
                                    core::get_positive_int(f, "layers", fw), core::get_positive_int(f, "hidden", fw),
                                    core::get_positive_int(f, "heads", fw), core::get_positive_int(f, "kv_heads", fw),
                                    core::get_positive_int(f, "ffn", fw), core::get_positive_int(f, "vocab", fw)));
  }
}

void read_stack(const core::Json& j, const JsonWhere& w, EngineProfile& p) {
  const auto& att = core::require_field(j, "attention", w);
  core::expect_array(att, w.field("attention"));
  for (std::size_t i = 0; i < att.size(); ++i) {
    const auto aw = w.field("attention").index(i);
    EngineAttention a;
    a.gpus = one_of(att[i], "gpus", aw, {"bf16", "other", "any"});
    for (const auto& d : strings(att[i], "dtypes", aw)) a.dtypes.push_back(hw::parse_dtype(d, aw.field("dtypes").str()));
    a.kernel = model::parse_attention_kernel(core::get_string(att[i], "kernel", aw), aw.field("kernel").str());
    p.attention.push_back(std::move(a));
  }
  p.eager_elementwise = trait(j, "elementwise", w, "fused", "eager");
  p.eager_elementwise_allowed = bools_of(j, "elementwise_allowed", w, "eager", "fused");
  p.recompute_early_stop = core::get_bool(j, "recompute_early_stop", w);
  p.early_stop_allowed = bools_of(j, "early_stop_allowed", w, "on", "off");
  p.fp8_separate_casts = trait(j, "fp8_cast", w, "fused", "separate");
  p.fp8_separate_allowed = bools_of(j, "fp8_cast_allowed", w, "separate", "fused");
  p.loss = one_of(j, "loss", w, {"fused", "fp32"});
  p.optimizer = one_of(j, "optimizer", w, {"fused", "foreach", "forloop"});
  if (core::has_field(j, "grads")) p.grads = one_of(j, "grads", w, {"persistent", "ondemand", "ddp"});
  p.allocator_headroom_fraction = core::get_nonnegative_number(j, "allocator_headroom_fraction", w);
  if (!(p.allocator_headroom_fraction < 1)) core::fail(w.field("allocator_headroom_fraction"), "must be < 1");
}

void read_rules(const core::Json& j, const JsonWhere& w, EngineProfile& p) {
  const auto& rules = core::require_field(j, "rules", w);
  core::expect_array(rules, w.field("rules"));
  for (std::size_t i = 0; i < rules.size(); ++i) {
    const auto rw = w.field("rules").index(i);
    EngineRule r;
    r.id = core::get_string(rules[i], "id", rw);
    r.kind = one_of(rules[i], "kind", rw, {"never", "require", "forbid", "field"});
    r.when = strings(rules[i], "when", rw);
    r.pattern = core::get_string(rules[i], "pattern", rw);
    if (r.kind == "require" || r.kind == "forbid") {
      r.file = one_of(rules[i], "file", rw, {"config", "launch"});
      if (r.pattern.empty()) core::fail(rw.field("pattern"), "a require/forbid rule needs a pattern");
    }
    r.fact = core::get_string(rules[i], "fact", rw);
    r.source = core::get_string(rules[i], "source", rw);
    Strategy probe;  // the atoms are checked once here, so a typo in the data fails when the file is read
    rule_applies(r.when, hw::Cluster{}, probe, rw.field("when").str());
    p.rules.push_back(std::move(r));
  }
  p.pending = strings(j, "pending", w);
  for (const auto& id : p.pending)
    if (std::none_of(p.rules.begin(), p.rules.end(), [&](const EngineRule& r) { return r.id == id; }))
      core::fail(w.field("pending"), fmt::format("'{}' names no rule", id));
}

}  // namespace

EngineProfile engine_profile_from_json(const nlohmann::json& j, const std::string& origin) {
  const JsonWhere w{origin, ""};
  core::expect_object(j, w);
  EngineProfile p;
  p.name = core::get_string(j, "name", w);
  p.engine = core::get_string(j, "engine", w);
  p.repo = core::get_string(j, "repo", w);
  p.commit = core::get_string(j, "commit", w);
  p.export_target = core::get_string(j, "export_target", w);
  read_can(core::require_field(j, "can", w), w.field("can"), p);
  const auto& writer = core::require_field(j, "writer", w);
  p.writer_cp = core::get_bool(writer, "cp", w.field("writer"));
  read_stack(core::require_field(j, "stack", w), w.field("stack"), p);
  p.launch = strings(j, "launch", w);
  read_rules(j, w, p);
  core::expect_object(core::require_field(j, "sources", w), w.field("sources"));
  return p;
}

const std::vector<std::string>& engine_names() {
  static const std::vector<std::string> names{"megatron", "torchtitan-toml", "torchtitan", "deepspeed", "pytorch",
                                              "strata-exec"};
  return names;
}

const EngineProfile& engine_profile(std::string_view name, const std::string& where) {
  static std::once_flag once;
  static std::map<std::string, EngineProfile, std::less<>> table;
  std::call_once(once, [] {
    for (const auto& n : engine_names()) {
      const std::string file = "engines/" + n + ".json";
      EngineProfile p = engine_profile_from_json(core::embedded_json(file), "data/" + file);
      if (p.name != n) throw core::InputError(fmt::format("data/{}: name: '{}' is not the file's name", file, p.name));
      table.emplace(n, std::move(p));
    }
  });
  if (const auto it = table.find(name); it != table.end()) return it->second;
  throw core::InputError(
      fmt::format("{}: unknown engine '{}' (valid: {})", where, name, core::join(engine_names())));
}

nlohmann::ordered_json to_json(const EngineProfile& p) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  j["engine"] = p.engine;
  if (!p.repo.empty()) j["repo"] = p.repo;
  if (!p.commit.empty()) j["commit"] = p.commit;
  j["elementwise"] = p.eager_elementwise ? "eager" : "fused";
  j["recompute_early_stop"] = p.recompute_early_stop;
  j["fp8_cast"] = p.fp8_separate_casts ? "separate" : "fused";
  j["loss"] = p.loss;
  j["optimizer"] = p.optimizer;
  j["grads"] = p.grads;
  j["allocator_headroom_fraction"] = p.allocator_headroom_fraction;
  return j;
}

}  // namespace strata::cost
