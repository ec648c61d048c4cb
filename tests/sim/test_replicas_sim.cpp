// Tests for the aggregated simulation (sim/replicas, issue 22; docs/simulator.md §Scale): one representative per
// class of identical dp replicas agrees with playing out every replica (--full) on fixed and random small
// clusters — iteration time, per-device busy/idle, bubble and peak memory, link contention — and falls back to
// every replica (saying why) where it cannot represent the run.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <random>

#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/sim/from_cost.hpp"

using namespace strata;

namespace {

const hw::Catalog& catalog() {
  static const hw::Catalog c = hw::builtin_catalog();
  return c;
}

// Relative tolerance of aggregated vs full (docs/simulator.md §Scale): the same flows and tasks in the same
// order, so only floating-point re-association of the engine's rate updates differs.
constexpr double kTol = 1e-9;

double rel(double a, double b) { return std::abs(a - b) / std::max({std::abs(a), std::abs(b), 1e-300}); }

struct Pair {
  sim::Simulation agg, full;
};

Pair both(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  sim::CostSimOptions full;
  full.full = true;
  return {sim::simulate(m, c, s), sim::simulate(m, c, s, full)};
}

// Every figure a report shows, aggregated vs full.
void expect_same(const Pair& p, const std::string& what) {
  const auto &a = p.agg.result, &f = p.full.result;
  EXPECT_LT(rel(a.iteration_time_s, f.iteration_time_s), kTol) << what << ": " << a.iteration_time_s << " vs "
                                                                << f.iteration_time_s;
  EXPECT_LT(rel(a.makespan_s, f.makespan_s), kTol) << what;
  EXPECT_LT(rel(a.bubble_fraction, f.bubble_fraction), 1e-7) << what;
  EXPECT_NEAR(a.flow_contention_s, f.flow_contention_s, kTol * f.makespan_s * (1 + f.workers.size())) << what;
  EXPECT_NEAR(a.overlap_extra_s, f.overlap_extra_s, kTol * f.makespan_s * (1 + f.workers.size())) << what;
  EXPECT_EQ(p.agg.fits, p.full.fits) << what;
  ASSERT_EQ(a.workers.size(), f.workers.size()) << what;
  ASSERT_EQ(p.agg.input.workers.size(), p.full.input.workers.size()) << what;
  for (std::size_t w = 0; w < f.workers.size(); ++w) {
    EXPECT_EQ(p.agg.input.workers[w].devices, p.full.input.workers[w].devices) << what << " worker " << w;
    EXPECT_LT(rel(a.workers[w].busy_s, f.workers[w].busy_s), kTol) << what << " worker " << w;
    EXPECT_LT(rel(a.workers[w].peak_memory_bytes, f.workers[w].peak_memory_bytes), kTol) << what << " worker " << w;
    EXPECT_NEAR(a.workers[w].peak_memory_time_s, f.workers[w].peak_memory_time_s, kTol * f.makespan_s)
        << what << " worker " << w;
  }
}

}  // namespace

TEST(SimReplicas, DgxA100AggregatesAndAgreesWithFull) {
  const auto m = model::zoo_model("megatron-3.6b");
  const auto c = hw::resolve_cluster("dgx-a100:4", catalog());
  // Classes: a replica per node (tp 8) → 1; two replicas per node (tp 4) → 2, local indices 0–3 (ring hop out
  // inside the node, in over the NIC) and 4–7; four per node (tp 2, pp over nodes) → 4, one per local index pair.
  const std::pair<const char*, int> cases[] = {{"dp=4,tp=8,pp=1,mbs=1,gbs=32,schedule=1f1b", 1},
                                               {"dp=2,tp=8,pp=2,mbs=1,gbs=32,schedule=1f1b,zero=1", 1},
                                               {"dp=2,tp=8,pp=2,mbs=1,gbs=32,v=2,schedule=interleaved,zero=3", 1},
                                               {"dp=2,tp=8,pp=2,mbs=1,gbs=16,schedule=2bw,recompute=full", 1},
                                               {"dp=8,tp=4,pp=1,mbs=1,gbs=64,schedule=1f1b,zero=2", 2},
                                               {"dp=4,tp=2,pp=4,mbs=2,gbs=64,schedule=gpipe", 4}};
  for (const auto& [text, classes] : cases) {
    const auto s = cost::complete_strategy(cost::parse_strategy(text), m, c);
    const Pair p = both(m, c, s);
    EXPECT_EQ(p.agg.simulated_replicas, classes) << text;
    EXPECT_EQ(p.full.simulated_replicas, s.dp) << text;
    if (classes < s.dp) EXPECT_LT(p.agg.result.tasks, p.full.result.tasks) << text;
    expect_same(p, text);
  }
}

TEST(SimReplicas, HeterogeneousClusterHasOneClassPerGpuType) {
  const auto m = model::zoo_model("megatron-1.7b");
  const auto c = hw::resolve_cluster("dgx-a100:2+dgx-h100:2", catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("dp=4,tp=8,pp=1,mbs=1,gbs=32,schedule=1f1b"), m, c);
  const Pair p = both(m, c, s);
  EXPECT_EQ(p.agg.simulated_replicas, 2);  // the A100 nodes and the H100 nodes
  expect_same(p, "a100+h100");
  // The H100 replicas run faster: the two classes keep their own busy times.
  EXPECT_GT(p.agg.result.workers[0].busy_s, p.agg.result.workers[3].busy_s);
}

TEST(SimReplicas, FallsBackWhereItCannotRepresentTheRun) {
  const auto m = model::zoo_model("megatron-1.7b");
  // p3.8xlarge: 4 GPUs share one NIC, so tp = 1 replicas on one node share it (their sends contend).
  const auto c = hw::resolve_cluster("p3.8xlarge:2", catalog());
  const auto s = cost::complete_strategy(cost::parse_strategy("dp=4,tp=1,pp=2,mbs=1,gbs=16,schedule=1f1b"), m, c);
  const auto r = sim::simulate(m, c, s);
  EXPECT_EQ(r.simulated_replicas, s.dp);
  EXPECT_NE(r.full_reason.find("NIC"), std::string::npos) << r.full_reason;
  // A trace needs every device's timeline: keep_timeline plays out every replica.
  const auto c2 = hw::resolve_cluster("dgx-a100:2", catalog());
  const auto s2 = cost::complete_strategy(cost::parse_strategy("dp=2,tp=8,pp=1,mbs=1,gbs=8"), m, c2);
  sim::SimOptions so;
  so.keep_timeline = true;
  EXPECT_EQ(sim::simulate(m, c2, s2, {}, so).simulated_replicas, 2);
  EXPECT_EQ(sim::simulate(m, c2, s2).simulated_replicas, 1);
}

namespace {

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

}  // namespace

// Random small clusters (1–2 node types, up to 6 nodes, random link bandwidths) and strategies: aggregated ==
// full wherever the aggregated mode applies; count that it applied often enough to mean something.
TEST(SimReplicas, RandomClustersAgreeWithFull) {
  static const char* models[] = {"gpt2-medium", "megatron-1.7b", "bert-large"};
  static const char* nodes[] = {"dgx-a100", "dgx-h100", "p4d.24xlarge", "p3.16xlarge"};
  static const char* scheds[] = {"gpipe", "1f1b", "interleaved", "pipedream", "2bw"};
  static const char* recs[] = {"none", "selective", "full"};
  std::mt19937_64 rng(22);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  int compared = 0, aggregated = 0;
  for (int tries = 0; tries < 1000 && compared < 150; ++tries) {
    const auto m = model::zoo_model(models[pick(3)]);
    const int a = pick(4), b = pick(4), na = 1 + pick(3), nb = pick(3);
    std::string spec = fmt::format("{}:{}", nodes[a], na);
    if (nb > 0 && b != a) spec += fmt::format("+{}:{}", nodes[b], nb);
    auto c = hw::resolve_cluster(spec, catalog());
    std::uniform_real_distribution<double> scale(0.25, 2.0);
    const double intra = scale(rng), nic = scale(rng);  // one factor per cluster: node kinds stay alike
    for (auto& n : c.nodes) {
      n.intra.bw_bytes_per_s *= intra;
      n.nic.bw_bytes_per_s *= nic;
    }
    const auto ds = divisors(c.num_devices());
    const int tp = std::min(ds[pick(static_cast<int>(ds.size()))], 8);
    const auto ps = divisors(c.num_devices() / tp);
    const int pp = ps[pick(static_cast<int>(ps.size()))];
    const int dp = c.num_devices() / tp / pp;
    if (dp < 2) continue;
    const std::string sched = scheds[pick(5)];
    const int mb = pp * (1 + pick(3));
    const std::string text = fmt::format("dp={},tp={},pp={},mbs=1,gbs={},v={},schedule={},zero={},recompute={}", dp,
                                         tp, pp, mb * dp, sched == "interleaved" ? 2 : 1, sched, pick(4), recs[pick(3)]);
    cost::Strategy s;
    try {
      s = cost::complete_strategy(cost::parse_strategy(text), m, c);
    } catch (const std::exception&) {
      continue;
    }
    const Pair p = both(m, c, s);
    ++compared;
    if (p.agg.simulated_replicas < dp) ++aggregated;
    expect_same(p, spec + " " + text);
  }
  fmt::print("{} random plans compared, {} aggregated (fewer replicas played out than dp)\n", compared, aggregated);
  EXPECT_GE(compared, 100);
  EXPECT_GE(aggregated, 25);
}

TEST(SimReplicas, ContextParallelRanksAggregateAndAgreeWithFull) {
  // cp > 1: the workers are the dp·cp ranks; a rank's class also takes its cp group (ring attention) seen from
  // its position, so the representative's costs stand for its class exactly. Classes are translations
  // (hw::same_topology), and the cp group seen from cp rank 0 (node n, n+1) is not a translation of the one seen
  // from cp rank 1 (n+1, n): one class per cp position, 2 here, for 8 and 8 ranks.
  const auto m = model::with_seq(model::zoo_model("llama3-8b"), 16384);
  const auto c = hw::resolve_cluster("dgx-h100:8", catalog());
  const std::pair<const char*, int> cases[] = {{"dp=4,cp=2,tp=8,pp=1,mbs=1,gbs=16,schedule=1f1b,zero=1", 2},
                                               {"dp=2,cp=2,tp=8,pp=2,mbs=1,gbs=8,schedule=1f1b,zero=3", 2}};
  for (const auto& [text, classes] : cases) {
    const auto s = cost::complete_strategy(cost::parse_strategy(text), m, c);
    const Pair p = both(m, c, s);
    EXPECT_EQ(p.full.simulated_replicas, s.dp_cp()) << text;
    EXPECT_EQ(p.agg.simulated_replicas, classes) << text;
    expect_same(p, text);
  }
}
