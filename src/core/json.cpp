// core/json: implementation of the JSON reader and field accessors (see include/strata/core/json.hpp).
#include "strata/core/json.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/core/numbers.hpp"
#include "strata/core/text.hpp"

namespace strata::core {
namespace {

// Converts a byte offset (nlohmann reports the byte *after* the error) into 1-based line and column.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// nlohmann's what() starts with "[json.exception.parse_error.101] parse error at line 1, column 2: ".
std::string strip_nlohmann_prefix(const std::string& what) {
  const auto colon = what.find(": ");
  return colon == std::string::npos ? what : what.substr(colon + 2);
}

const char* type_name(const Json& v) { return v.type_name(); }

// The decoded text of the string token that starts at text[at] (a '"'); `end` gets the offset after it.
std::string string_token(std::string_view text, std::size_t at, std::size_t& end) {
  std::size_t i = at + 1;
  bool escaped = false;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? (escaped = true, 2) : 1;
  end = std::min(i + 1, text.size());
  const std::string_view token = text.substr(at, end - at);
  if (!escaped) return std::string(token.substr(1, token.size() - 2));
  return Json::parse(token).get<std::string>();
}

// In syntactically valid JSON text, the byte offset and name of the first key that appears twice in one object
// (nlohmann keeps the last silently). One pass with a key set per open object.
std::optional<std::pair<std::size_t, std::string>> first_duplicate_key(std::string_view text) {
  struct Frame {
    bool object = false;
    bool expect_key = false;
    std::set<std::string> keys;
  };
  std::vector<Frame> stack;
  for (std::size_t i = 0; i < text.size();) {
    const char ch = text[i];
    if (ch == '"') {
      std::size_t end = i;
      std::string s = string_token(text, i, end);
      if (!stack.empty() && stack.back().object && stack.back().expect_key) {
        stack.back().expect_key = false;
        if (!stack.back().keys.insert(s).second) return std::make_pair(i, std::move(s));
      }
      i = end;
      continue;
    }
    if (ch == '{' || ch == '[') stack.push_back({ch == '{', ch == '{', {}});
    else if ((ch == '}' || ch == ']') && !stack.empty()) stack.pop_back();
    else if (ch == ',' && !stack.empty() && stack.back().object) stack.back().expect_key = true;
    ++i;
  }
  return std::nullopt;
}

// In JSON text, the byte offset of the first bracket that opens level limits::kMaxJsonDepth + 1, if any. Checked before
// nlohmann builds the tree: its copies, comparisons and our walkers recurse once per level, so a document nested
// 30,000 deep would overflow the stack later (and a deep tree is never a real model, cluster or plan).
std::optional<std::size_t> too_deep_at(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '{' || ch == '[') {
      if (++depth > limits::kMaxJsonDepth) return i;
    } else if ((ch == '}' || ch == ']') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

void dump_compact(const OrderedJson& v, int indent, int depth, std::string& out) {
  const bool scalars_only = std::all_of(v.begin(), v.end(), [](const OrderedJson& x) { return x.is_primitive(); });
  if (v.is_array() && (v.empty() || scalars_only)) {
    out += v.dump();
    return;
  }
  if (!v.is_structured() || v.empty()) {
    out += v.dump();
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent * (depth + 1)), ' ');
  out += v.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    out += first ? "" : ",\n";
    first = false;
    out += pad;
    if (v.is_object()) out += OrderedJson(it.key()).dump() + ": ";
    dump_compact(it.value(), indent, depth + 1, out);
  }
  out += "\n" + std::string(static_cast<std::size_t>(indent * depth), ' ') + (v.is_object() ? "}" : "]");
}

}  // namespace

std::string dump_json(const OrderedJson& value, int indent) {
  std::string out;
  dump_compact(value, indent, 0, out);
  return out;
}

// The same layout as dump_compact of the whole object: "{\n", members at depth 1 joined by ",\n", "\n}".
void JsonObjectWriter::key_prefix(std::string_view key) {
  out_ += first_ ? "{\n" : ",\n";
  first_ = false;
  out_.append(static_cast<std::size_t>(indent_), ' ');
  out_ += OrderedJson(std::string(key)).dump() + ": ";
}

void JsonObjectWriter::member(std::string_view key, const OrderedJson& value) {
  key_prefix(key);
  dump_compact(value, indent_, 1, out_);
}

void JsonObjectWriter::array_begin(std::string_view key) {
  key_prefix(key);
  first_element_ = true;
}

void JsonObjectWriter::element(const OrderedJson& value) {
  if (value.is_primitive()) throw std::logic_error("JsonObjectWriter::element: arrays of primitives go whole");
  out_ += first_element_ ? "[\n" : ",\n";
  first_element_ = false;
  out_.append(static_cast<std::size_t>(2 * indent_), ' ');
  dump_compact(value, indent_, 2, out_);
}

void JsonObjectWriter::array_end() {
  if (first_element_) {
    out_ += "[]";
    return;
  }
  out_ += "\n";
  out_.append(static_cast<std::size_t>(indent_), ' ');
  out_ += "]";
}

void JsonObjectWriter::close() { out_ += first_ ? "{}" : "\n}"; }

Json parse_json_text(std::string_view text, const std::string& origin) {
  if (const auto at = too_deep_at(text)) {
    const auto [line, col] = line_column(text, *at + 1);
    throw InputError(fmt::format("{}:{}:{}: nested deeper than {} levels of objects and arrays", origin, line, col,
                                 limits::kMaxJsonDepth));
  }
  try {
    Json value = Json::parse(text.begin(), text.end());
    if (const auto dup = first_duplicate_key(text)) {
      const auto [line, col] = line_column(text, dup->first + 1);
      throw InputError(fmt::format("{}:{}:{}: duplicate key '{}' in one object (each key may appear once)", origin,
                                   line, col, printable(dup->second)));
    }
    return value;
  } catch (const Json::parse_error& e) {
    const auto [line, col] = line_column(text, e.byte);
    throw InputError(fmt::format("{}:{}:{}: malformed JSON: {}", origin, line, col, strip_nlohmann_prefix(e.what())));
  } catch (const Json::out_of_range& e) {
    // A number literal too large for a double (nlohmann error 406) is thrown as out_of_range, without a position.
    throw InputError(fmt::format("{}: malformed JSON: {}", origin, e.what()));
  }
}

std::string read_text_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::status(path, ec);
  if (fs::is_directory(st)) throw InputError(fmt::format("{}: is a directory, not a file", printable(path)));
  if (!fs::exists(st)) throw InputError(fmt::format("{}: cannot open file", printable(path)));
  // A FIFO, a device or a socket may block forever (a FIFO without a writer) or never end (/dev/zero): refused
  // before opening, whatever command reads it.
  if (!fs::is_regular_file(st))
    throw InputError(fmt::format("{}: is not a regular file (a device, FIFO or socket); give a file", printable(path)));
  const auto size = fs::file_size(path, ec);
  if (!ec && size > limits::kMaxInputFileBytes)
    throw InputError(fmt::format("{}: file of {} bytes is too large (at most {} bytes, {} MiB)", printable(path), size,
                                 limits::kMaxInputFileBytes, limits::kMaxInputFileBytes >> 20));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot open file", printable(path)));
  // Read with the cap as well: the file may grow between the size check and the read.
  std::string out;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > limits::kMaxInputFileBytes)
      throw InputError(
          fmt::format("{}: file is too large (at most {} bytes)", printable(path), limits::kMaxInputFileBytes));
  }
  if (in.bad()) throw InputError(fmt::format("{}: cannot read file", printable(path)));
  return out;
}

Json load_json_file(const std::string& path) { return parse_json_text(read_text_file(path), path); }

JsonWhere JsonWhere::field(std::string_view key) const {
  return {origin, path.empty() ? std::string(key) : path + "." + std::string(key)};
}
JsonWhere JsonWhere::index(std::size_t i) const { return {origin, fmt::format("{}[{}]", path, i)}; }
std::string JsonWhere::str() const { return path.empty() ? origin : origin + ": " + path; }

void fail(const JsonWhere& where, const std::string& problem) {
  throw InputError(fmt::format("{}: {}", where.str(), problem));
}

void expect_object(const Json& value, const JsonWhere& where) {
  if (!value.is_object()) fail(where, fmt::format("expected an object, got {}", type_name(value)));
}
void expect_array(const Json& value, const JsonWhere& where) {
  if (!value.is_array()) fail(where, fmt::format("expected an array, got {}", type_name(value)));
}

bool has_field(const Json& obj, std::string_view key) { return obj.is_object() && obj.contains(key); }

const Json& require_field(const Json& obj, std::string_view key, const JsonWhere& where) {
  expect_object(obj, where);
  auto it = obj.find(key);
  if (it == obj.end()) fail(where.field(key), "missing required field");
  return *it;
}

namespace {
double as_number(const Json& v, const JsonWhere& w) {
  if (!v.is_number()) fail(w, fmt::format("expected a number, got {}", type_name(v)));
  const double x = v.get<double>();
  if (!std::isfinite(x)) fail(w, "must be finite");
  const double mag = std::fabs(x);
  if (mag != 0 && (mag > kMaxJsonMagnitude || mag < kMinJsonMagnitude))
    fail(w, fmt::format("must be 0 or of magnitude >= {} and <= {}, got {}", kMinJsonMagnitude, kMaxJsonMagnitude,
                        x));
  return x;
}
std::int64_t as_int(const Json& v, const JsonWhere& w) {
  constexpr std::int64_t kMaxExact = std::int64_t{1} << 53;  // beyond it a double (JSON) loses integers
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxExact))
    fail(w, fmt::format("must be an integer >= {} and <= {}, got {}", -kMaxExact, kMaxExact, v.dump()));
  if (v.is_number_integer()) {
    const auto x = v.get<std::int64_t>();
    if (x > kMaxExact || x < -kMaxExact)
      fail(w, fmt::format("must be an integer >= {} and <= {}, got {}", -kMaxExact, kMaxExact, x));
    return x;
  }
  if (v.is_number_float() && strict_json_integers())
    fail(w, fmt::format("expected an integer, got the float {}", v.dump()));
  if (v.is_number_float()) {
    const double x = v.get<double>();
    if (std::isfinite(x) && x == std::floor(x) && std::fabs(x) < 9.0e15) return static_cast<std::int64_t>(x);
  }
  fail(w, fmt::format("expected an integer, got {}", v.dump()));
}
std::string as_string(const Json& v, const JsonWhere& w) {
  if (!v.is_string()) fail(w, fmt::format("expected a string, got {}", type_name(v)));
  return v.get<std::string>();
}
bool as_bool(const Json& v, const JsonWhere& w) {
  if (!v.is_boolean()) fail(w, fmt::format("expected true or false, got {}", type_name(v)));
  return v.get<bool>();
}
double check_positive(double x, const JsonWhere& w) {
  if (!(x > 0)) fail(w, fmt::format("must be > 0, got {}", x));
  return x;
}
}  // namespace

std::string get_string(const Json& obj, std::string_view key, const JsonWhere& where) {
  return as_string(require_field(obj, key, where), where.field(key));
}
double get_number(const Json& obj, std::string_view key, const JsonWhere& where) {
  return as_number(require_field(obj, key, where), where.field(key));
}
double get_positive_number(const Json& obj, std::string_view key, const JsonWhere& where) {
  return check_positive(get_number(obj, key, where), where.field(key));
}
double get_nonnegative_number(const Json& obj, std::string_view key, const JsonWhere& where) {
  const double x = get_number(obj, key, where);
  if (x < 0) fail(where.field(key), fmt::format("must be >= 0, got {}", x));
  return x;
}
std::int64_t get_int(const Json& obj, std::string_view key, const JsonWhere& where) {
  return as_int(require_field(obj, key, where), where.field(key));
}
std::int64_t get_positive_int(const Json& obj, std::string_view key, const JsonWhere& where) {
  const auto x = get_int(obj, key, where);
  if (x <= 0) fail(where.field(key), fmt::format("must be > 0, got {}", x));
  return x;
}
bool get_bool(const Json& obj, std::string_view key, const JsonWhere& where) {
  return as_bool(require_field(obj, key, where), where.field(key));
}

std::optional<std::string> opt_string(const Json& obj, std::string_view key, const JsonWhere& where) {
  expect_object(obj, where);
  if (!obj.contains(key)) return std::nullopt;
  return as_string(obj.at(std::string(key)), where.field(key));
}
std::optional<double> opt_number(const Json& obj, std::string_view key, const JsonWhere& where) {
  expect_object(obj, where);
  if (!obj.contains(key)) return std::nullopt;
  return as_number(obj.at(std::string(key)), where.field(key));
}
std::optional<double> opt_positive_number(const Json& obj, std::string_view key, const JsonWhere& where) {
  auto x = opt_number(obj, key, where);
  if (x) check_positive(*x, where.field(key));
  return x;
}
std::optional<std::int64_t> opt_positive_int(const Json& obj, std::string_view key, const JsonWhere& where) {
  expect_object(obj, where);
  if (!obj.contains(key)) return std::nullopt;
  const auto x = as_int(obj.at(std::string(key)), where.field(key));
  if (x <= 0) fail(where.field(key), fmt::format("must be > 0, got {}", x));
  return x;
}
std::optional<bool> opt_bool(const Json& obj, std::string_view key, const JsonWhere& where) {
  expect_object(obj, where);
  if (!obj.contains(key)) return std::nullopt;
  return as_bool(obj.at(std::string(key)), where.field(key));
}

}  // namespace strata::core
