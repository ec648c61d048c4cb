// tests/plan/test_sbp_search: AutoDDL's search (seed_004 §4.5–4.6) — exhaustive = coordinate descent (= MH) on
// small cases, the table sums = a walk along the chain, determinism, AutoDDL's GCP experiments (0.35B → DP; 5.8B →
// less communication than Megatron, DP out of memory), the bridge to cost::Strategy, and the bad-input errors.
#include <gtest/gtest.h>

#include <cmath>

#include "cost/sbp_fixtures.hpp"
#include "../error_of.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/plan/sbp_search.hpp"

namespace strata::plan {
namespace {

using strata_test::error_of;

model::Model model_file(const std::string& rel) {
  return model::resolve_model(std::string(STRATA_SOURCE_DIR) + "/" + rel);
}

SbpSearchResult run(const SbpProblem& p, const cost::SbpComm& comm, SbpAlgorithm a, SbpObjective o) {
  SbpSearchOptions opt;
  opt.algorithm = a;
  opt.objective = o;
  return search_sbp(p, comm, opt);
}

}  // namespace

TEST(SbpSearch, HeuristicsMatchExhaustiveOnSmallCases) {

  struct Case {
    SbpProblem p;
    hw::Cluster c;
  };
  std::vector<Case> cases;
  cases.push_back({mlp_problem({32768, 16384, 4096, 2048, 512}, 32768), sbp_test::piz_daint(16)});
  const auto p4d = hw::resolve_cluster("p4d.24xlarge:2", sbp_test::catalog());
  const auto dgx = hw::resolve_cluster("dgx-a100:1", sbp_test::catalog());
  cases.push_back({mlp_problem({4096, 16384, 4096}, 8192), p4d});
  cases.push_back({transformer_problem(model::zoo_model("gpt2-small"), dgx, 64, 512, hw::Dtype::bf16), dgx});
  for (auto& k : cases) {
    const auto comm = cost::make_sbp_comm(k.c);
    for (auto o : {SbpObjective::time, SbpObjective::bytes}) {
      const auto ex = run(k.p, comm, SbpAlgorithm::exhaustive, o);
      const auto cd = run(k.p, comm, SbpAlgorithm::coordinate_descent, o);
      const auto mh = run(k.p, comm, SbpAlgorithm::metropolis, o);
      ASSERT_TRUE(ex.found && cd.found && mh.found) << k.p.name;
      EXPECT_EQ(ex.evaluated, static_cast<std::int64_t>(std::llround(ex.space_size)));
      const auto key = [&](const SbpSearchResult& r) {
        return o == SbpObjective::time ? r.cost.comm_time_s() : r.cost.comm_bytes();
      };
      EXPECT_NEAR(key(cd), key(ex), 1e-9 * key(ex)) << k.p.name;
      EXPECT_NEAR(key(mh), key(ex), 1e-9 * key(ex)) << k.p.name << ", objective " << to_string(o);
      if (ex.space_size > 1e5) EXPECT_LT(cd.evaluated, ex.evaluated);
      // The tables the search sums equal a walk along the chain.
      const auto walk = evaluate_sbp(k.p, comm, ex.choice);
      EXPECT_NEAR(walk.comm_time_s(), ex.cost.comm_time_s(), 1e-9 * ex.cost.comm_time_s() + 1e-15);
      EXPECT_NEAR(walk.memory_bytes, ex.cost.memory_bytes, 1e-6 * ex.cost.memory_bytes);
    }
  }
}

TEST(SbpSearch, DeterministicForASeed) {
  const auto c = sbp_test::gcp();
  const auto comm = cost::make_sbp_comm(c);
  const auto p = transformer_problem(model_file("examples/model_autoddl_5p8b.json"), c, 32, 2048, hw::Dtype::bf16);
  for (auto a : {SbpAlgorithm::coordinate_descent, SbpAlgorithm::metropolis}) {
    const auto x = run(p, comm, a, SbpObjective::time), y = run(p, comm, a, SbpObjective::time);
    EXPECT_EQ(x.choice, y.choice);
    EXPECT_EQ(core::dump_json(sbp_to_json(p, comm, x, {})), core::dump_json(sbp_to_json(p, comm, y, {})));
  }
}

// AutoDDL §5.3.3 on its GCP cluster (2 × 16 A100 40 GB, 100 Gbit/s): the 0.35B model (24 × 1024, 16 heads) → DP.
TEST(SbpSearch, SmallModelOnGcpIsDataParallel) {
  const auto c = sbp_test::gcp();
  const auto comm = cost::make_sbp_comm(c);
  const auto m = model::zoo_model("gpt2-medium");
  const auto p = transformer_problem(m, c, 32, 2048, hw::Dtype::bf16);
  const auto r = search_sbp(p, comm);
  ASSERT_TRUE(r.found);
  const auto deg = megatron_degrees(p, comm, r.choice);
  ASSERT_TRUE(deg.has_value());
  EXPECT_EQ(*deg, std::make_pair(32, 1));
  for (const auto& l : r.choice) EXPECT_EQ(cost::classify(l), cost::LayoutClass::dp);
  // Bridge: the same strategy strata costs, simulates, exports and runs.
  const auto s = sbp_to_strategy(p, comm, m, r.choice);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->dp, 32);
  EXPECT_EQ(s->tp, 1);
  EXPECT_EQ(s->micro_batch, 1);
  EXPECT_TRUE(cost::estimate(m, c, *s).fits);
}

// The 5.8B model (28 × 4096, 32 heads): DP does not fit 40 GB; the search moves less than the best Megatron TP+DP
// (the paper: −21.6 % communication).
TEST(SbpSearch, LargeModelOnGcpBeatsMegatron) {
  const auto c = sbp_test::gcp();
  const auto comm = cost::make_sbp_comm(c);
  const auto m = model_file("examples/model_autoddl_5p8b.json");
  const auto p = transformer_problem(m, c, 32, 2048, hw::Dtype::bf16);
  EXPECT_EQ(p.chain.size(), 28u * 4 + 1);
  const auto r = search_sbp(p, comm);
  const auto mega = megatron_baseline(p, comm, SbpObjective::time);
  ASSERT_TRUE(r.found && mega.found);
  EXPECT_FALSE(dp_baseline(p, comm).found);
  EXPECT_LT(r.cost.comm_time_s(), 0.95 * mega.cost.comm_time_s());
  EXPECT_LT(r.cost.comm_bytes(), mega.cost.comm_bytes());
  EXPECT_LE(r.cost.memory_bytes, p.memory_limit_bytes);
  // Megatron's layout bridges to a strategy strata estimates; a per-layer mix of degrees does not.
  const auto s = sbp_to_strategy(p, comm, m, mega.choice);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->dp * s->tp, 32);
  EXPECT_EQ(s->tp, mega.tp);
  const cost::MatmulLayout layout_3d{{cost::MeshAxis{1, 4}, cost::MeshAxis{1, 4}, cost::MeshAxis{2, 1}}};
  const std::vector<cost::MatmulLayout> cube(p.layers.size(), layout_3d);
  EXPECT_FALSE(sbp_to_strategy(p, comm, m, cube).has_value());
}

// AutoDDL §5.2.3's 6.8B transformer on 64 single-GPU nodes (8 × 8192, 64 heads, 1024 × 1024 tokens, fp32):
// coordinate descent finds the exhaustive optimum (28^5 = 1.7e7 strategies), Megatron's best is the paper's
// DP4×MP16, and the search (2.5D layouts) moves less than half of it.
TEST(SbpSearch, PizDaintWideModelCoordinateDescentIsExact) {
  model::TransformerConfig cfg;
  cfg.name = "autoddl-6.8b";
  cfg.layers = 8, cfg.hidden = 8192, cfg.heads = 64, cfg.vocab = 51200, cfg.seq = 1024;
  const auto m = model::build_transformer(cfg);
  const auto c = sbp_test::piz_daint(64);
  const auto comm = cost::make_sbp_comm(c);
  const auto p = transformer_problem(m, c, 16, 1024, hw::Dtype::fp32);
  const auto ex = run(p, comm, SbpAlgorithm::exhaustive, SbpObjective::time);
  const auto cd = run(p, comm, SbpAlgorithm::coordinate_descent, SbpObjective::time);
  ASSERT_TRUE(ex.found && cd.found);
  EXPECT_NEAR(cd.cost.comm_time_s(), ex.cost.comm_time_s(), 1e-9 * ex.cost.comm_time_s());
  const auto mega = megatron_baseline(p, comm, SbpObjective::time);
  ASSERT_TRUE(mega.found);
  EXPECT_EQ(mega.dp, 4);
  EXPECT_EQ(mega.tp, 16);
  EXPECT_LT(ex.cost.comm_time_s(), 0.5 * mega.cost.comm_time_s());
}

TEST(SbpSearch, MemoryLimitAndReplicationCap) {
  const auto c = sbp_test::piz_daint(16);
  const auto comm = cost::make_sbp_comm(c);
  auto p = mlp_problem({8192, 8192, 8192}, 4096);
  p.max_p0 = 2;
  const auto r = search_sbp(p, comm);
  ASSERT_TRUE(r.found);
  for (const auto& l : r.choice) EXPECT_LE(l.p(0), 2);
  p.memory_limit_bytes = 1;
  EXPECT_FALSE(search_sbp(p, comm).found);
}

TEST(SbpSearch, BadInputsAreOneLineErrors) {
  const auto c = sbp_test::gcp();
  const auto comm = cost::make_sbp_comm(c);
  EXPECT_NE(error_of([] { mlp_problem({512}, 64); }).find("at least 2 widths"), std::string::npos);
  EXPECT_NE(error_of([] { mlp_problem({512, 0}, 64); }).find("width 1"), std::string::npos);
  EXPECT_NE(error_of([] { mlp_problem({512, 512}, 0); }).find("rows"), std::string::npos);
  EXPECT_NE(error_of([&] { transformer_problem(model::zoo_model("gpt2-medium"), c, 32, 100, hw::Dtype::bf16); })
                .find("multiple of --mbs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { transformer_problem(model::zoo_model("resnet50"), c, 32, 64, hw::Dtype::bf16); })
                .find("decoder-only"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_sbp_algorithm("greedy", "sbp: --search"); }).find("valid: auto"), std::string::npos);
  EXPECT_NE(error_of([] { parse_sbp_objective("money", "sbp: --objective"); }).find("valid: time"), std::string::npos);
  const auto big = transformer_problem(model_file("examples/model_autoddl_5p8b.json"), c, 32, 2048, hw::Dtype::bf16);
  auto deep = big;
  for (int i = 0; i < 2; ++i) {  // 45^7 > 1e9 strategies
    deep.layers.push_back(deep.layers.front());
    deep.chain.push_back(static_cast<int>(deep.layers.size()) - 1);
  }
  SbpSearchOptions o;
  o.algorithm = SbpAlgorithm::exhaustive;
  EXPECT_NE(error_of([&] { search_sbp(deep, comm, o); }).find("limit 1e9"), std::string::npos);
}

}  // namespace strata::plan
