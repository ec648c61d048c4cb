// tests/export: the engine matrix (issue 37) — 14 (model, cluster) pairs (dense Llama, GPT, MPT shapes; 4 to 1024
// devices; A100, H100, mixed, CPU) × every engine profile: plan --engine E either finds a plan or says why none
// fits, every plan of its top list is one E can run, and the export of its best satisfies every rule of E's
// profile (data/engines/E.json: "never" rules on the strategy, "require"/"forbid" patterns on the config and
// launch files). Rules a writer does not satisfy yet are the profile's "pending" list, reported, not checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>

#include "strata/core/error.hpp"
#include "strata/cost/engine.hpp"
#include "strata/export/export.hpp"
#include "strata/plan/search.hpp"

namespace cost = strata::cost;
namespace ex = strata::exporter;
namespace hw = strata::hw;
namespace model = strata::model;
namespace plan = strata::plan;

namespace {

struct Pair {
  const char* model;
  const char* cluster;
  std::int64_t gbs;
  hw::Dtype dtype = hw::Dtype::bf16;
};

const Pair kPairs[] = {
    {"llama3-8b", "dgx-a100:1", 64},
    {"llama3-8b", "dgx-h100:2", 128},
    {"llama3-70b", "dgx-h100:8", 512},
    {"llama3-70b", "dgx-a100:16", 512},
    {"llama3-405b", "dgx-h100:128", 1024},
    {"llama2-7b", "dgx-a100:4", 256},
    {"llama2-70b", "dgx-h100:4+dgx-a100:4", 256},
    {"gpt3-175b", "dgx-a100:128", 1536},
    {"gpt3-175b", "dgx-h100:16", 512},
    {"megatron-1.7b", "dgx-a100:2", 128},
    {"gpt2-medium", "dgx-h100:1+dgx-a100:1", 64},
    {"mpt-7b", "dgx-a100:1", 64},
    {"mpt-70b", "dgx-h100:8", 256},
    {"tiny-gpt", "cpu-local:1", 8, hw::Dtype::fp32},
};

// Checks every rule of `p` against the plan's strategy and its exported files; returns the pending rules hit.
std::vector<std::string> check_rules(const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                     const cost::Strategy& s) {
  std::string config, launch;
  if (!p.export_target.empty()) {
    const auto target = ex::target_of(p, "test");
    config = ex::export_strategy(target, p, m, c, s).text;  // must not throw: plan --engine ⇒ export succeeds
    if (target == ex::Engine::megatron) launch = ex::export_strategy(ex::Engine::torchrun, p, m, c, s).text;
  }
  std::vector<std::string> pending;
  for (const auto& r : p.rules) {
    if (r.kind == "field" || !cost::rule_applies(r.when, c, s)) continue;
    bool ok = true;
    if (r.kind == "never") {
      ok = false;
    } else {
      const std::string& text = r.file == "launch" ? launch : config;
      if (text.empty()) continue;  // no such file for this engine
      const bool found = std::regex_search(text, std::regex(cost::rule_pattern(r, s)));
      ok = r.kind == "require" ? found : !found;
    }
    const bool is_pending = std::find(p.pending.begin(), p.pending.end(), r.id) != p.pending.end();
    if (!ok && is_pending) pending.push_back(r.id);
    else
      EXPECT_TRUE(ok) << p.name << " rule " << r.id << " (" << r.fact << ", " << r.source << ") broken by "
                      << cost::to_cli_string(s) << "\n" << config;
  }
  return pending;
}

}  // namespace

TEST(EngineMatrix, EveryEnginePlansOrSaysWhyAndItsExportKeepsItsRules) {
  int planned = 0, refused = 0;
  std::map<std::string, int> per_engine;
  for (const auto& pr : kPairs) {
    const auto m = model::zoo_model(pr.model);
    const auto c = hw::resolve_cluster(pr.cluster, hw::builtin_catalog());
    for (const auto& name : cost::engine_names()) {
      const auto& p = cost::engine_profile(name);
      plan::PlanOptions opt;
      opt.global_batch = pr.gbs;
      opt.dtype = pr.dtype;
      opt.top_k = 3;
      opt.baselines = false;
      opt.engine = p;
      plan::PlanResult r;
      try {
        r = plan::plan(m, c, opt);
      } catch (const strata::core::InputError& e) {
        // Why no plan: the message names the engine or the memory it would need.
        const std::string why = e.what();
        EXPECT_TRUE(why.find(name) != std::string::npos || why.find("does not fit") != std::string::npos) << why;
        std::printf("%-12s %-22s %-16s no plan: %.150s\n", pr.model, pr.cluster, name.c_str(), why.c_str());
        ++refused;
        continue;
      }
      ++planned;
      ++per_engine[name];
      for (const auto& cand : r.top) {
        const auto why = cost::engine_cannot_run(p, m, c, cand.strategy);
        EXPECT_FALSE(why.has_value()) << name << " " << pr.model << " " << pr.cluster << ": " << *why;
        EXPECT_TRUE(cand.estimate.fits);
      }
      std::printf("%-12s %-22s %-16s %s\n", pr.model, pr.cluster, name.c_str(),
                  cost::to_cli_string(r.top.front().strategy).substr(0, 110).c_str());
      const auto pending = check_rules(p, m, c, r.top.front().strategy);
      for (const auto& id : pending) RecordProperty(name + "." + id, "pending");
    }
  }
  // The matrix is not vacuous: each GPU engine plans several pairs, strata's executor the CPU one.
  EXPECT_GE(per_engine["megatron"], 10);
  EXPECT_GE(per_engine["deepspeed"], 8);
  EXPECT_GE(per_engine["torchtitan-toml"], 3);  // the registered llama3 flavors only
  EXPECT_GE(per_engine["torchtitan"], 3);
  EXPECT_GE(per_engine["pytorch"], 3);
  EXPECT_EQ(per_engine["strata-exec"], 1);
  RecordProperty("planned", planned);
  RecordProperty("refused", refused);
}
