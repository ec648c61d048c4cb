// tests/hw/test_cluster_errors: bad cluster input gives ONE InputError line naming the part/field and the
// problem (unknown preset/GPU/link with the valid ones listed, bad counts, malformed syntax, bad matrices).
#include <gtest/gtest.h>

#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::hw {
namespace {

const Catalog& cat() {
  static const Catalog c = builtin_catalog();
  return c;
}

// The InputError message of resolving `spec` (fails the test when none is thrown).
std::string spec_error(const std::string& spec) {
  try {
    resolve_cluster(spec, cat());
  } catch (const core::InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for '" << spec << "'";
  return "";
}
std::string json_error(const std::string& text) {
  try {
    cluster_from_json(core::parse_json_text(text, "c.json"), "c.json", cat());
  } catch (const core::InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InputError for " << text;
  return "";
}
void expect_line_with(const std::string& msg, std::initializer_list<const char*> parts) {
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
}

TEST(HwClusterErrors, UnknownPresetListsValidOnes) {
  expect_line_with(spec_error("dgx-z100:2"),
                   {"cluster spec 'dgx-z100:2'", "unknown node type 'dgx-z100'", "valid:", "dgx-a100", "p3.8xlarge"});
  expect_line_with(spec_error("p3.8xlarge:1+nope"), {"unknown node type 'nope'"});
}

TEST(HwClusterErrors, BadCountsAndSyntax) {
  expect_line_with(spec_error("p3.8xlarge:x"), {"count 'x' of 'p3.8xlarge' is not a positive integer"});
  expect_line_with(spec_error("p3.8xlarge:0"), {"count '0'", "positive integer"});
  expect_line_with(spec_error("p3.8xlarge:-2"), {"count '-2'"});
  expect_line_with(spec_error("p3.8xlarge:"), {"count ''"});
  expect_line_with(spec_error("p3.8xlarge:2x"), {"count '2x'"});
  expect_line_with(spec_error("p3.8xlarge:3+"), {"empty part"});
  expect_line_with(spec_error("+dgx-a100"), {"empty part"});
  expect_line_with(spec_error(""), {"empty"});
  expect_line_with(spec_error("dgx-a100:99999999999999999999"), {"not a positive integer"});
  expect_line_with(spec_error("dgx-a100:999999"), {"more than"});
  expect_line_with(spec_error("/nonexistent/cluster.json"), {"/nonexistent/cluster.json", "cannot open"});
}

TEST(HwClusterErrors, JsonUnknownGpuAndLink) {
  expect_line_with(json_error(R"({"nodes": [{"gpu": "v200", "gpus": 4, "intra_link": "pcie3", "nics": 1,
                                             "nic_link": "eth-10g", "count": 1}]})"),
                   {"c.json: nodes[0].gpu", "unknown GPU type 'v200'", "valid:", "a100-40gb"});
  expect_line_with(json_error(R"({"nodes": [{"gpu": "t4", "gpus": 4, "intra_link": "pcie9", "nics": 1,
                                             "nic_link": "eth-10g", "count": 1}]})"),
                   {"nodes[0].intra_link", "unknown link 'pcie9'", "pcie4"});
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-q", "count": 1}]})"),
                   {"nodes[0].type", "unknown node type 'dgx-q'"});
}

TEST(HwClusterErrors, JsonZeroAndNegativeCounts) {
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": 0}]})"),
                   {"nodes[0].count", "must be > 0"});
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": -3}]})"), {"nodes[0].count"});
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": 1.5}]})"), {"expected an integer"});
  expect_line_with(json_error(R"({"nodes": [{"gpu": "t4", "gpus": 0, "intra_link": "pcie3", "nics": 1,
                                             "nic_link": "eth-10g", "count": 1}]})"),
                   {"nodes[0].gpus", "must be > 0"});
  expect_line_with(json_error(R"({"nodes": [{"gpu": "t4", "gpus": 2, "intra_link": "pcie3", "nics": -1,
                                             "nic_link": "eth-10g", "count": 1}]})"),
                   {"nodes[0].nics"});
  expect_line_with(json_error(R"({"nodes": []})"), {"at least one node group"});
  expect_line_with(json_error(R"({"name": "x"})"), {"nodes", "missing required field"});
}

TEST(HwClusterErrors, JsonBadMatrices) {
  const std::string two = R"({"nodes": [{"gpu": "t4", "gpus": 2, "intra_link": "pcie3", "nics": 1,
                                         "nic_link": "eth-10g", "count": 1}], )";
  expect_line_with(json_error(two + R"("bw_matrix": [[0, 1e9]]})"), {"bw_matrix", "expected 2 rows"});
  expect_line_with(json_error(two + R"("bw_matrix": [[0, 1e9], [1e9]]})"), {"bw_matrix[1]", "expected 2 entries"});
  expect_line_with(json_error(two + R"("bw_matrix": [[0, -1], [1e9, 0]]})"),
                   {"bw_matrix[0][1]", "must be > 0"});
  expect_line_with(json_error(two + R"("bw_matrix": [[0, 0], [1e9, 0]]})"), {"bw_matrix[0][1]"});
  expect_line_with(json_error(two + R"("bw_matrix": [[0, "a"], [1e9, 0]]})"), {"expected a number"});
  expect_line_with(json_error(two + R"("bw_matrix": [[0, 1], [1, 0]], "bw_matrix_gb_per_s": [[0, 1], [1, 0]]})"),
                   {"only one of"});
  expect_line_with(json_error(R"({"nodes": [{"gpu": "t4", "gpus": 2, "intra_link": "pcie3", "nics": 1,
                                             "nic_link": "eth-10g", "count": 1,
                                             "intra_bw_matrix_gb_per_s": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]}]})"),
                   {"nodes[0].intra_bw_matrix_gb_per_s", "expected 2 rows"});
}

TEST(HwClusterErrors, JsonOtherFields) {
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": 2}], "nodes_per_rack": 1,
                                  "rack_oversubscription": 0.5})"),
                   {"rack_oversubscription", "must be >= 1"});
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": 2}], "rack_oversubscription": 2})"),
                   {"needs nodes_per_rack"});
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": 2}], "node_per_rack": 2})"),
                   {"node_per_rack", "unknown field", "nodes_per_rack"});
  expect_line_with(json_error(R"({"nodes": [{"type": "dgx-a100", "count": 2, "gpus": 4}]})"),
                   {"nodes[0].gpus", "unknown field"});
  expect_line_with(json_error(R"({"gpus": [{"name": "x", "memory_gib": 8, "memory_bw_gb_per_s": 100,
                                            "peak_tflops": {"fp16": 10}}], "nodes": [{"type": "dgx-a100", "count": 1}]})"),
                   {"gpus[0].peak_tflops", "fp32"});
  expect_line_with(json_error(R"({"gpus": [{"name": "x", "memory_gib": 8, "memory_gb": 8, "memory_bw_gb_per_s": 1,
                                            "peak_tflops": {"fp32": 1}}], "nodes": [{"type": "dgx-a100", "count": 1}]})"),
                   {"only one of"});
  expect_line_with(json_error(R"({"gpus": [{"name": "x", "memory_gib": 8, "memory_bw_gb_per_s": 1,
                                            "peak_tflops": {"fp64": 1}}], "nodes": [{"type": "dgx-a100", "count": 1}]})"),
                   {"unknown dtype 'fp64'"});
  expect_line_with(json_error(R"({"links": [{"name": "l", "bw_gbit_per_s": -1, "latency_us": 1}],
                                  "nodes": [{"type": "dgx-a100", "count": 1}]})"),
                   {"links[0].bw_gbit_per_s", "must be > 0"});
  expect_line_with(json_error(R"([1, 2])"), {"expected an object"});
}

TEST(HwClusterErrors, MalformedJsonFileReportsLineAndColumn) {
  try {
    core::parse_json_text("{\n  \"nodes\": [\n    {\"type\": }\n  ]\n}", "bad.json");
    FAIL();
  } catch (const core::InputError& e) {
    expect_line_with(e.what(), {"bad.json:3:"});
  }
}

TEST(HwClusterErrors, InlineDefinitionsOverrideBuiltins) {
  const Cluster c = cluster_from_json(
      core::Json::parse(R"({"links": [{"name": "eth-10g", "bw_gbit_per_s": 5, "latency_us": 50}],
                            "nodes": [{"type": "p3.8xlarge", "count": 2}]})"),
      "o.json", cat());
  EXPECT_DOUBLE_EQ(link_bandwidth(c, 0, 4), 5e9 / 8);
  EXPECT_EQ(c.nodes[0].nic.source, "defined in o.json");
}

TEST(HwClusterErrors, CpuCoresOfSharedHosts) {
  const auto node = [](const std::string& cores) {
    return R"({"nodes": [{"gpu": "cpu", "gpus": 4, "intra_link": "loopback", "nics": 1, "nic_link": "loopback",
               "count": 2)" + cores + "}]}";
  };
  const Cluster c = cluster_from_json(core::Json::parse(node(R"(, "cpu_cores": 2)")), "c.json", cat());
  ASSERT_EQ(c.nodes.size(), 2u);
  EXPECT_EQ(c.nodes[0].cpu_cores, 2);
  EXPECT_EQ(c.nodes[1].cpu_cores, 2);
  EXPECT_EQ(cluster_from_json(core::Json::parse(node("")), "c.json", cat()).nodes[0].cpu_cores, 0);  // not shared
  expect_line_with(json_error(node(R"(, "cpu_cores": 0)")), {"c.json", "cpu_cores", "must be > 0"});
  expect_line_with(json_error(node(R"(, "cpu_cores": "two")")), {"c.json", "cpu_cores"});
  expect_line_with(json_error(node(R"(, "cpu_cores": 100000)")), {"c.json", "cpu_cores", "at most 65536"});
}

}  // namespace
}  // namespace strata::hw
