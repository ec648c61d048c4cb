// tests/cost/test_dims: the one degree type — its completion (defaults, every rule with the offending degrees
// named), the rank order every module derives groups from, and that Strategy and StageView are Dims.
#include <gtest/gtest.h>

#include "helpers.hpp"
#include "strata/cost/dims.hpp"
#include "strata/cost/strategy.hpp"

using namespace strata;
using namespace strata::cost;

TEST(Dims, CompletionFillsTheDefaults) {
  Dims d{.dp = 0, .tp = 0, .pp = 0};
  complete_dims(d, 64, "c");
  EXPECT_EQ(d, (Dims{.dp = 64, .tp = 1, .pp = 1, .cp = 1}));
  Dims given_dp{.dp = 4, .tp = 2, .pp = 0};
  complete_dims(given_dp, 64, "c");
  EXPECT_EQ(given_dp.pp, 8);  // pp takes the rest when dp is given
  Dims with_cp{.dp = 0, .tp = 2, .pp = 2, .cp = 2};
  complete_dims(with_cp, 64, "c");
  EXPECT_EQ(with_cp.dp, 8);  // dp·cp·tp·pp = devices
  EXPECT_EQ(with_cp.world(), 64);
  EXPECT_EQ(with_cp.dp_cp(), 16);
}

TEST(Dims, EveryRuleNamesTheDegrees) {
  auto error = [](Dims d, int devices) { return cost_test::error_of([&] { complete_dims(d, devices, "dgx:1"); }); };
  EXPECT_NE(error({.dp = 3, .tp = 1, .pp = 1}, 8).find("dp·tp·pp = 3·1·1 = 3 but cluster dgx:1 has 8 devices"),
            std::string::npos);
  EXPECT_NE(error({.dp = 0, .tp = 3, .pp = 1}, 8).find("tp·pp = 3·1 does not divide the 8 devices of dgx:1"),
            std::string::npos);
  EXPECT_NE(error({.dp = 0, .tp = 1, .pp = 1, .cp = 3}, 8).find("cp = 3 does not divide the 8 devices"),
            std::string::npos);
  EXPECT_NE(error({.dp = 0, .tp = 1, .pp = 1, .cp = 0}, 8).find("cp >= 1"), std::string::npos);
  EXPECT_NE(error({.dp = -1, .tp = 1, .pp = 1}, 8).find("dp, tp and pp must be >= 1"), std::string::npos);
}

TEST(Dims, RankOrderIsTpThenCpThenDpThenPp) {
  const Dims d{.dp = 2, .tp = 4, .pp = 3, .cp = 2};
  EXPECT_EQ(d.rank(0, 0, 0), 0);
  EXPECT_EQ(d.rank(0, 0, 3), 3);         // tp fastest
  EXPECT_EQ(d.rank(0, 1, 0), 4);         // dp_rank 1 = (d 0, c 1): the next cp rank
  EXPECT_EQ(d.rank(0, 2, 0), 8);         // dp_rank 2 = (d 1, c 0)
  EXPECT_EQ(d.rank(1, 0, 0), 16);        // a stage holds dp·cp·tp = 16 ranks
  EXPECT_EQ(d.rank(2, 3, 3), d.world() - 1);
  // A complete strategy's device() reads its placement through the same order.
  const auto c = cost_test::cluster("dgx-a100:6");
  const auto m = model::zoo_model("llama3-8b");
  const Strategy s = complete_strategy(parse_strategy("dp=2,tp=4,pp=3,cp=2,gbs=64"), m, c);
  for (int st = 0; st < 3; ++st)
    for (int r = 0; r < 4; ++r)
      for (int t = 0; t < 4; ++t) EXPECT_EQ(s.device(st, r, t), s.placement[d.rank(st, r, t)]);
  // Strategy and every stage view are Dims: the degrees have one type.
  const Dims& as_dims = s;
  EXPECT_EQ(as_dims, d);
  for (const auto& v : stage_views(s, c)) EXPECT_EQ(static_cast<const Dims&>(v).dp_cp(), 4);
}
