// core/numbers: the one checker of numeric inputs (CLI flags, Python keywords, --price maps): every value must be
// finite and inside a documented range, and the message names both bounds ("--seq: must be an integer >= 1 and
// <= 16777216, got 0"), so that no nan, inf or absurd magnitude reaches the cost model or the printed tables.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::core {

// A closed range [lo, hi] of accepted values.
struct Range {
  double lo = 0, hi = 0;
};

// "" when x is finite and in r, else the problem: "must be a finite number >= LO and <= HI, got X".
std::string number_problem(double x, Range r);
// "" when x is an integer in r, else "must be an integer >= LO and <= HI, got X".
std::string integer_problem(double x, Range r);
// The problem with `text` read as a number / an integer ("" when it parses whole, is finite and lies in r).
// Accepts decimal and exponent notation only ("1e3" is an integer); rejects nan, inf, hex and trailing words.
std::string number_text_problem(std::string_view text, Range r);
std::string integer_text_problem(std::string_view text, Range r);

// Throw InputError "<where>: <problem>" unless the value is acceptable; return it.
double check_number(double x, Range r, const std::string& where);
std::int64_t check_integer(double x, Range r, const std::string& where);
double parse_number(std::string_view text, Range r, const std::string& where);
std::int64_t parse_integer(std::string_view text, Range r, const std::string& where);

// A bound as a reader expects it: 16777216, 0.001, 1e+12 (shortest of %g with up to 15 digits).
std::string format_bound(double x);

// While one lives on this thread, core/json's integer readers refuse a float even when it is integral (2.0):
// the Python bridge holds one around reading a dict, where 2.0 is a Python float the user wrote for an int (a
// JSON file has one number type, so there an integral 2.0 stays accepted).
struct StrictJsonIntegers {
  StrictJsonIntegers();
  ~StrictJsonIntegers();
  StrictJsonIntegers(const StrictJsonIntegers&) = delete;
  StrictJsonIntegers& operator=(const StrictJsonIntegers&) = delete;
};
bool strict_json_integers();

// JSON numbers (files and Python dicts): finite, and 0 or of magnitude in [kMinJsonMagnitude, kMaxJsonMagnitude].
// No real quantity of strata's files lies outside (FLOP totals reach 1e24, latencies 1e-9 s), and
// 1e300 or 1e-300 would print as 300-digit numbers or overflow to inf downstream.
inline constexpr double kMaxJsonMagnitude = 1e30, kMinJsonMagnitude = 1e-30;

// The documented ranges of the numeric inputs every sub-command shares (docs/strategy.md §Input ranges). Chosen
// generously: well above the largest real job (98,304 GPUs, gbs 16 M, seq 1 M tokens) and well below where the
// arithmetic of the cost model would lose integers (2^53) or overflow.
namespace limits {
inline constexpr Range kGbs{1, 9007199254740992.0};  // samples per iteration (2^53; the model bounds gbs·seq too)
inline constexpr Range kSeq{1, 16777216};            // tokens per sample
inline constexpr Range kMbs{1, 1048576};             // samples per micro-batch
inline constexpr Range kTop{1, 10000};               // plans listed
inline constexpr Range kThreads{1, 256};             // worker threads
inline constexpr Range kDegreeCap{0, 1048576};       // --max-tp / --max-pp (0 = no cap)
inline constexpr Range kSeed{0, 9007199254740992.0};  // 2^53: every seed is exact in a double (JSON)
inline constexpr Range kSteps{1, 1000000};           // optimizer steps of a run
inline constexpr Range kTimeoutS{0.1, 86400};        // a day
// A learning rate up to 1e6: one that makes a run diverge (`--optimizer sgd --lr 1e4`) is a valid input whose run
// reports the first non-finite loss (issue 40 §5); nan, inf and <= 0 are refused.
inline constexpr Range kLr{1e-12, 1e6};              // learning rate
inline constexpr Range kBucketMib{0.001, 1e6};       // gradient bucket, MiB (the simulator's bound too)
inline constexpr Range kIterations{1, 1000};         // simulated iterations
inline constexpr Range kOverlapSlowdown{1, 100};     // compute slowdown while communication overlaps it
inline constexpr Range kPricePerHour{1e-6, 1000000};  // $ per GPU-hour
inline constexpr Range kBudget{0, 1e12};             // $
inline constexpr Range kRoundS{1, 31536000};         // a scheduling round: 1 s to a year
inline constexpr Range kWorldSize{1, 64};            // local executor processes
// The deepest nesting of objects and arrays a JSON input (file or Python dict) may have; every strata file needs
// fewer than 10 levels. Bounds the recursion of nlohmann's copies and of every walker (issue 40).
inline constexpr std::size_t kMaxJsonDepth = 128;
// The largest input file any command reads (a plan file of 98,304 GPUs is about 45 MB).
inline constexpr std::uintmax_t kMaxInputFileBytes = std::uintmax_t{1} << 30;
}  // namespace limits

}  // namespace strata::core
