// tests/report/report_fixtures: the plans the report tests render — the demo plan (gpt3-175b on
// dgx-a100:16+dgx-h100:16, gbs 1536) and a small heterogeneous one (AMP's GPT-2 on 3 p3.8xlarge + 1
// g4dn.12xlarge, gbs 32) — planned once per test executable, as plan files (JSON) like `strata plan --json`.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "strata/plan/search.hpp"

namespace strata_test {

struct PlannedCase {
  strata::model::Model model;
  strata::hw::Cluster cluster;
  nlohmann::json plan;  // the plan file, as read back from disk (dump + parse)
};

inline PlannedCase make_case(const std::string& model, const std::string& cluster, std::int64_t gbs) {
  using namespace strata;
  PlannedCase pc{model::zoo_model(model), hw::resolve_cluster(cluster, hw::builtin_catalog()), {}};
  plan::PlanOptions opt;
  opt.global_batch = gbs;
  opt.threads = 2;
  // Ranked by time (the report's sensitivity table follows the plan's objective: test_report_data checks both).
  opt.objective = plan::Objective::fastest;
  const auto r = plan::plan(pc.model, pc.cluster, opt);
  pc.plan = nlohmann::json::parse(plan::plan_to_json(r, pc.model, pc.cluster, opt).dump(2));
  return pc;
}

inline const PlannedCase& small_case() {
  static const PlannedCase pc = make_case("amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", 32);
  return pc;
}

inline const PlannedCase& demo_case() {
  static const PlannedCase pc = make_case("gpt3-175b", "dgx-a100:16+dgx-h100:16", 1536);
  return pc;
}

}  // namespace strata_test
