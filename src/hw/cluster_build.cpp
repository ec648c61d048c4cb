// hw/cluster_build: building clusters — from a preset name, the "<node-type>:<count>[+…]" syntax, or a JSON
// cluster file with inline GPU/link/node definitions, rack hierarchy and an optional full bandwidth matrix.
// Format: docs/clusters.md.
#include <fmt/format.h>

#include <charconv>
#include <string>

#include "json_fields.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::hw {
namespace {
using core::Json;
using core::JsonWhere;

int gpu_type_index(Cluster& c, const GpuSpec& g) {
  for (std::size_t i = 0; i < c.gpu_types.size(); ++i) {
    if (c.gpu_types[i].name == g.name) return static_cast<int>(i);
  }
  c.gpu_types.push_back(g);
  return static_cast<int>(c.gpu_types.size()) - 1;
}

// Assigns racks once all nodes are known: node i is in rack ⌊i / nodes_per_rack⌋ (0 = one rack).
void assign_racks(Cluster& c) {
  for (auto& n : c.nodes) n.rack = c.nodes_per_rack > 0 ? n.id / c.nodes_per_rack : 0;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool looks_like_file(std::string_view spec) {
  return spec.find('/') != std::string_view::npos ||
         (spec.size() >= 5 && core::to_lower(spec.substr(spec.size() - 5)) == ".json");
}

// Parses one "<node-type>[:<count>]" part of the CLI syntax.
void add_spec_part(Cluster& c, std::string_view part, const std::string& where, const Catalog& catalog) {
  part = trim(part);
  if (part.empty()) {
    throw core::InputError(fmt::format("{}: empty part (expected '<node-type>:<count>[+<node-type>:<count>...]')",
                                       where));
  }
  const auto colon = part.find(':');
  const std::string_view type = trim(part.substr(0, colon));
  long long count = 1;
  if (colon != std::string_view::npos) {
    const std::string_view text = trim(part.substr(colon + 1));
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || count <= 0) {
      throw core::InputError(fmt::format("{}: count '{}' of '{}' is not a positive integer", where,
                                         std::string(text), std::string(type)));
    }
  }
  const NodeSpec& spec = catalog.node(type, where);
  if (count > kMaxClusterDevices) {
    throw core::InputError(fmt::format("{}: count {} of '{}' exceeds the limit of {} devices", where, count,
                                       std::string(type), kMaxClusterDevices));
  }
  add_nodes(c, spec, static_cast<int>(count), catalog);
}

// Catalog plus the file's inline "gpus" and "links" (which take precedence over built-ins of the same name).
Catalog extended_catalog(const Json& j, const JsonWhere& where, const Catalog& base) {
  Catalog cat = base;
  auto add = [&](const char* key, auto parse, auto& list) {
    if (!core::has_field(j, key)) return;
    const Json& arr = j.at(key);
    core::expect_array(arr, where.field(key));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      auto item = parse(arr[i], where.field(key).index(i));
      std::erase_if(list, [&](const auto& x) { return x.name == item.name; });
      list.push_back(std::move(item));
    }
  };
  add("gpus", [](const Json& e, const JsonWhere& w) { return gpu_from_json(e, w, false); }, cat.gpus);
  add("links", [](const Json& e, const JsonWhere& w) { return link_from_json(e, w, false); }, cat.links);
  return cat;
}

void add_group(Cluster& c, const Json& g, const JsonWhere& w, const Catalog& cat) {
  core::expect_object(g, w);
  const auto count = core::get_positive_int(g, "count", w);
  if (count > kMaxClusterDevices) {
    core::fail(w.field("count"), fmt::format("exceeds the limit of {} devices", kMaxClusterDevices));
  }
  if (core::has_field(g, "type")) {
    detail::check_keys(g, {"type", "count"}, w);
    add_nodes(c, cat.node(core::get_string(g, "type", w), w.field("type").str()), static_cast<int>(count), cat);
    return;
  }
  // Inline node: the NodeSpec fields plus count; its name defaults to "custom".
  Json spec = g;
  spec.erase("count");
  if (!spec.contains("name")) spec["name"] = "custom";
  add_nodes(c, node_from_json(spec, w, cat, false), static_cast<int>(count), cat);
}
}  // namespace

void add_nodes(Cluster& c, const NodeSpec& spec, int count, const Catalog& catalog) {
  if (count <= 0) throw core::InputError(fmt::format("node type '{}': count must be > 0, got {}", spec.name, count));
  if (static_cast<long long>(c.num_devices()) + static_cast<long long>(count) * spec.gpus > kMaxClusterDevices) {
    throw core::InputError(fmt::format("cluster '{}': more than {} devices", c.name, kMaxClusterDevices));
  }
  const int type = gpu_type_index(c, catalog.gpu(spec.gpu, fmt::format("node type '{}': gpu", spec.name)));
  const LinkSpec& intra = catalog.link(spec.intra_link, fmt::format("node type '{}': intra_link", spec.name));
  const LinkSpec& nic = catalog.link(spec.nic_link, fmt::format("node type '{}': nic_link", spec.name));
  for (int k = 0; k < count; ++k) {
    Node n;
    n.id = static_cast<int>(c.nodes.size());
    n.node_type = spec.name;
    n.first_device = c.num_devices();
    n.num_devices = spec.gpus;
    n.intra = intra;
    n.nics = spec.nics;
    n.nic = nic;
    n.intra_bw_matrix = spec.intra_bw_matrix;
    n.cpu_cores = spec.cpu_cores;
    n.gpus_per_host = spec.gpus_per_host;
    c.has_oversubscribed_cpu_node = c.has_oversubscribed_cpu_node || (n.cpu_cores > 0 && n.num_devices > n.cpu_cores);
    n.first_nic = c.nodes.empty() ? 0 : c.nodes.back().first_nic + c.nodes.back().nics;
    n.rack = c.nodes_per_rack > 0 ? n.id / c.nodes_per_rack : 0;
    for (int i = 0; i < spec.gpus; ++i) {
      c.devices.push_back(Device{n.first_device + i, n.id, i, type});
    }
    c.nodes.push_back(std::move(n));
  }
}

Cluster resolve_cluster(std::string_view spec, const Catalog& catalog) {
  const std::string_view s = trim(spec);
  if (looks_like_file(s)) return load_cluster_file(std::string(s), catalog);
  const std::string where = fmt::format("cluster spec '{}'", std::string(spec));
  if (s.empty()) {
    throw core::InputError(fmt::format(
        "{}: empty (expected a preset such as dgx-a100, '<node-type>:<count>[+<node-type>:<count>...]' or a "
        ".json file)",
        where));
  }
  Cluster c;
  c.name = std::string(s);
  std::size_t start = 0;
  while (true) {
    const auto plus = s.find('+', start);
    add_spec_part(c, s.substr(start, plus == std::string_view::npos ? std::string_view::npos : plus - start), where,
                  catalog);
    if (plus == std::string_view::npos) break;
    start = plus + 1;
  }
  return c;
}

Cluster load_cluster_file(const std::string& path, const Catalog& catalog) {
  return cluster_from_json(core::load_json_file(path), path, catalog);
}

Cluster cluster_from_json(const nlohmann::json& j, const std::string& origin, const Catalog& catalog) {
  const JsonWhere where{origin, ""};
  detail::check_keys(j, {"name", "gpus", "links", "nodes", "nodes_per_rack", "rack_oversubscription", "bw_matrix",
                         "bw_matrix_gb_per_s"},
                     where);
  const Catalog cat = extended_catalog(j, where, catalog);
  Cluster c;
  c.name = core::opt_string(j, "name", where).value_or(origin);
  core::check_name(c.name, where.field("name").str());
  const Json& groups = core::require_field(j, "nodes", where);
  core::expect_array(groups, where.field("nodes"));
  if (groups.empty()) core::fail(where.field("nodes"), "must list at least one node group");
  for (std::size_t i = 0; i < groups.size(); ++i) add_group(c, groups[i], where.field("nodes").index(i), cat);

  if (auto npr = core::opt_positive_int(j, "nodes_per_rack", where)) {
    c.nodes_per_rack = static_cast<int>(std::min<std::int64_t>(*npr, kMaxClusterDevices));
  }
  if (auto over = core::opt_number(j, "rack_oversubscription", where)) {
    if (!(*over >= 1.0)) core::fail(where.field("rack_oversubscription"), fmt::format("must be >= 1, got {}", *over));
    if (c.nodes_per_rack == 0) core::fail(where.field("rack_oversubscription"), "needs nodes_per_rack");
    c.rack_oversubscription = *over;
  }
  assign_racks(c);
  c.bw_matrix = bw_matrix_from_json(j, "bw_matrix", static_cast<std::size_t>(c.num_devices()), where);
  return c;
}

}  // namespace strata::hw
