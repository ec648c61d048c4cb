// cost/strategy_text: private helpers shared by the strategy parsers and checks (see strategy_text.hpp).
#include "strategy_text.hpp"

#include <fmt/format.h>

#include <charconv>

#include "strata/core/error.hpp"

namespace strata::cost::detail {

using core::InputError;

void rule_error(const std::string& rule, const std::string& detail) {
  throw InputError(fmt::format("strategy: rule '{}' violated: {}", rule, detail));
}

void field_rule_error(const std::string& field, const std::string& rule, const std::string& detail) {
  throw InputError(fmt::format("strategy: {}: rule '{}' violated: {}", field, rule, detail));
}

std::int64_t parse_int(std::string_view text, const std::string& where, const std::string& key) {
  std::int64_t v = 0;
  const auto* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || p != end)
    throw InputError(fmt::format("{}: {}: '{}' is not an integer", where, key, text));
  return v;
}

int parse_small_int(std::string_view text, const std::string& where, const std::string& key, int min_value) {
  const auto v = parse_int(text, where, key);
  if (v < min_value || v > 1'000'000)
    throw InputError(fmt::format("{}: {}: {} is out of range (must be >= {})", where, key, v, min_value));
  return static_cast<int>(v);
}

std::vector<std::string_view> split_at(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (true) {
    const auto pos = text.find(sep, start);
    if (pos == std::string_view::npos) {
      out.push_back(text.substr(start));
      return out;
    }
    out.push_back(text.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<int> parse_int_list(std::string_view text, const std::string& where, const std::string& key,
                                int min_value) {
  std::vector<int> out;
  for (const auto part : split_at(text, '+')) out.push_back(parse_small_int(part, where, key, min_value));
  return out;
}

std::string join_ints(const std::vector<int>& v, char sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(v[i]);
  }
  return out;
}

std::vector<int> json_int_list(const core::Json& obj, std::string_view key, const core::JsonWhere& where,
                               int min_value) {
  std::vector<int> out;
  if (!core::has_field(obj, key)) return out;
  const auto& arr = obj.at(std::string(key));
  const auto w = where.field(key);
  core::expect_array(arr, w);
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const auto& e = arr[i];
    if (!e.is_number_integer() || e.get<std::int64_t>() < min_value || e.get<std::int64_t>() > 1'000'000)
      core::fail(w.index(i), fmt::format("must be an integer >= {}", min_value));
    out.push_back(static_cast<int>(e.get<std::int64_t>()));
  }
  return out;
}

int json_small_int(const core::Json& obj, std::string_view key, const core::JsonWhere& where, int min_value,
                   int fallback) {
  if (!core::has_field(obj, key)) return fallback;
  const auto v = core::get_int(obj, key, where);
  if (v < min_value || v > 1'000'000) core::fail(where.field(key), fmt::format("must be >= {}", min_value));
  return static_cast<int>(v);
}

}  // namespace strata::cost::detail
