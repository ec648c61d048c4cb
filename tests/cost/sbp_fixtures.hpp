// Shared fixtures of the SBP tests (tests/cost/test_sbp.cpp, tests/plan/test_sbp_search.cpp): AutoDDL's clusters.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "strata/hw/cluster.hpp"

namespace sbp_test {

inline const strata::hw::Catalog& catalog() {
  static const strata::hw::Catalog c = strata::hw::builtin_catalog();
  return c;
}

// Piz Daint-like: `nodes` nodes of one GPU, 10 GB/s network (examples/cluster_piz_daint.json, any node count).
inline strata::hw::Cluster piz_daint(int nodes) {
  const auto j = nlohmann::json::parse(R"({
    "links": [{"name": "aries", "bw_gb_per_s": 10, "latency_us": 2, "source": "AutoDDL 5.2.1"}],
    "nodes": [{"name": "xc50", "gpu": "v100-16gb", "gpus": 1, "intra_link": "nvlink1", "nics": 1,
               "nic_link": "aries", "count": 1}]})");
  auto k = j;
  k["nodes"][0]["count"] = nodes;
  k["name"] = "piz-daint-" + std::to_string(nodes);
  return strata::hw::cluster_from_json(k, "test", catalog());
}

inline strata::hw::Cluster cluster_file(const std::string& relative) {
  return strata::hw::resolve_cluster(std::string(STRATA_SOURCE_DIR) + "/" + relative, catalog());
}

// AutoDDL's Google Cloud cluster: 2 servers x 16 A100 40 GB, 100 Gbit/s between them.
inline strata::hw::Cluster gcp() { return cluster_file("examples/cluster_autoddl_gcp.json"); }

}  // namespace sbp_test
