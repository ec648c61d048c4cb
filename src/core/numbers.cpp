// core/numbers: implementation of the numeric-input checks (see include/strata/core/numbers.hpp).
#include "strata/core/numbers.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::core {
namespace {

std::string bounds(Range r) { return fmt::format(">= {} and <= {}", format_bound(r.lo), format_bound(r.hi)); }

// The value as given, for "got ...": at most 40 bytes, control characters escaped.
std::string shown(std::string_view text) {
  std::string out = printable(text.substr(0, 40));
  return text.size() > 40 ? out + "..." : out;
}

// Parses the whole of `text` as a decimal number (optional sign, digits, point, exponent). nan, inf, hex floats,
// blanks and trailing characters are rejected here, before strtod would accept them.
bool parse_decimal(std::string_view text, double& out) {
  if (text.empty() || text.size() > 64) return false;
  for (const char ch : text)
    if (!(std::isdigit(static_cast<unsigned char>(ch)) || ch == '.' || ch == '-' || ch == '+' || ch == 'e' ||
          ch == 'E'))
      return false;
  const std::string s(text);
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

thread_local int strict_integer_scopes = 0;

}  // namespace

StrictJsonIntegers::StrictJsonIntegers() { ++strict_integer_scopes; }
StrictJsonIntegers::~StrictJsonIntegers() { --strict_integer_scopes; }
bool strict_json_integers() { return strict_integer_scopes > 0; }

std::string format_bound(double x) {
  // Integral bounds in full (2^53 = 9007199254740992 has 16 digits, one more than %.15g keeps).
  if (x == std::floor(x) && std::fabs(x) < 1e17) return fmt::format("{:.0f}", x);
  return fmt::format("{:.15g}", x);
}

std::string number_problem(double x, Range r) {
  if (std::isfinite(x) && x >= r.lo && x <= r.hi) return "";
  return fmt::format("must be a finite number {}, got {}", bounds(r), x);
}

std::string integer_problem(double x, Range r) {
  if (std::isfinite(x) && x == std::floor(x) && x >= r.lo && x <= r.hi) return "";
  return fmt::format("must be an integer {}, got {}", bounds(r), x);
}

std::string number_text_problem(std::string_view text, Range r) {
  double x = 0;
  if (!parse_decimal(text, x) || !std::isfinite(x))
    return fmt::format("must be a finite number {}, got '{}'", bounds(r), shown(text));
  return number_problem(x, r).empty() ? "" : fmt::format("must be a finite number {}, got {}", bounds(r), shown(text));
}

std::string integer_text_problem(std::string_view text, Range r) {
  double x = 0;
  // Digits only (an optional sign first): "8", not "8.0" or "1e3", as the flags' integer parser reads them.
  const auto digits = text.substr(!text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0);
  const bool plain = !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
  if (!plain || !parse_decimal(text, x) || !std::isfinite(x))
    return fmt::format("must be an integer {}, got '{}'", bounds(r), shown(text));
  return integer_problem(x, r).empty() ? "" : fmt::format("must be an integer {}, got {}", bounds(r), shown(text));
}

double check_number(double x, Range r, const std::string& where) {
  if (auto p = number_problem(x, r); !p.empty()) throw InputError(fmt::format("{}: {}", where, p));
  return x;
}

std::int64_t check_integer(double x, Range r, const std::string& where) {
  if (auto p = integer_problem(x, r); !p.empty()) throw InputError(fmt::format("{}: {}", where, p));
  return static_cast<std::int64_t>(x);
}

double parse_number(std::string_view text, Range r, const std::string& where) {
  if (auto p = number_text_problem(text, r); !p.empty()) throw InputError(fmt::format("{}: {}", where, p));
  return std::strtod(std::string(text).c_str(), nullptr);
}

std::int64_t parse_integer(std::string_view text, Range r, const std::string& where) {
  if (auto p = integer_text_problem(text, r); !p.empty()) throw InputError(fmt::format("{}: {}", where, p));
  return static_cast<std::int64_t>(std::strtod(std::string(text).c_str(), nullptr));
}

}  // namespace strata::core
