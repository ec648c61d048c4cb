// Tests for cost/host: the shared-CPU-host bound (Σ busy / cores + max blocking) against hand-computed values from
// a profile whose every layer is measured, when it applies and when not, its monotonicity in cores, and the
// profile's compute-only rows getting their TP collectives added (includes_tp_comm).
#include <gtest/gtest.h>

#include <string>

#include "helpers.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/host.hpp"
#include "strata/cost/profile.hpp"

using namespace strata;
using namespace strata::cost;

namespace {

// tiny-gpt (embedding, 4 blocks of h 64 / seq 32, head): every layer measured at tp 1 and 2, mbs 1.
std::string profile_text(bool includes_tp_comm) {
  const std::string inc = includes_tp_comm ? "true" : "false";
  std::string rows;
  for (const char* tp : {"1", "2"}) {
    rows += std::string(rows.empty() ? "" : ",") +
            R"({"kind": "embedding", "hidden": 64, "seq": 32, "mbs": 1, "fwd_s": 1e-4, "bwd_s": 1e-4, "tp": )" + tp +
            R"(, "includes_tp_comm": )" + inc + "}," +
            R"({"kind": "transformer", "hidden": 64, "seq": 32, "mbs": 1, "fwd_s": 1e-3, "bwd_s": 2e-3, "tp": )" +
            tp + R"(, "includes_tp_comm": )" + inc + "}," +
            R"({"kind": "lm_head", "hidden": 64, "seq": 32, "mbs": 1, "fwd_s": 5e-4, "bwd_s": 1e-3, "tp": )" + tp +
            R"(, "includes_tp_comm": )" + inc + "}";
  }
  return R"({"source": "test", "layers": [)" + rows + R"(],
    "collectives": [{"op": "allreduce", "group_size": 2, "bytes": 1000, "time_s": 2e-3},
                    {"op": "allreduce", "group_size": 2, "bytes": 3000, "time_s": 4e-3}]})";
}

// One node of `devices` cpu ranks sharing `cores` cores (0 = field absent).
hw::Cluster host(int devices, int cores) {
  std::string node = R"({"gpu": "cpu", "intra_link": "loopback", "nics": 1, "nic_link": "loopback", "count": 1,
                         "gpus": )" + std::to_string(devices);
  if (cores > 0) node += R"(, "cpu_cores": )" + std::to_string(cores);
  return hw::cluster_from_json(core::Json::parse(R"({"nodes": [)" + node + "}]}"), "host.json", hw::builtin_catalog());
}

struct Fixture {
  model::Model m = model::zoo_model("tiny-gpt");
  Profile p = profile_from_json(nlohmann::json::parse(profile_text(false)), "p.json");
  CostOptions opt() const {
    CostOptions o;
    o.profile = &p;
    return o;
  }
};

// Compute of one micro-batch through the whole model: 1e-4·2 + 4·3e-3 + 1.5e-3.
constexpr double kModelComputeS = 2e-4 + 4 * 3e-3 + 1.5e-3;

}  // namespace

TEST(CostHost, DataParallelBoundIsTotalWorkOverCores) {
  const Fixture f;
  const auto e = cost_test::run(f.m, host(4, 2), "dp=4,gbs=8,mbs=1,dtype=fp32", f.opt());
  ASSERT_EQ(e.stages.size(), 1u);
  const auto& st = e.stages[0];
  EXPECT_NEAR(st.compute_s, kModelComputeS, 1e-12);
  ASSERT_EQ(e.host.node, 0);
  EXPECT_EQ(e.host.ranks, 4);
  EXPECT_EQ(e.host.cores, 2);
  // Each rank: 2 micro-batches + its optimizer step; the exposed DP sync is the only wait.
  EXPECT_NEAR(e.host.busy_s, 4 * (2 * kModelComputeS + st.optimizer_s), 1e-12);
  EXPECT_NEAR(e.host.blocking_s, st.dp_comm_s, 1e-15);
  EXPECT_NEAR(e.host.bound_s, e.host.busy_s / 2 + st.dp_comm_s, 1e-12);
  // Four ranks on two cores: twice the compute of one dedicated rank, so the bound binds.
  EXPECT_GT(e.host.bound_s, e.pipeline_time_s);
  EXPECT_DOUBLE_EQ(e.iteration_time_s, e.host.bound_s);
}

TEST(CostHost, PipelineBubblesAreFilledByOtherRanks) {
  const Fixture f;
  // 4 stages (embedding+block, block, block, block+head), 8 micro-batches: the bound is Σ work / cores, whatever
  // the schedule's bubbles.
  const auto gpipe = cost_test::run(f.m, host(4, 2), "pp=4,dp=1,gbs=8,mbs=1,schedule=gpipe,dtype=fp32", f.opt());
  double work = 0;
  for (const auto& st : gpipe.stages) work += 8 * st.compute_s + st.optimizer_s;
  EXPECT_NEAR(work, 8 * kModelComputeS + [&] {
    double opt = 0;
    for (const auto& st : gpipe.stages) opt += st.optimizer_s;
    return opt;
  }(), 1e-12);
  EXPECT_NEAR(gpipe.host.busy_s, work, 1e-12);
  EXPECT_DOUBLE_EQ(gpipe.host.blocking_s, 0.0);  // no tp, no dp
  EXPECT_NEAR(gpipe.host.bound_s, work / 2, 1e-12);
  EXPECT_DOUBLE_EQ(gpipe.iteration_time_s, std::max(gpipe.pipeline_time_s, gpipe.host.bound_s));
  const auto ofob = cost_test::run(f.m, host(4, 2), "pp=4,dp=1,gbs=8,mbs=1,schedule=1f1b,dtype=fp32", f.opt());
  EXPECT_NEAR(ofob.host.bound_s, gpipe.host.bound_s, 1e-12);  // same work, same cores
}

TEST(CostHost, NoBoundWithEnoughCoresOrNoCoreCount) {
  const Fixture f;
  for (const int cores : {0, 4, 8}) {
    const auto e = cost_test::run(f.m, host(4, cores), "dp=4,gbs=8,mbs=1,dtype=fp32", f.opt());
    EXPECT_EQ(e.host.node, -1) << cores;
    EXPECT_DOUBLE_EQ(e.host.bound_s, 0.0) << cores;
    EXPECT_DOUBLE_EQ(e.iteration_time_s, e.pipeline_time_s) << cores;
  }
  // GPU clusters never set cpu_cores.
  const auto g = cost_test::run(f.m, cost_test::cluster("dgx-a100:1"), "dp=8,gbs=8,mbs=1,dtype=fp32", f.opt());
  EXPECT_EQ(g.host.node, -1);
}

TEST(CostHost, FewerCoresNeverFaster) {
  const Fixture f;
  for (const char* s : {"dp=4,gbs=8,mbs=1", "pp=4,dp=1,gbs=8,mbs=1", "dp=2,tp=2,gbs=8,mbs=1"}) {
    double previous = 0;
    for (const int cores : {4, 3, 2, 1}) {
      const auto e = cost_test::run(f.m, host(4, cores), std::string(s) + ",dtype=fp32", f.opt());
      EXPECT_GE(e.iteration_time_s, previous) << s << " cores " << cores;
      previous = e.iteration_time_s;
    }
  }
}

TEST(CostHost, TensorParallelWaitsAddInSeries) {
  const Fixture f;
  const auto e = cost_test::run(f.m, host(4, 2), "dp=2,tp=2,gbs=8,mbs=1,dtype=fp32", f.opt());
  const auto& st = e.stages[0];
  // Compute-only rows: the 2-rank all-reduces come from the collective rows (α 1 ms, β 1 µs/B), not zero.
  EXPECT_GT(st.tp_comm_s, 1e-3);
  EXPECT_NEAR(e.host.blocking_s, 4 * st.tp_comm_s + st.dp_comm_s, 1e-12);  // 4 micro-batches per replica
  EXPECT_NEAR(e.host.bound_s, e.host.busy_s / 2 + e.host.blocking_s, 1e-12);
}

TEST(CostProfile, RowsWithTpCommLeaveNothingToAdd) {
  const Fixture f;
  const Profile with = profile_from_json(nlohmann::json::parse(profile_text(true)), "p.json");
  CostOptions o;
  o.profile = &with;
  const auto e = cost_test::run(f.m, host(2, 0), "tp=2,dp=1,gbs=2,mbs=1,dtype=fp32", o);
  EXPECT_DOUBLE_EQ(e.stages[0].tp_comm_s, 0.0);
  EXPECT_NEAR(e.stages[0].compute_s, kModelComputeS, 1e-12);
  const auto without = cost_test::run(f.m, host(2, 0), "tp=2,dp=1,gbs=2,mbs=1,dtype=fp32", f.opt());
  EXPECT_GT(without.stages[0].tp_comm_s, 0.0);
  EXPECT_NEAR(without.stages[0].time_s, e.stages[0].time_s + without.stages[0].tp_comm_s, 1e-12);
  EXPECT_NE(cost_test::error_of([] {
              profile_from_json(nlohmann::json::parse(R"({"layers": [{"kind": "transformer", "hidden": 64, "seq": 32,
                "fwd_s": 1, "bwd_s": 1, "includes_tp_comm": "yes"}]})"), "p.json");
            }).find("p.json: layers[0].includes_tp_comm"),
            std::string::npos);
}
