// cost/strategy_text: private helpers shared by the strategy parsers and checks (strategy.cpp,
// strategy_stages.cpp, strategy_stage_rules.cpp): integer and list parsing with errors naming the key, JSON list
// readers, and the one format of a violated rule.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/cost/strategy.hpp"

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
