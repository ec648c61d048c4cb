// core/text: small formatting helpers shared by every human-readable table (one place for number formats).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace strata::core {

// "1.23 GiB", "512 MiB" ... (binary units, 3 significant digits).
std::string format_bytes(double bytes);
// "174.6 B", "1.2 M" (decimal, for parameter counts).
std::string format_count(double count);
// "12.3 ms", "1.42 s", "45 us".
std::string format_seconds(double seconds);
// "312 TFLOP/s".
std::string format_flops(double flops_per_s);
// "600 GB/s" (decimal bytes/s, as vendors quote bandwidth).
std::string format_bandwidth(double bytes_per_s);

// A plain text table: header row, rows, columns padded; numbers right-aligned when the cell parses as a number.
std::string render_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

// Comma-joined list, e.g. for "valid: a, b, c" messages.
std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
// Lower-case ASCII copy.
std::string to_lower(std::string_view s);

// The longest name (model, layer, cluster, node, GPU type, job ...) strata accepts, in bytes.
inline constexpr std::size_t kMaxNameBytes = 256;
// `s` with control characters (bytes < 0x20 and 0x7f) written as \xNN, so that printing it cannot move the
// cursor, recolour the terminal or break a one-line message.
std::string printable(std::string_view s);
// InputError "<where>: <problem>" when a user-supplied name is longer than kMaxNameBytes or holds a control
// character (the name is shown escaped and cut to 40 bytes).
void check_name(std::string_view name, const std::string& where);

}  // namespace strata::core
