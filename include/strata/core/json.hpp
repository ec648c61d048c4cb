// core/json: the one JSON reader of strata. Parses text or files with errors that say "file:line:column", and
// reads fields with errors that name the file, the field path and the problem. Every loader uses these.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::core {

using Json = nlohmann::json;
// Insertion-ordered JSON for output files, so that keys come out in the order we write them (deterministic).
using OrderedJson = nlohmann::ordered_json;

// Parses `text`; on a syntax error, or a key that appears twice in one object, throws InputError
// "<origin>:<line>:<column>: <what>".
Json parse_json_text(std::string_view text, const std::string& origin);
// Reads and parses a file; a missing/unreadable file is an InputError naming the path.
Json load_json_file(const std::string& path);
// Like OrderedJson::dump(indent), but arrays of numbers/strings/bools (placements, splits) stay on one line.
std::string dump_json(const OrderedJson& value, int indent = 2);
// dump_json's bytes for a top-level object written member by member, so that a large document (a 98,304-GPU
// plan file: ~1.4 M device ids, a tree of ~45 MB) never exists as one tree: each member's tree is built, appended
// and dropped. Arrays of objects can go element by element (array_begin / element / array_end).
class JsonObjectWriter {
 public:
  explicit JsonObjectWriter(std::string& out, int indent = 2) : out_(out), indent_(indent) {}
  void member(std::string_view key, const OrderedJson& value);
  // An array member whose elements are objects or arrays (a primitive element throws std::logic_error: dump_json
  // would keep such an array on one line).
  void array_begin(std::string_view key);
  void element(const OrderedJson& value);
  void array_end();
  void close();  // the closing brace ("{}" when no member was written)

 private:
  void key_prefix(std::string_view key);
  std::string& out_;
  int indent_;
  bool first_ = true, first_element_ = true;
};
// Reads a whole text file (InputError when it cannot be read or is a directory).
std::string read_text_file(const std::string& path);

// A position inside a JSON document for error messages: origin (file name or "--flag") plus field path.
struct JsonWhere {
  std::string origin;  // "model.json"
  std::string path;    // "layers[3]" (empty at the root)
  JsonWhere field(std::string_view key) const;
  JsonWhere index(std::size_t i) const;
  std::string str() const;  // "model.json: layers[3].hidden"
};

// Throws InputError "<where>: <problem>".
[[noreturn]] void fail(const JsonWhere& where, const std::string& problem);

// Field readers. `obj` must be an object (else InputError). Required readers fail when the key is missing.
const Json& require_field(const Json& obj, std::string_view key, const JsonWhere& where);
bool has_field(const Json& obj, std::string_view key);
std::string get_string(const Json& obj, std::string_view key, const JsonWhere& where);
double get_number(const Json& obj, std::string_view key, const JsonWhere& where);
double get_positive_number(const Json& obj, std::string_view key, const JsonWhere& where);    // > 0
double get_nonnegative_number(const Json& obj, std::string_view key, const JsonWhere& where); // >= 0
std::int64_t get_int(const Json& obj, std::string_view key, const JsonWhere& where);
std::int64_t get_positive_int(const Json& obj, std::string_view key, const JsonWhere& where);  // > 0
bool get_bool(const Json& obj, std::string_view key, const JsonWhere& where);
// Optional variants: nullopt when absent; InputError when present with the wrong type or range.
std::optional<std::string> opt_string(const Json& obj, std::string_view key, const JsonWhere& where);
std::optional<double> opt_number(const Json& obj, std::string_view key, const JsonWhere& where);
std::optional<double> opt_positive_number(const Json& obj, std::string_view key, const JsonWhere& where);
std::optional<std::int64_t> opt_positive_int(const Json& obj, std::string_view key, const JsonWhere& where);
std::optional<bool> opt_bool(const Json& obj, std::string_view key, const JsonWhere& where);
// Checks `obj` is an object / array, else InputError.
void expect_object(const Json& value, const JsonWhere& where);
void expect_array(const Json& value, const JsonWhere& where);

}  // namespace strata::core
