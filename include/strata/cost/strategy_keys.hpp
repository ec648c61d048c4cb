// cost/strategy_keys: the one table of strategy keys (name, values, default, rule, help, JSON name, Python
// keyword, searched, enters the cost cache) from which the `--strategy` parser, the text and JSON printers, the
// JSON reader, the valid-key lists of errors, the help, the planner's copy and cache key and the Python keywords
// are produced. Adding a key = one row in src/cost/strategy_keys.cpp (its comment says how) + its Strategy field +
// its cost + its tests; docs/ARCHITECTURE.md "Strategy keys".
#pragma once
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/core/json.hpp"
#include "strata/cost/strategy.hpp"

namespace strata::cost {

// What parse_strategy carries between keys: facts a later key or the end of parsing needs.
// The keys a --strategy text names ("dp=8,elementwise=fused" → {"dp", "elementwise"}; Python keyword spellings
// map to their key): what the user wrote, which engine traits never override (cost::apply_engine_traits).
std::set<std::string> strategy_text_keys(std::string_view text);

struct KeyParseState {
  bool schedule_given = false;  // v > 1 without schedule= means interleaved
  std::optional<std::vector<std::vector<LayerChoice>>> layer_groups;  // layers=, attached to stages= at the end
};

// One strategy key. The accessors are plain functions (no captures): the table is constant data.
struct StrategyKey {
  std::string_view name;          // --strategy key, e.g. "elementwise"
  std::string_view values;        // accepted values as the help shows them, e.g. "fused|eager"
  std::string_view default_text;  // the default as the help shows it, e.g. "fused"
  std::string_view rule;          // what complete_strategy checks beyond the value ("" = nothing more)
  std::string_view help;          // what it means, one sentence (the help and docs/strategy.md)
  std::string_view json_name;     // field of the JSON form ("" = none of its own: written inside another)
  std::string_view python_name;   // keyword of strata.estimate (and strata.plan when not searched)
  int json_rank = 0;              // position among the JSON fields (the JSON form's order predates the table)
  bool uniform_only = false;      // printed in the uniform form only (the per-stage form's stages hold it)
  bool searched = false;          // the planner enumerates it; else every candidate gets the user's value (copy)
  bool plan_option = false;       // the planner takes the user's value (strata plan --<name>, strata.plan(name=))
  bool enters_cost = false;       // read by layer_stage_cost / stage_memory: part of the planner's cache key
  // `value` of key=value into the strategy; InputError naming `where` and `key` on a bad value.
  void (*parse)(Strategy& s, std::string_view key, std::string_view value, const std::string& where,
                KeyParseState& st) = nullptr;
  // The value to_cli_string prints, nullopt = left out (the default, or the other form's key).
  std::optional<std::string> (*text)(const Strategy& s) = nullptr;
  // Writes json_name into `j` (or nothing when it is left out); null when json_name is "".
  void (*write_json)(const Strategy& s, nlohmann::ordered_json& j) = nullptr;
  // Reads json_name of `j` (absent = the JSON form's default) into the strategy; null when json_name is "".
  void (*read_json)(const core::Json& j, const core::JsonWhere& w, Strategy& s) = nullptr;
  // The numbers the planner's layer-cost cache key holds for it (enters_cost keys; null otherwise).
  void (*cost_values)(const Strategy& s, std::vector<double>& key) = nullptr;
  // Copies the key's field(s) from `from` to `to` (the planner's copy of unsearched keys).
  void (*copy)(const Strategy& from, Strategy& to) = nullptr;
};

// Every key, in the order the text form prints them.
std::span<const StrategyKey> strategy_keys();
// The row of a --strategy key, or nullptr.
const StrategyKey* find_strategy_key(std::string_view name);
// "dp, tp, pp, ..." — the valid-key list of error messages.
std::string strategy_key_list();
// The `--strategy` part of the help: one "  key=VALUES  help (default D; rule)" line per key.
std::string strategy_keys_help();
// Appends the numbers of every enters_cost key (the planner's layer-cost cache key, plan/eval.cpp).
void append_cost_key(const Strategy& s, std::vector<double>& key);
// Copies every key the planner does not search from `from` into `to` (plan/eval.cpp make_strategy_light).
void copy_unsearched_keys(const Strategy& from, Strategy& to);
// Applies `python_name` (or name) = value given as text, e.g. {"fp8_cast", "separate"}: InputError naming the key.
void set_strategy_key(Strategy& s, std::string_view key, std::string_view value, const std::string& where);

}  // namespace strata::cost
