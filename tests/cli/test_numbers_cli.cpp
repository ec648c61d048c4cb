// tests/cli/test_numbers_cli: integer flags read one way everywhere (issue 49 class 3) — "010" is ten, not octal
// eight; hex and fractions stay refused with the bounds named.
#include <gtest/gtest.h>

#include <string>

#include "cli_run.hpp"

namespace {

using strata_test::run_cli;

TEST(NumbersCli, LeadingZerosAreDecimal) {
  const auto r = run_cli("plan --model tiny-gpt --cluster dgx-a100:1 --gbs 8 --seq 010 --top 1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(seq 10)"), std::string::npos) << r.out.substr(0, 200);
}

TEST(NumbersCli, HexAndFractionsAreRefusedWithTheirBounds) {
  for (const char* bad : {"0x10", "8.5", "12abc"}) {
    const auto r = run_cli(std::string("plan --model tiny-gpt --cluster dgx-a100:1 --gbs 8 --seq ") + bad);
    EXPECT_EQ(r.code, 2) << bad;
    EXPECT_NE(r.err.find("must be an integer >= 1 and <= 16777216"), std::string::npos) << r.err;
  }
}

}  // namespace
