// tests/export/engine_facts: reads ../shared/engines (option and key lists of Megatron-LM, torchtitan and
// DeepSpeed at named commits) and checks that an emitted flag or key exists there with a valid value.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace strata_test {

inline std::string engines_dir() { return std::string(STRATA_SOURCE_DIR) + "/../shared/engines"; }
inline bool have_engine_facts() { return std::filesystem::exists(engines_dir() + "/megatron_args.json"); }
#define SKIP_WITHOUT_ENGINE_FACTS()                                                                         \
  if (!strata_test::have_engine_facts())                                                                    \
  GTEST_SKIP() << "engine facts folder " << strata_test::engines_dir()                                      \
               << " is missing (../shared/engines next to the source tree); cannot check names"

inline nlohmann::json load_facts(const std::string& file) {
  std::ifstream in(engines_dir() + "/" + file);
  return nlohmann::json::parse(in);
}

// Megatron: option string -> entry.
inline const std::map<std::string, nlohmann::json>& megatron_options() {
  static const auto table = [] {
    std::map<std::string, nlohmann::json> t;
    const auto facts = load_facts("megatron_args.json");
    for (const auto& e : facts.at("entries"))
      for (const auto& o : e.at("option_strings")) t[o.get<std::string>()] = e;
    return t;
  }();
  return table;
}

// "" when `value` is valid for the entry's type/choices, else the problem.
inline std::string check_value(const nlohmann::json& e, const std::string& value) {
  if (e.contains("choices") && e.at("choices").is_array() && !e.at("choices").empty()) {
    for (const auto& c : e.at("choices"))
      if ((c.is_string() && c.get<std::string>() == value) || (c.is_number_integer() && std::to_string(c.get<long long>()) == value))
        return "";
    return "value '" + value + "' not among the choices";
  }
  const std::string type = e.value("type", nlohmann::json()).is_string() ? e.at("type").get<std::string>() : "";
  try {
    std::size_t used = 0;
    if (type == "int") {
      (void)std::stoll(value, &used);
      if (used != value.size()) return "not an int: " + value;
    } else if (type == "float") {
      (void)std::stod(value, &used);
      if (used != value.size()) return "not a float: " + value;
    }
  } catch (...) {
    return "not a number: " + value;
  }
  return "";
}

// torchtitan TOML-era snapshot: "section.field" -> entry.
inline const std::map<std::string, nlohmann::json>& torchtitan_fields() {
  static const auto table = [] {
    std::map<std::string, nlohmann::json> t;
    const auto facts = load_facts("torchtitan_config.json");
    for (const auto& e : facts.at("snapshots").at("toml_last").at("entries"))
      t[e.at("section").get<std::string>() + "." + e.at("field").get<std::string>()] = e;
    return t;
  }();
  return table;
}

// DeepSpeed: allowed keys per section ("" = top level).
inline const std::map<std::string, std::map<std::string, nlohmann::json>>& deepspeed_keys() {
  static const auto table = [] {
    std::map<std::string, std::map<std::string, nlohmann::json>> t;
    const auto d = load_facts("deepspeed_config.json");
    for (const auto& k : d.at("batch_keys")) t[""][k.at("key").get<std::string>()] = k;
    for (const auto& r : d.at("top_level_readers"))
      for (const auto& k : r.at("keys")) t[""][k.at("key").get<std::string>()] = k;
    for (const auto& [name, sec] : d.at("sections").items()) {
      t[""][name.substr(0, name.find('.'))] = nlohmann::json::object();
      for (const auto& f : sec.at("fields")) t[name][f.at("key").get<std::string>()] = f;
    }
    t[""]["activation_checkpointing"] = nlohmann::json::object();
    for (const auto& f : d.at("activation_checkpointing").at("fields")) t["activation_checkpointing"][f.at("key").get<std::string>()] = f;
    t[""]["pipeline"] = nlohmann::json::object();
    for (const auto& [k, v] : d.at("pipeline").at("defaults").items()) t["pipeline"][k] = {{"default", v}};
    return t;
  }();
  return table;
}

}  // namespace strata_test
