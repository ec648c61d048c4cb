// Tests for core/numbers and the issue-40 bounds of core/json: every numeric text is finite and in range with
// both bounds in the message, JSON nesting and magnitudes are bounded, integral floats are refused under
// StrictJsonIntegers, and files that are not regular are refused instead of read (they could hang).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/numbers.hpp"
#include "strata/core/text.hpp"

using namespace strata::core;

namespace {
std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(CoreNumbers, TextIsFiniteAndInRangeWithBothBounds) {
  const Range r{1, 100};
  EXPECT_EQ(number_text_problem("2.5", r), "");
  EXPECT_EQ(number_text_problem("1e2", r), "");
  EXPECT_EQ(number_text_problem("nan", r), "must be a finite number >= 1 and <= 100, got 'nan'");
  EXPECT_EQ(number_text_problem("inf", r), "must be a finite number >= 1 and <= 100, got 'inf'");
  EXPECT_EQ(number_text_problem("0x10", r), "must be a finite number >= 1 and <= 100, got '0x10'");
  EXPECT_EQ(number_text_problem("1e400", r), "must be a finite number >= 1 and <= 100, got '1e400'");
  EXPECT_EQ(number_text_problem("101", r), "must be a finite number >= 1 and <= 100, got 101");
  EXPECT_EQ(number_text_problem(" 5", r), "must be a finite number >= 1 and <= 100, got ' 5'");
  EXPECT_EQ(integer_text_problem("8", r), "");
  EXPECT_EQ(integer_text_problem("8.0", r), "must be an integer >= 1 and <= 100, got '8.0'");
  EXPECT_EQ(integer_text_problem("1e1", r), "must be an integer >= 1 and <= 100, got '1e1'");
  EXPECT_EQ(integer_text_problem("-3", r), "must be an integer >= 1 and <= 100, got -3");
  EXPECT_EQ(integer_text_problem("99999999999999999999999", r),
            "must be an integer >= 1 and <= 100, got 99999999999999999999999");
}

TEST(CoreNumbers, ChecksThrowNamingTheInput) {
  EXPECT_EQ(error_of([] { check_number(std::nan(""), limits::kLr, "--lr"); }),
            "--lr: must be a finite number >= 1e-12 and <= 1000000, got nan");
  EXPECT_EQ(error_of([] { check_integer(2.5, limits::kTop, "--top"); }),
            "--top: must be an integer >= 1 and <= 10000, got 2.5");
  EXPECT_EQ(parse_integer("16", limits::kSeq, "--seq"), 16);
  EXPECT_DOUBLE_EQ(parse_number("0.5", limits::kTimeoutS, "--timeout"), 0.5);
  EXPECT_EQ(format_bound(limits::kGbs.hi), "9007199254740992");
}

TEST(CoreNumbers, JsonNestingIsBounded) {
  const std::string ok = std::string(128, '[') + std::string(128, ']');
  EXPECT_NO_THROW(parse_json_text(ok, "ok.json"));
  const std::string deep = std::string(30000, '[') + std::string(30000, ']');
  EXPECT_EQ(error_of([&] { parse_json_text(deep, "d.json"); }),
            "d.json:1:129: nested deeper than 128 levels of objects and arrays");
  // Brackets inside strings do not count.
  EXPECT_NO_THROW(parse_json_text("{\"a\": \"" + std::string(500, '[') + "\"}", "s.json"));
}

TEST(CoreNumbers, JsonMagnitudesAndIntegersAreBounded) {
  const Json j = Json::parse(R"({"big": 1e300, "tiny": 1e-300, "zero": 0.0, "two": 2.0, "huge": 18446744073709551615})");
  const JsonWhere w{"f.json", ""};
  EXPECT_EQ(error_of([&] { get_number(j, "big", w); }),
            "f.json: big: must be 0 or of magnitude >= 1e-30 and <= 1e+30, got 1e+300");
  EXPECT_NE(error_of([&] { get_number(j, "tiny", w); }).find("magnitude"), std::string::npos);
  EXPECT_EQ(get_number(j, "zero", w), 0.0);
  EXPECT_EQ(get_int(j, "two", w), 2);  // a JSON file has one number type
  {
    const StrictJsonIntegers strict;  // a Python dict's 2.0 was a float the user wrote
    EXPECT_EQ(error_of([&] { get_int(j, "two", w); }), "f.json: two: expected an integer, got the float 2.0");
  }
  EXPECT_EQ(get_int(j, "two", w), 2);
  EXPECT_NE(error_of([&] { get_int(j, "huge", w); }).find("<= 9007199254740992"), std::string::npos);
}

TEST(CoreNumbers, NonRegularAndHugeFilesAreRefused) {
  EXPECT_EQ(error_of([] { read_text_file("/dev/zero"); }),
            "/dev/zero: is not a regular file (a device, FIFO or socket); give a file");
  const auto dir = std::filesystem::temp_directory_path() / ("strata_numbers_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto fifo = dir / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { load_json_file(fifo.string()); }).find("is not a regular file"), std::string::npos);
  const auto huge = dir / "huge.json";
  std::ofstream(huge).close();
  std::filesystem::resize_file(huge, limits::kMaxInputFileBytes + 1);
  EXPECT_NE(error_of([&] { read_text_file(huge.string()); }).find("is too large"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(CoreNumbers, FormattersNeverPrintNanInfOrHundredsOfDigits) {
  EXPECT_EQ(format_bytes(std::numeric_limits<double>::infinity()), "(not finite) B");
  EXPECT_EQ(format_bytes(std::nan("")), "(not finite) B");
  EXPECT_LE(format_bytes(1e300).size(), 16u) << format_bytes(1e300);
  EXPECT_LE(format_count(1e300).size(), 12u) << format_count(1e300);
  EXPECT_EQ(format_seconds(std::numeric_limits<double>::infinity()), "(not finite) s");
  EXPECT_LE(format_flops(1e300).size(), 20u);
}
