// core/text: number formatting and plain-text tables for the CLI's human-readable output.
#include "strata/core/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "strata/core/error.hpp"
#include "strata/core/units.hpp"

namespace strata::core {
namespace {
std::string scaled(double value, const char* const* units, int n_units, double step) {
  // Inputs are range-checked (core/numbers.hpp), so these are guards: a non-finite value or one beyond 10^6 of the
  // largest unit prints in a few characters, never as "nan", "inf" or a 300-digit number.
  if (!std::isfinite(value)) return fmt::format("(not finite) {}", units[0]);
  int i = 0;
  double v = value;
  while (std::fabs(v) >= step && i + 1 < n_units) {
    v /= step;
    ++i;
  }
  if (std::fabs(v) >= 1e6) return fmt::format("{:.3g} {}", v, units[i]);
  if (std::fabs(v) >= 100 || i == 0) return fmt::format("{:.0f} {}", v, units[i]);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f} {}", v, units[i]);
  return fmt::format("{:.2f} {}", v, units[i]);
}
}  // namespace

std::string format_bytes(double bytes) {
  static const char* const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  return scaled(bytes, u, 6, 1024.0);
}
std::string format_count(double count) {
  if (!std::isfinite(count)) return "(not finite)";
  if (std::fabs(count) >= 1e18) return fmt::format("{:.3g}", count);
  if (std::fabs(count) < 1000) return fmt::format("{:.0f}", count);
  static const char* const u[] = {"", "K", "M", "B", "T"};
  int i = 0;
  double v = count;
  while (std::fabs(v) >= 1000 && i < 4) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.{}f} {}", v, std::fabs(v) >= 100 ? 1 : 2, u[i]);
}
std::string format_seconds(double s) {
  if (s == 0) return "0 s";
  if (!std::isfinite(s)) return "(not finite) s";
  if (std::fabs(s) >= 1) return fmt::format("{:.3g} s", s);
  if (std::fabs(s) >= 1e-3) return fmt::format("{:.3g} ms", s * 1e3);
  if (std::fabs(s) >= 1e-6) return fmt::format("{:.3g} us", s * 1e6);
  return fmt::format("{:.3g} ns", s * 1e9);
}
std::string format_flops(double f) {
  static const char* const u[] = {"FLOP/s", "KFLOP/s", "MFLOP/s", "GFLOP/s", "TFLOP/s", "PFLOP/s", "EFLOP/s"};
  return scaled(f, u, 7, 1000.0);
}
std::string format_bandwidth(double b) {
  static const char* const u[] = {"B/s", "KB/s", "MB/s", "GB/s", "TB/s"};
  return scaled(b, u, 5, 1000.0);
}

namespace {
// A cell is right-aligned when it starts like a number ("12.5", "-3", "1.2e9 s"); strtod alone would also accept
// words such as "Infinity" or "nan", so the first character must be a digit, a sign or a point.
bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  const char c = s[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end != s.c_str();
}
}  // namespace

std::string render_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 0);
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = header[c].size();
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& r, bool is_header) {
    std::string out;
    for (std::size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < r.size() ? r[c] : "";
      const bool right = !is_header && looks_numeric(cell);
      out += right ? fmt::format("{:>{}}", cell, width[c]) : fmt::format("{:<{}}", cell, width[c]);
      if (c + 1 < width.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header, true);
  std::size_t total = 0;
  for (auto w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto& r : rows) out += line(r, false);
  return out;
}

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += ch;
  }
  return out;
}

void check_name(std::string_view name, const std::string& where) {
  if (name.size() > kMaxNameBytes)
    throw InputError(fmt::format("{}: name of {} bytes is too long (at most {}): '{}...'", where, name.size(),
                                 kMaxNameBytes, printable(name.substr(0, 40))));
  for (const char ch : name) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f)
      throw InputError(fmt::format("{}: name '{}' holds a control character", where,
                                   printable(name.substr(0, std::min<std::size_t>(name.size(), 40)))));
  }
}

}  // namespace strata::core
