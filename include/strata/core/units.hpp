// core/units: SI unit constants. Internally everything is seconds, bytes, FLOP, bytes/s and FLOP/s; these
// constants convert at the edges (catalog files, CLI output).
#pragma once
#include <cstdint>
#include <limits>

namespace strata::core {

inline constexpr double kKB = 1e3, kMB = 1e6, kGB = 1e9, kTB = 1e12;
inline constexpr double kKiB = 1024.0, kMiB = kKiB * 1024.0, kGiB = kMiB * 1024.0, kTiB = kGiB * 1024.0;
inline constexpr double kGFLOP = 1e9, kTFLOP = 1e12, kPFLOP = 1e15;
inline constexpr double kGbit = 1e9 / 8.0;  // bytes in one gigabit
inline constexpr double kMicrosecond = 1e-6, kMillisecond = 1e-3;
// "No finite value": unreachable times, absent links, infeasible costs.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace strata::core
