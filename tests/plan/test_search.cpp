// tests/plan/test_search: the planner against brute force on random small cases — the pruned search equals
// exhaustive evaluation of its space (top-K strategies and times, any thread count), and the split inside it
// equals enumeration of every contiguous split under the cost model's own stage times and memory — plus AMP's
// two scenarios (seed_000 §4.3), determinism, placement rules and the impossible-request messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/stage.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {
namespace {

using Rng = std::mt19937_64;
int uni(Rng& r, int lo, int hi) { return lo + static_cast<int>(r() % static_cast<std::uint64_t>(hi - lo + 1)); }

// A random GPT-like chain of ≤ 12 layers with heterogeneous block widths.
model::Model random_model(Rng& r) {
  model::Model m;
  m.name = "random";
  m.family = "custom";
  m.seq = 256 * uni(r, 1, 4);
  m.heads = 8;
  m.vocab = 32000;
  const int blocks = uni(r, 1, 10);
  model::LayerSpec emb;
  emb.kind = model::LayerKind::embedding;
  emb.name = "embedding";
  emb.hidden = 1024 * uni(r, 1, 4);
  emb.vocab = m.vocab;
  m.hidden = emb.hidden;
  m.layers.push_back(emb);
  for (int i = 0; i < blocks; ++i) {
    model::LayerSpec b;
    b.kind = model::LayerKind::transformer;
    b.name = "block." + std::to_string(i);
    b.hidden = emb.hidden;  // the residual width stays; the MLP and heads vary per block
    b.heads = 8;
    b.kv_heads = 8;
    b.ffn = b.hidden * uni(r, 1, 8);
    m.layers.push_back(b);
  }
  model::LayerSpec head;
  head.kind = model::LayerKind::lm_head;
  head.name = "head";
  head.hidden = emb.hidden;
  head.vocab = m.vocab;
  m.layers.push_back(head);
  return m;
}

// ≤ 8 devices of ≥ 2 GPU types with a random symmetric device×device bandwidth matrix (AMP's input).
hw::Cluster random_cluster(Rng& r, const hw::Catalog& cat) {
  static const char* gpus[] = {"v100-16gb", "t4", "a100-40gb", "a10g"};
  nlohmann::json j;
  j["name"] = "random";
  j["nodes"] = nlohmann::json::array();
  const int groups = uni(r, 2, 3);
  int devices = 0;
  std::vector<int> types(4);
  for (int i = 0; i < 4; ++i) types[i] = i;
  std::shuffle(types.begin(), types.end(), r);
  for (int g = 0; g < groups && devices < 8; ++g) {
    const int per_node = uni(r, 1, 2) * 2;
    const int count = std::max(1, std::min(uni(r, 1, 2), (8 - devices) / per_node));
    if (devices + per_node * count > 8) break;
    j["nodes"].push_back({{"gpu", gpus[types[g % 2]]}, {"gpus", per_node}, {"intra_link", "pcie3"}, {"nics", 1},
                          {"nic_link", "eth-25g"}, {"count", count}});
    devices += per_node * count;
  }
  if (uni(r, 0, 1) == 1) {
    std::vector<std::vector<double>> bw(devices, std::vector<double>(devices, 0));
    for (int a = 0; a < devices; ++a)
      for (int b = a + 1; b < devices; ++b) bw[a][b] = bw[b][a] = uni(r, 1, 100);
    j["bw_matrix_gb_per_s"] = bw;
  }
  return hw::cluster_from_json(j, "random-cluster", cat);
}

std::int64_t random_gbs(Rng& r, int devices) {
  static const int choices[] = {8, 12, 16, 24, 32};
  return choices[uni(r, 0, 4)] * std::max(1, devices / 4);
}

void expect_same_top(const PlanResult& a, const PlanResult& b, const std::string& ctx) {
  ASSERT_EQ(a.top.size(), b.top.size()) << ctx;
  for (std::size_t i = 0; i < a.top.size(); ++i) {
    EXPECT_EQ(cost::to_cli_string(a.top[i].strategy), cost::to_cli_string(b.top[i].strategy)) << ctx << " rank " << i;
    EXPECT_EQ(a.top[i].estimate.iteration_time_s, b.top[i].estimate.iteration_time_s) << ctx << " rank " << i;
  }
}

TEST(Search, PrunedSearchEqualsExhaustiveEvaluation) {
  const auto cat = hw::builtin_catalog();
  Rng r(4242);
  int cases = 0, pruned_something = 0, hetero = 0;
  std::int64_t bounds_checked = 0, bounds_tight = 0;
  for (int c = 0; c < 120; ++c) {
    const model::Model m = random_model(r);
    const hw::Cluster cl = random_cluster(r, cat);
    PlanOptions opt;
    opt.global_batch = random_gbs(r, cl.num_devices());
    opt.space = uni(r, 0, 2) == 0 ? Space::three_d : (uni(r, 0, 3) == 0 ? Space::all : Space::full);
    opt.top_k = uni(r, 1, 4);
    opt.baselines = false;
    opt.batch_size = uni(r, 1, 40);
    opt.recompute_early_stop = c % 3 == 0;  // the PyTorch form of full recompute (--earlystop): bounds hold too
    PlanResult fast, full;
    try {
      fast = plan(m, cl, opt);
    } catch (const core::InputError&) {
      // Impossible request: the exhaustive run must agree.
      opt.exhaustive = true;
      EXPECT_THROW(plan(m, cl, opt), core::InputError);
      continue;
    }
    opt.exhaustive = true;
    // Every configuration's lower bound (plain, sync, flow-shop, fixed-split) is at most its estimate.
    opt.on_costed = [&](double lb, const Candidate& cand) {
      ++bounds_checked;
      EXPECT_LE(lb, cand.estimate.iteration_time_s) << "case " << c << ": " << cost::to_cli_string(cand.strategy);
      if (lb >= 0.9 * cand.estimate.iteration_time_s) ++bounds_tight;
    };
    full = plan(m, cl, opt);
    opt.on_costed = nullptr;
    expect_same_top(fast, full, "case " + std::to_string(c));
    ++cases;
    pruned_something += fast.pruned_by_bound > 0 ? 1 : 0;
    hetero += cl.gpu_types.size() >= 2 ? 1 : 0;
    // Two threads give the same answer.
    opt.exhaustive = false;
    opt.threads = 2;
    const PlanResult two = plan(m, cl, opt);
    expect_same_top(fast, two, "threads, case " + std::to_string(c));
    EXPECT_EQ(fast.evaluated, two.evaluated);
  }
  EXPECT_GT(cases, 80);
  EXPECT_GT(pruned_something, cases / 2);  // the bound does prune
  EXPECT_GT(hetero, cases / 2);
  EXPECT_GT(bounds_checked, 10000);
  EXPECT_GT(bounds_tight, bounds_checked / 10);  // the bounds are not vacuous
  std::printf("bounds checked: %lld, within 10%% of the estimate: %lld\n", static_cast<long long>(bounds_checked),
              static_cast<long long>(bounds_tight));
}

// Every composition of L layers into p stages, lexicographic.
void for_each_split(int L, int p, const std::function<void(const std::vector<int>&)>& f) {
  std::vector<int> s(p);
  std::function<void(int, int)> rec = [&](int j, int left) {
    if (j == p - 1) {
      s[j] = left;
      f(s);
      return;
    }
    for (int x = 1; x <= left - (p - 1 - j); ++x) {
      s[j] = x;
      rec(j + 1, left - x);
    }
  };
  rec(0, L);
}

TEST(Search, SplitEqualsEnumerationUnderTheCostModel) {
  const auto cat = hw::builtin_catalog();
  Rng r(99);
  int checked = 0;
  for (int c = 0; c < 150; ++c) {
    const model::Model m = random_model(r);
    const hw::Cluster cl = random_cluster(r, cat);
    const int L = static_cast<int>(m.layers.size());
    const int n = cl.num_devices();
    cost::Strategy s;
    s.pp = std::min(L, uni(r, 2, 4));
    while (n % s.pp != 0) --s.pp;
    if (s.pp < 2) continue;
    s.tp = (n / s.pp) % 2 == 0 && uni(r, 0, 1) ? 2 : 1;
    s.dp = n / (s.pp * s.tp);
    s.micro_batch = uni(r, 1, 2);
    s.global_batch = s.dp * s.micro_batch * uni(r, 1, 16);
    s.schedule = uni(r, 0, 3) == 0 ? cost::Schedule::pipedream : cost::Schedule::one_f_one_b;
    s.recompute = uni(r, 0, 1) ? model::Recompute::selective : model::Recompute::none;
    s.zero_stage = s.dp > 1 ? uni(r, 0, 3) : 0;
    s = cost::complete_strategy(s, m, cl);
    cost::Strategy dp_split = s;
    double objective = 0;
    const bool found = optimal_split(m, cl, dp_split, {}, &objective);
    double best = INFINITY;
    std::vector<int> best_split;
    for_each_split(L, s.pp, [&](const std::vector<int>& sizes) {
      cost::Strategy t = s;
      t.split = sizes;
      const cost::Estimate e = cost::estimate(m, cl, t);
      if (!e.fits) return;
      std::vector<double> tt, ee;
      for (const auto& st : e.stages) tt.push_back(st.time_s);
      for (std::size_t i = 0; i + 1 < e.stages.size(); ++i) ee.push_back(e.stages[i].p2p_s);
      const double obj = cost::pipeline_iteration_time(t.schedule, t.num_micro_batches(), 1, tt, ee);
      if (obj < best) {
        best = obj;
        best_split = sizes;
      }
    });
    ASSERT_EQ(found, best < INFINITY) << "case " << c;
    if (!found) continue;
    ++checked;
    // Equal up to the split's 1 ps rounding per layer/cut.
    EXPECT_NEAR(objective, best, 1e-9 * best + 4e-12 * L * s.num_micro_batches()) << "case " << c;
    const cost::Estimate chosen = cost::estimate(m, cl, dp_split);
    EXPECT_TRUE(chosen.fits) << "case " << c;
  }
  EXPECT_GT(checked, 60);
}

const Baseline& baseline(const PlanResult& r, const std::string& name) {
  for (const auto& b : r.baselines)
    if (b.name == name) return b;
  throw std::runtime_error("no baseline " + name);
}

TEST(Search, AmpHeterogeneousClusterScenario) {
  // AMP §4.3: GPT-2 (24 layers, h 1024) on 3 p3.8xlarge (V100) + 1 g4dn.12xlarge (T4), gbs 32.
  const auto m = model::zoo_model("amp-gpt2");
  const auto c = hw::resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 32;
  const PlanResult r = plan(m, c, opt);
  const Baseline& meg = baseline(r, "megatron");
  ASSERT_TRUE(meg.found);
  const double speedup = meg.estimate.iteration_time_s / r.top.front().estimate.iteration_time_s;
  EXPECT_GE(speedup, 1.3);
  // Structure: a pipeline whose V100 stages hold more layers per stage than its T4 stages.
  const auto& s = r.top.front().strategy;
  ASSERT_GT(s.pp, 1);
  const auto types = stage_gpu_types(c, s);
  double v100 = 0, t4 = 0;
  int nv = 0, nt = 0;
  for (int st = 0; st < s.pp; ++st) {
    const auto& name = c.gpu_types[types[st]].name;
    (name == "t4" ? t4 : v100) += s.split[st];
    (name == "t4" ? nt : nv) += 1;
  }
  ASSERT_GT(nv, 0);
  ASSERT_GT(nt, 0);
  EXPECT_GT(v100 / nv, t4 / nt);
  // The explanation names both GPU types and the reason.
  std::string text;
  for (const auto& l : r.explanation) text += l + "\n";
  EXPECT_NE(text.find("t4"), std::string::npos);
  EXPECT_NE(text.find("v100-16gb"), std::string::npos);
  EXPECT_NE(text.find("why"), std::string::npos);
}

TEST(Search, AmpHeterogeneousModelScenario) {
  // AMP §4.3: TransGAN generator (layers of width 1024 and 16) on 4 p3.8xlarge, gbs 64.
  const auto m = model::zoo_model("amp-transgan");
  const auto c = hw::resolve_cluster("p3.8xlarge:4", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 64;
  const PlanResult r = plan(m, c, opt);
  const Baseline& meg = baseline(r, "megatron");
  ASSERT_TRUE(meg.found);
  EXPECT_GE(meg.estimate.iteration_time_s / r.top.front().estimate.iteration_time_s, 1.3);
  EXPECT_TRUE(r.top.front().estimate.fits);
  EXPECT_FALSE(r.explanation.empty());
}

TEST(Search, DeterministicJsonForAnyThreadCount) {
  const auto m = model::zoo_model("amp-gpt2");
  const auto c = hw::resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 32;
  auto json_of = [&](int threads) {
    opt.threads = threads;
    auto j = plan_to_json(plan(m, c, opt), m, c, opt);
    j.erase("search_time_s");
    return j.dump();
  };
  const std::string one = json_of(1);
  EXPECT_EQ(one, json_of(2));
  EXPECT_EQ(one, json_of(3));
  const auto j = nlohmann::json::parse(one);
  for (const char* key : {"best", "candidates", "baselines", "evaluated"}) EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_TRUE(j["best"].contains("strategy"));
  EXPECT_TRUE(j["best"].contains("estimate"));
  EXPECT_TRUE(j["baselines"].contains("megatron"));
}

TEST(Search, PlanFileTextIsTheTreeDumpedMemberByMember) {
  // plan_file_text streams the members (issue 22: no whole tree at 98k GPUs); its bytes are the tree's dump_json,
  // with the extra members (trials, per_stage) after the rest, also with no candidate at all.
  const auto m = model::zoo_model("amp-gpt2");
  const auto c = hw::resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 32;
  PlanResult r = plan(m, c, opt);
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  extra["trials"] = nlohmann::ordered_json::array({nlohmann::ordered_json{{"rank", 1}}});
  extra["per_stage"] = nlohmann::ordered_json{{"gain", 1.25}};
  auto tree = plan_to_json(r, m, c, opt);
  EXPECT_EQ(plan_file_text(r, m, c, opt), core::dump_json(tree) + "\n");
  tree["trials"] = extra["trials"];
  tree["per_stage"] = extra["per_stage"];
  EXPECT_EQ(plan_file_text(r, m, c, opt, extra), core::dump_json(tree) + "\n");
  r.top.clear();
  EXPECT_EQ(plan_file_text(r, m, c, opt), core::dump_json(plan_to_json(r, m, c, opt)) + "\n");
}

TEST(Search, ReportedNumbersAreTheCostModels) {
  const auto m = model::zoo_model("amp-gpt2");
  const auto c = hw::resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 32;
  opt.objective = Objective::fastest;  // the time order checked below (the margin order: tests/plan/test_rank)
  const PlanResult r = plan(m, c, opt);
  for (const auto& cand : r.top) {
    const cost::Strategy s = cost::complete_strategy(cand.strategy, m, c);  // valid by every rule
    EXPECT_EQ(cost::estimate(m, c, s).iteration_time_s, cand.estimate.iteration_time_s);
  }
  for (std::size_t i = 1; i < r.top.size(); ++i)
    EXPECT_LE(r.top[i - 1].estimate.iteration_time_s, r.top[i].estimate.iteration_time_s);
}

TEST(Search, StackFormsReachEveryCandidateAndOnlyHelp) {
  // --earlystop: every full-recompute candidate carries earlystop=on (and no other); --fp8-cast separate: every
  // fp8 candidate carries it. Each reported time is the cost model's for that strategy; early stop never slows.
  const auto m = model::with_seq(model::zoo_model("llama3-70b"), 4096);  // tight enough that full recompute places
  const auto c = hw::resolve_cluster("dgx-h100:4", hw::builtin_catalog());
  PlanOptions opt;
  opt.global_batch = 32;
  opt.top_k = 40;
  opt.dtype = hw::Dtype::fp8;
  const PlanResult plain = plan(m, c, opt);
  opt.recompute_early_stop = true;
  opt.fp8_separate_casts = true;
  const PlanResult stack = plan(m, c, opt);
  int full = 0;
  for (const auto& cand : stack.top) {
    EXPECT_EQ(cand.strategy.recompute_early_stop, cand.strategy.recompute == model::Recompute::full);
    EXPECT_TRUE(cand.strategy.fp8_separate_casts);
    full += cand.strategy.recompute == model::Recompute::full;
    const cost::Strategy s = cost::complete_strategy(cand.strategy, m, c);
    EXPECT_EQ(cost::estimate(m, c, s).iteration_time_s, cand.estimate.iteration_time_s);
    if (s.recompute == model::Recompute::full) {  // the same plan with Megatron's full recompute is slower
      cost::Strategy whole = s;
      whole.recompute_early_stop = false;
      EXPECT_LT(cand.estimate.iteration_time_s, cost::estimate(m, c, whole).iteration_time_s);
    }
  }
  EXPECT_GT(full, 0);
  for (const auto& cand : plain.top) {
    EXPECT_FALSE(cand.strategy.recompute_early_stop);
    EXPECT_FALSE(cand.strategy.fp8_separate_casts);
  }
}

TEST(Search, ImpossibleRequestsSayWhatWouldWork) {
  const auto cat = hw::builtin_catalog();
  // A model far too big for one T4 node: the message gives the memory it needs and GPUs that have it.
  try {
    PlanOptions opt;
    opt.global_batch = 8;
    plan(model::zoo_model("gpt3-175b"), hw::resolve_cluster("g4dn.12xlarge:1", cat), opt);
    FAIL() << "expected InputError";
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("smallest memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("closest that fits"), std::string::npos) << msg;
  }
  // tiny-gpt on 16 GPUs: pp ≤ 6 layers, tp | heads; gbs 7 fits no usable dp.
  try {
    PlanOptions opt;
    opt.global_batch = 7;
    opt.max_tp = 1;
    plan(model::zoo_model("tiny-gpt"), hw::resolve_cluster("p3.8xlarge:4", cat), opt);
    FAIL() << "expected InputError";
  } catch (const core::InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("closest gbs that works"), std::string::npos) << msg;
  }
}

TEST(Placement, HeteroPlacementsKeepTpGroupsOnOneTypeAndFastLinks) {
  const auto cat = hw::builtin_catalog();
  const auto c = hw::resolve_cluster("p3.8xlarge:1+g4dn.12xlarge:1", cat);
  const auto cands = hetero_placements(c, cost::Dims{.dp = 2, .tp = 2, .pp = 2});
  ASSERT_GE(cands.size(), 3u);  // megatron + two type orders
  EXPECT_EQ(cands[0].label, "megatron");
  for (const auto& pc : cands) {
    std::vector<int> sorted = pc.placement;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < c.num_devices(); ++i) EXPECT_EQ(sorted[i], i);
    for (std::size_t g = 0; g < pc.placement.size(); g += 2)
      EXPECT_EQ(c.devices[pc.placement[g]].gpu_type, c.devices[pc.placement[g + 1]].gpu_type);
  }
  // p3.8xlarge's NVLink matrix: 0–3 and 1–2 are the 50 GB/s pairs; greedy tp grouping uses them.
  const auto& v100_first = cands[1].placement;
  EXPECT_EQ(std::vector<int>(v100_first.begin(), v100_first.begin() + 4), (std::vector<int>{0, 3, 1, 2}));
}

TEST(Placement, AnnealIsSeededDeterministicAndNeverWorse) {
  const auto c = hw::resolve_cluster("p3.8xlarge:1+g4dn.12xlarge:1", hw::builtin_catalog());
  // A toy cost: sum of |device − rank| (identity is optimal); start from a reversed placement.
  std::vector<int> start(8);
  for (int i = 0; i < 8; ++i) start[i] = 7 - i;
  auto cost = [](const std::vector<int>& p) {
    double s = 0;
    for (std::size_t i = 0; i < p.size(); ++i) s += std::abs(p[i] - static_cast<int>(i));
    return s;
  };
  // dp=2, tp=2, pp=2: whole tp groups may swap, devices only within their GPU type.
  const auto a = anneal_placement(c, cost::Dims{.dp = 2, .tp = 2, .pp = 2}, start, cost, 7, 500);
  const auto b = anneal_placement(c, cost::Dims{.dp = 2, .tp = 2, .pp = 2}, start, cost, 7, 500);
  EXPECT_EQ(a, b);
  EXPECT_LT(cost(a), cost(start));
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(sorted[i], i);  // still a permutation
  for (std::size_t g = 0; g < a.size(); g += 2)         // tp groups never mix GPU types
    EXPECT_EQ(c.devices[a[g]].gpu_type, c.devices[a[g + 1]].gpu_type);
}

TEST(Placement, SummaryNamesStageRuns) {
  const auto c = hw::resolve_cluster("p3.8xlarge:3+g4dn.12xlarge:1", hw::builtin_catalog());
  cost::Strategy s;
  s.dp = 4;
  s.pp = 4;
  s.placement = megatron_placement(c);
  EXPECT_EQ(placement_summary(c, s), "stages 0-2: v100-16gb, stage 3: t4");
}

}  // namespace
}  // namespace strata::plan
