// tests/cli/test_engine_keys_cli: an explicit strategy key always wins over the engine's stack trait when the
// engine can run it (issue 46 item 3: torch.compile on --engine pytorch is elementwise=fused), and is refused
// naming the key and the engine when it cannot — never silently replaced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "cli_run.hpp"

namespace {

using strata_test::run_cli;

double iteration_s(const std::string& args) {
  const auto r = run_cli(args + " --json");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  return nlohmann::json::parse(r.out).at("iteration_time_s").get<double>();
}

TEST(EngineKeysCli, ExplicitFusedElementwiseIsCostedOnThePytorchEngine) {
  const std::string base = "estimate --model llama3-8b --cluster dgx-h100:1 --engine pytorch --strategy dp=8,mbs=1,gbs=8";
  const double eager = iteration_s(base);                        // the engine's trait: eager kernels
  const double fused = iteration_s(base + ",elementwise=fused");  // the user's torch.compile
  EXPECT_LT(fused, eager);
  EXPECT_DOUBLE_EQ(iteration_s(base + ",elementwise=eager"), eager);
}

TEST(EngineKeysCli, AKeyTheEngineCannotRunIsRefusedNamingKeyAndEngine) {
  const auto r = run_cli(
      "estimate --model gpt2-medium --cluster dgx-h100:1 --engine megatron --strategy dp=8,mbs=4,gbs=32,elementwise=eager");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--engine megatron cannot run elementwise=eager"), std::string::npos) << r.err;
}

}  // namespace
