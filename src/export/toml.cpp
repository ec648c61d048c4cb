// export/toml: the TOML subset reader (include/strata/export/toml.hpp). A recursive-descent parser over the
// whole text so arrays may span lines; every error names origin:line.
#include "strata/export/toml.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "strata/core/error.hpp"

namespace strata::exporter {
namespace {

struct Reader {
  std::string_view text;
  const std::string& origin;
  std::size_t pos = 0;
  int line = 1;

  [[noreturn]] void fail(const std::string& problem) const {
    throw core::InputError(fmt::format("{}:{}: {}", origin, line, problem));
  }
  bool done() const { return pos >= text.size(); }
  char peek() const { return done() ? '\0' : text[pos]; }
  void advance() {
    if (text[pos] == '\n') ++line;
    ++pos;
  }
  // Skips spaces and tabs (and, when `newlines`, newlines and comments).
  void skip(bool newlines) {
    while (!done()) {
      const char ch = peek();
      if (ch == ' ' || ch == '\t' || ch == '\r') advance();
      else if (newlines && ch == '\n') advance();
      else if (ch == '#') while (!done() && peek() != '\n') advance();
      else break;
    }
  }
  void end_of_line() {
    skip(false);
    if (!done() && peek() != '\n') fail(fmt::format("unexpected '{}' after the value", peek()));
  }
  std::string bare_key() {
    std::string k;
    while (!done() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-')) {
      k += peek();
      advance();
    }
    if (k.empty()) fail(done() ? "expected a key, got the end of the file" : fmt::format("expected a key, got '{}'", peek()));
    return k;
  }
  std::string key() {
    if (peek() == '"' || peek() == '\'') return string_value();
    return bare_key();
  }
  std::string string_value() {
    const char quote = peek();
    advance();
    std::string s;
    while (true) {
      if (done() || peek() == '\n') fail("unterminated string");
      char ch = peek();
      advance();
      if (ch == quote) break;
      if (ch == '\\' && quote == '"') {
        if (done()) fail("unterminated string");
        const char e = peek();
        advance();
        if (e == 'n') ch = '\n';
        else if (e == 't') ch = '\t';
        else if (e == '"' || e == '\\') ch = e;
        else fail(fmt::format("unsupported escape '\\{}'", e));
      }
      s += ch;
    }
    return s;
  }
  nlohmann::json number_or_bool() {
    std::string tok;
    while (!done() && (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_' || peek() == '-' ||
                       peek() == '+' || peek() == '.'))  {
      if (peek() != '_') tok += peek();
      advance();
    }
    if (tok == "true") return true;
    if (tok == "false") return false;
    if (tok.empty()) fail(done() ? "expected a value" : fmt::format("unexpected '{}'", peek()));
    std::int64_t i = 0;
    const char* b = tok.data() + (tok[0] == '+' ? 1 : 0);
    if (auto [p, ec] = std::from_chars(b, tok.data() + tok.size(), i); ec == std::errc() && p == tok.data() + tok.size())
      return i;
    double d = 0;
    if (auto [p, ec] = std::from_chars(b, tok.data() + tok.size(), d); ec == std::errc() && p == tok.data() + tok.size())
      return d;
    fail(fmt::format("invalid value '{}' (supported: strings, numbers, booleans, arrays)", tok));
  }
  nlohmann::json value(int depth) {
    if (depth > 32) fail("arrays nested too deeply");
    const char ch = peek();
    if (ch == '"' || ch == '\'') {
      if (text.substr(pos, 3) == "\"\"\"" || text.substr(pos, 3) == "'''") fail("multi-line strings are not supported");
      return string_value();
    }
    if (ch == '{') fail("inline tables are not supported");
    if (ch != '[') return number_or_bool();
    advance();
    nlohmann::json arr = nlohmann::json::array();
    while (true) {
      skip(true);
      if (done()) fail("unterminated array");
      if (peek() == ']') break;
      arr.push_back(value(depth + 1));
      skip(true);
      if (peek() == ',') advance();
      else if (peek() != ']') fail(done() ? "unterminated array" : fmt::format("expected ',' or ']' in an array, got '{}'", peek()));
    }
    advance();
    return arr;
  }
  std::string header() {
    advance();  // '['
    if (peek() == '[') fail("array tables [[...]] are not supported");
    std::string name;
    while (true) {
      skip(false);
      name += key();
      skip(false);
      if (peek() == '.') {
        name += '.';
        advance();
        continue;
      }
      if (peek() != ']') fail("expected ']' closing the section header");
      advance();
      return name;
    }
  }
};

}  // namespace

nlohmann::json parse_toml(std::string_view text, const std::string& origin) {
  Reader r{text, origin};
  nlohmann::json doc = nlohmann::json::object();
  nlohmann::json* table = &doc;
  while (true) {
    r.skip(true);
    if (r.done()) break;
    if (r.peek() == '[') {
      const std::string name = r.header();
      if (doc.contains(name)) r.fail(fmt::format("section [{}] given twice (or clashes with a key)", name));
      doc[name] = nlohmann::json::object();
      table = &doc[name];
      r.end_of_line();
      continue;
    }
    const std::string k = r.key();
    r.skip(false);
    if (r.peek() == '.') r.fail("dotted keys are not supported");
    if (r.peek() != '=') r.fail(fmt::format("expected '=' after key '{}'", k));
    r.advance();
    r.skip(false);
    if (table->contains(k)) r.fail(fmt::format("key '{}' given twice", k));
    (*table)[k] = r.value(0);
    r.end_of_line();
  }
  return doc;
}

}  // namespace strata::exporter
