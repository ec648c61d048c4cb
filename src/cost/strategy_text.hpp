// cost/strategy_text: private helpers shared by the strategy parsers and checks (strategy.cpp,
// strategy_stages.cpp, strategy_stage_rules.cpp): integer and list parsing with errors naming the key, JSON list
// readers, and the one format of a violated rule.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/cost/strategy_keys.hpp"

namespace strata::cost::detail {

// InputError "strategy: rule '<rule>' violated: <detail>" (the form every rule uses; docs/strategy.md).
[[noreturn]] void rule_error(const std::string& rule, const std::string& detail);
// The same with the field first: "strategy: stages[1].tp: rule '<rule>' violated: <detail>".
[[noreturn]] void field_rule_error(const std::string& field, const std::string& rule, const std::string& detail);

std::int64_t parse_int(std::string_view text, const std::string& where, const std::string& key);
// An integer in [min_value, 1'000'000].
int parse_small_int(std::string_view text, const std::string& where, const std::string& key, int min_value);
// "a+b+c" of integers >= min_value.
std::vector<int> parse_int_list(std::string_view text, const std::string& where, const std::string& key,
                                int min_value);
std::string join_ints(const std::vector<int>& v, char sep);
// Splits `text` at every `sep` (an empty text gives one empty part).
std::vector<std::string_view> split_at(std::string_view text, char sep);

// JSON: an optional list of integers >= min_value (empty when absent), an optional small integer.
std::vector<int> json_int_list(const core::Json& obj, std::string_view key, const core::JsonWhere& where,
                               int min_value);
int json_small_int(const core::Json& obj, std::string_view key, const core::JsonWhere& where, int min_value,
                   int fallback);

// --- The memory-knob keys' accessors (strategy_keys_memory.cpp; rows of the key table) ---
void parse_gradbuf(Strategy& s, std::string_view key, std::string_view v, const std::string& where, KeyParseState& st);
std::optional<std::string> gradbuf_text(const Strategy& s);
void write_gradbuf_json(const Strategy& s, nlohmann::ordered_json& j);
void read_gradbuf_json(const core::Json& j, const core::JsonWhere& w, Strategy& s);
void parse_lpweights(Strategy& s, std::string_view key, std::string_view v, const std::string& where, KeyParseState& st);
std::optional<std::string> lpweights_text(const Strategy& s);
void write_lpweights_json(const Strategy& s, nlohmann::ordered_json& j);
void read_lpweights_json(const core::Json& j, const core::JsonWhere& w, Strategy& s);
std::optional<std::string> offload_text(const Strategy& s);
void write_offload_json(const Strategy& s, nlohmann::ordered_json& j);
void read_offload_json(const core::Json& j, const core::JsonWhere& w, Strategy& s);

// --- Per-stage form (strategy_stages.cpp, strategy_stage_rules.cpp) ---
// `stages=` and `layers=` values of the CLI syntax; layer groups are attached to the stages by attach_layer_groups
// once both keys are read (either order).
std::vector<StageChoice> parse_stages(std::string_view value, const std::string& where);
std::vector<std::vector<LayerChoice>> parse_layer_groups(std::string_view value, const std::string& where);
void attach_layer_groups(std::vector<StageChoice>& stages, std::vector<std::vector<LayerChoice>> groups,
                         const std::string& where);
std::string stages_to_cli(const std::vector<StageChoice>& stages);
std::string layer_groups_to_cli(const std::vector<StageChoice>& stages);  // "" when no stage has layer choices
nlohmann::ordered_json stages_to_json(const std::vector<StageChoice>& stages);
std::vector<StageChoice> stages_from_json(const core::Json& arr, const core::JsonWhere& where);
// complete_strategy for a strategy with `stages`.
Strategy complete_stage_strategy(Strategy s, const model::Model& m, const hw::Cluster& c);

}  // namespace strata::cost::detail
