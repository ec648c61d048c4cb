// tests/plan/test_zoo_plans: every zoo model plans on a few preset clusters — a plan, or the one "does not fit"
// error that names the smallest memory it needs; never another error or a crash (CNNs once hit the megatron
// baseline's tp = 2).
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "strata/core/error.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata {
namespace {

TEST(ZooPlans, EveryModelPlansOrSaysItDoesNotFit) {
  const auto catalog = hw::builtin_catalog();
  // Homogeneous NVLink, small PCIe GPUs, and a mixed cluster; gbs 32 divides every dp of these 4-16 GPUs.
  const char* clusters[] = {"dgx-a100:1", "g4dn.12xlarge:1", "p3.8xlarge:1+g4dn.12xlarge:1"};
  int planned = 0, not_fitting = 0;
  for (const auto& name : model::zoo_names()) {
    const model::Model m = model::zoo_model(name);
    for (const char* spec : clusters) {
      SCOPED_TRACE(name + " on " + spec);
      const hw::Cluster c = hw::resolve_cluster(spec, catalog);
      plan::PlanOptions opt;
      opt.global_batch = 32;
      opt.top_k = 1;
      opt.space = plan::Space::three_d;
      try {
        const plan::PlanResult r = plan::plan(m, c, opt);
        ASSERT_FALSE(r.top.empty());
        EXPECT_TRUE(r.top.front().estimate.fits);
        EXPECT_GT(r.top.front().estimate.iteration_time_s, 0);
        ++planned;
      } catch (const core::InputError& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("does not fit"), std::string::npos) << msg;
        EXPECT_NE(msg.find("smallest memory it needs is"), std::string::npos) << msg;
        ++not_fitting;
      }
    }
  }
  EXPECT_GT(planned, 0);
  EXPECT_GT(not_fitting, 0);  // the zoo holds models too big for 4 T4s (gpt3-175b)
}

TEST(HugeGlobalBatch, AboveTwoToThe53TokensIsRejectedWithTheLargestGbs) {
  const model::Model m = model::zoo_model("gpt3-175b");  // seq 2048
  const hw::Cluster c = hw::resolve_cluster("dgx-a100:16", hw::builtin_catalog());
  plan::PlanOptions opt;
  opt.global_batch = std::numeric_limits<std::int64_t>::max();
  try {
    plan::plan(m, c, opt);
    FAIL() << "expected an InputError";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the largest gbs for this model is 4398046511104"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(plan::check_global_batch(m, (std::int64_t{1} << 53) / 2048));
  EXPECT_THROW(plan::check_global_batch(m, (std::int64_t{1} << 53) / 2048 + 1), core::InputError);
}

TEST(HugeGlobalBatch, BillionSamplesPlansAndEveryMicroBatchDividesIt) {
  // Once an O(gbs) divisor loop per degree triple (minutes); now one O(sqrt(gbs)) factorisation.
  const model::Model m = model::zoo_model("gpt3-175b");
  const hw::Cluster c = hw::resolve_cluster("dgx-a100:16", hw::builtin_catalog());
  plan::PlanOptions opt;
  opt.global_batch = 1'000'000'000;
  opt.top_k = 3;
  opt.space = plan::Space::three_d;
  const plan::PlanResult r = plan::plan(m, c, opt);
  ASSERT_FALSE(r.top.empty());
  for (const auto& cand : r.top) {
    const auto& s = cand.strategy;
    EXPECT_EQ(opt.global_batch % (static_cast<std::int64_t>(s.dp) * s.micro_batch), 0) << cost::to_cli_string(s);
  }
}

}  // namespace
}  // namespace strata
