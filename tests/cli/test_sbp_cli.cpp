// tests/cli/test_sbp_cli: end-to-end `strata sbp` and `strata plan --space sbp` — the JSON is byte-identical
// across runs, names every layer's SBP distribution and boxing, agrees with the table, and the 0.35B model on
// AutoDDL's GCP cluster bridges to a dp=32 strategy.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "cli_run.hpp"

namespace {

const std::string kSrc = STRATA_SOURCE_DIR;

}  // namespace

TEST(SbpCli, MlpJsonIsDeterministicAndExplainsEveryLayer) {
  const std::string args = "sbp --mlp 32768,16384,4096,2048,512 --cluster " + kSrc +
                           "/examples/cluster_piz_daint.json --json -";
  const auto a = strata_test::run_cli(args), b = strata_test::run_cli(args);
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  const auto j = nlohmann::json::parse(a.out);
  ASSERT_TRUE(j["search"]["found"].get<bool>());
  EXPECT_EQ(j["search"]["algorithm"], "exhaustive");  // 28^4 < 2e6
  const auto& layers = j["best"]["layers"];
  ASSERT_EQ(layers.size(), 4u);
  for (const auto& l : layers) {
    EXPECT_EQ(l["input_sbp"].get<std::string>().rfind("(S0:", 0), 0u);
    EXPECT_TRUE(l.contains("boxing_forward"));
  }
  EXPECT_NE(a.err.find("Best SBP distribution per layer"), std::string::npos);  // the table went to stderr
}

TEST(SbpCli, PlanSpaceSbpBridgesDataParallelToAStrategy) {
  const auto r = strata_test::run_cli("plan --space sbp --model gpt2-medium --cluster " + kSrc +
                                      "/examples/cluster_autoddl_gcp.json --gbs 2048");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("best = Megatron TP+DP: strategy dp=32,tp=1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("strata estimate"), std::string::npos);
}

TEST(SbpCli, HelpTeaches) {
  const auto r = strata_test::run_cli("sbp --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--mlp"), std::string::npos);
  EXPECT_NE(r.out.find("Example:"), std::string::npos);
}
