// tests/cli/test_sim_scale_cli: `strata simulate` aggregated (one representative per class of identical dp
// replicas, the default) against `--full` end to end: the same JSON figures per device, simulated_replicas, and
// the readable line saying how many replicas were played out (docs/simulator.md §Scale).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "cli_run.hpp"

namespace {

const char* kArgs = "--model megatron-1.7b --cluster dgx-a100:4 --strategy \"dp=4,tp=8,pp=1,mbs=1,gbs=32,zero=1\"";

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-300}); }

}  // namespace

TEST(SimScaleCli, AggregatedAndFullPrintTheSameFigures) {
  const auto agg = strata_test::run_cli(std::string("simulate ") + kArgs + " --json");
  const auto full = strata_test::run_cli(std::string("simulate ") + kArgs + " --json --full");
  ASSERT_EQ(agg.code, 0) << agg.err;
  ASSERT_EQ(full.code, 0) << full.err;
  const auto a = nlohmann::json::parse(agg.out), f = nlohmann::json::parse(full.out);
  EXPECT_EQ(a["simulated_replicas"], 1);
  EXPECT_EQ(f["simulated_replicas"], 4);
  EXPECT_LT(a["tasks"].get<double>(), f["tasks"].get<double>());
  EXPECT_LT(rel(a["iteration_time_s"], f["iteration_time_s"]), 1e-9);
  ASSERT_EQ(a["devices"].size(), 32u);
  ASSERT_EQ(a["devices"].size(), f["devices"].size());
  for (std::size_t i = 0; i < a["devices"].size(); ++i) {
    const auto &da = a["devices"][i], &df = f["devices"][i];
    EXPECT_EQ(da["device"], df["device"]);
    EXPECT_EQ(da["dp_rank"], df["dp_rank"]);
    EXPECT_LT(rel(da["busy_s"], df["busy_s"]), 1e-9) << i;
    EXPECT_LT(rel(da["peak_memory_bytes"], df["peak_memory_bytes"]), 1e-9) << i;
  }
  const auto human = strata_test::run_cli(std::string("simulate ") + kArgs);
  ASSERT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("1 of 4 dp replicas played out"), std::string::npos) << human.out;
}
