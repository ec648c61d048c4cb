// Tests for cost/profile: exact lookup, mbs interpolation, roofline fallback, α–β fits, and errors.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "strata/cost/profile.hpp"

using namespace strata;
using namespace strata::cost;

namespace {
const char* kProfile = R"({"source": "test", "device": "cpu", "dtype": "fp32",
  "layers": [{"kind": "transformer", "hidden": 64, "heads": 4, "ffn": 256, "seq": 32, "tp": 1, "mbs": 1,
              "fwd_s": 1e-3, "bwd_s": 2e-3},
             {"kind": "transformer", "hidden": 64, "heads": 4, "ffn": 256, "seq": 32, "tp": 1, "mbs": 4,
              "fwd_s": 4e-3, "bwd_s": 8e-3}],
  "collectives": [{"op": "allreduce", "group_size": 2, "bytes": 1000, "time_s": 2e-3},
                  {"op": "allreduce", "group_size": 2, "bytes": 3000, "time_s": 4e-3}]})";
}

TEST(CostProfile, LookupInterpolatesAndFits) {
  const auto p = profile_from_json(nlohmann::json::parse(kProfile), "p.json");
  const auto k = model::LayerKind::transformer;
  EXPECT_DOUBLE_EQ(profile_layer_times(p, k, 64, 32, 1, 1)->fwd_s, 1e-3);
  EXPECT_NEAR(profile_layer_times(p, k, 64, 32, 1, 2)->fwd_s, 2e-3, 1e-15);  // linear in mbs
  EXPECT_NEAR(profile_layer_times(p, k, 64, 32, 1, 8)->bwd_s, 16e-3, 1e-15);  // proportional beyond the range
  EXPECT_FALSE(profile_layer_times(p, k, 64, 32, 2, 1).has_value());          // other tp: roofline
  // α = 1 ms, β = 1 µs/byte from the two rows.
  EXPECT_NEAR(*profile_collective_time(p, Collective::allreduce, 2, 2000), 3e-3, 1e-12);
  EXPECT_FALSE(profile_collective_time(p, Collective::allgather, 2, 10).has_value());
}

TEST(CostProfile, OverridesTheRooflineInEstimates) {
  const auto p = profile_from_json(nlohmann::json::parse(kProfile), "p.json");
  const auto m = model::zoo_model("tiny-gpt");  // 4 blocks of h 64, seq 32
  const auto c = cost_test::cluster("cpu-local");
  CostOptions opt;
  opt.profile = &p;
  const auto with = cost_test::run(m, c, "dp=1,pp=4,gbs=4,dtype=fp32", opt);
  const auto without = cost_test::run(m, c, "dp=1,pp=4,gbs=4,dtype=fp32");
  EXPECT_NE(with.iteration_time_s, without.iteration_time_s);
  // A middle stage with one block costs exactly the measured 1 ms + 2 ms.
  EXPECT_NEAR(with.stages[1].compute_s, 3e-3, 1e-12);
}

TEST(CostProfile, ErrorsNameFileAndField) {
  EXPECT_NE(cost_test::error_of([] {
              profile_from_json(nlohmann::json::parse(R"({"layers": [{"kind": "transformer", "hidden": 64}]})"), "p.json");
            }).find("p.json: layers[0]"),
            std::string::npos);
  EXPECT_NE(cost_test::error_of([] {
              profile_from_json(nlohmann::json::parse(R"({"collectives": [{"op": "gossip", "group_size": 2,
                "bytes": 1, "time_s": 1}]})"), "p.json");
            }).find("unknown collective"),
            std::string::npos);
}
