// hw/catalog_listing: the catalog and cluster listings as JSON — `strata hardware --json`, `strata clusters
// --json` and `strata clusters --show SPEC --json`, also read by the Python API (strata.hardware(),
// strata.clusters(), Cluster.to_dict()).
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::hw {

core::OrderedJson catalog_listing_json(const Catalog& catalog) {
  core::OrderedJson j;
  j["gpus"] = core::OrderedJson::array();
  for (const auto& g : catalog.gpus) j["gpus"].push_back(to_json(g));
  j["links"] = core::OrderedJson::array();
  for (const auto& l : catalog.links) j["links"].push_back(to_json(l));
  return j;
}

core::OrderedJson node_presets_json(const Catalog& catalog) {
  core::OrderedJson arr = core::OrderedJson::array();
  for (const auto& n : catalog.nodes) {
    core::OrderedJson j = to_json(n);
    j["intra_bw_bytes_per_s"] = catalog.link(n.intra_link).bw_bytes_per_s;
    j["nic_bw_bytes_per_s"] = catalog.link(n.nic_link).bw_bytes_per_s;
    arr.push_back(j);
  }
  return arr;
}

nlohmann::ordered_json cluster_summary_json(const Cluster& c) {
  core::OrderedJson j;
  j["name"] = c.name;
  j["num_devices"] = c.num_devices();
  j["num_nodes"] = c.nodes.size();
  j["gpu_types"] = core::OrderedJson::array();
  for (const auto& g : c.gpu_types) j["gpu_types"].push_back(g.name);
  j["total_memory_bytes"] = total_memory_bytes(c);
  j["total_peak_bf16_flops"] = total_peak_flops(c, Dtype::bf16);
  j["nodes"] = core::OrderedJson::array();
  for (const auto& n : c.nodes) {
    j["nodes"].push_back({{"id", n.id}, {"node_type", n.node_type}, {"first_device", n.first_device},
                          {"num_devices", n.num_devices}, {"gpu", c.gpu_of(n.first_device).name},
                          {"intra_link", n.intra.name}, {"nics", n.nics}, {"nic_link", n.nic.name}, {"rack", n.rack}});
  }
  j["link_classes"] = core::OrderedJson::array();
  for (const auto& lc : link_classes(c)) {
    j["link_classes"].push_back({{"scope", lc.scope}, {"link", lc.link}, {"bw_bytes_per_s", lc.bw_bytes_per_s},
                                 {"latency_s", lc.latency_s}, {"nodes", lc.nodes}});
  }
  return j;
}

}  // namespace strata::hw
