// export/toml: a small TOML reader for the subset torchtitan job files use — [section] and [dotted.section]
// headers, key = value with basic "strings" (\" \\ \n \t escapes), 'literal strings', integers, floats,
// true/false, and arrays (nested, spanning lines, trailing comma), # comments. Not supported (an error naming the
// line): inline tables, multi-line strings, dates, dotted keys, [[array tables]].
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata::exporter {

// The document as JSON: top-level keys at the root, each section as root["dotted.name"] (an object). A syntax
// error, a duplicate key or section is an InputError "<origin>:<line>: <problem>".
nlohmann::json parse_toml(std::string_view text, const std::string& origin);

}  // namespace strata::exporter
