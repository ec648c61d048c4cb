// hw/json_fields (private): small field helpers shared by the catalog and cluster loaders — strict key sets
// (typos are errors, keys starting with '_' are comments) and "exactly one of these unit-suffixed keys".
#pragma once
#include <initializer_list>
#include <optional>
#include <string_view>
#include <utility>

#include "strata/core/json.hpp"

namespace strata::hw::detail {

// InputError "<where>.<key>: unknown field (valid: ...)" for any key not in `allowed` (and not starting with '_').
void check_keys(const core::Json& obj, std::initializer_list<std::string_view> allowed, const core::JsonWhere& where);

// A positive number given under exactly one of `keys` (key, scale to SI); the value times its scale.
// Missing all: InputError naming the first key (when `required`), else nullopt. Several present: InputError.
std::optional<double> one_of_scaled(const core::Json& obj,
                                    std::initializer_list<std::pair<std::string_view, double>> keys,
                                    const core::JsonWhere& where, bool required, bool allow_zero = false);

}  // namespace strata::hw::detail
