// hw/catalog_json: parsing of catalog entries (data/gpus.json, links.json, nodes.json, and inline definitions in
// cluster files), the built-in catalog, and JSON views for listings. Format: docs/hardware.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "json_fields.hpp"
#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/core/units.hpp"
#include "strata/hw/hardware.hpp"

namespace strata::hw {
namespace detail {

void check_keys(const core::Json& obj, std::initializer_list<std::string_view> allowed,
                const core::JsonWhere& where) {
  core::expect_object(obj, where);
  for (const auto& [key, value] : obj.items()) {
    if (!key.empty() && key[0] == '_') continue;
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::vector<std::string> valid(allowed.begin(), allowed.end());
    core::fail(where.field(key), fmt::format("unknown field (valid: {})", core::join(valid)));
  }
}

std::optional<double> one_of_scaled(const core::Json& obj,
                                    std::initializer_list<std::pair<std::string_view, double>> keys,
                                    const core::JsonWhere& where, bool required, bool allow_zero) {
  std::optional<double> value;
  std::string found;
  std::vector<std::string> names;
  for (const auto& [key, scale] : keys) {
    names.emplace_back(key);
    if (!core::has_field(obj, key)) continue;
    if (value) core::fail(where, fmt::format("give only one of '{}' and '{}'", found, key));
    const double x = allow_zero ? core::get_nonnegative_number(obj, key, where)
                                : core::get_positive_number(obj, key, where);
    value = x * scale;
    found = key;
  }
  if (!value && required) core::fail(where, fmt::format("missing required field (one of: {})", core::join(names)));
  return value;
}

}  // namespace detail

namespace {
using core::Json;
using core::JsonWhere;
using detail::check_keys;
using detail::one_of_scaled;

std::string required_name(const Json& j, const JsonWhere& where) {
  std::string name = core::to_lower(core::get_string(j, "name", where));
  if (name.empty()) core::fail(where.field("name"), "must not be empty");
  core::check_name(name, where.field("name").str());
  return name;
}

std::string source_of(const Json& j, const JsonWhere& where, bool require_source) {
  if (require_source) {
    std::string s = core::get_string(j, "source", where);
    if (s.empty()) core::fail(where.field("source"), "must cite a source");
    return s;
  }
  return core::opt_string(j, "source", where).value_or("defined in " + where.origin);
}

std::map<Dtype, double> parse_peaks(const Json& j, const JsonWhere& where) {
  const bool tflops = core::has_field(j, "peak_tflops");
  if (tflops && core::has_field(j, "peak_flops")) core::fail(where, "give only one of 'peak_tflops' and 'peak_flops'");
  if (!tflops && !core::has_field(j, "peak_flops")) {
    core::fail(where, "missing required field (one of: peak_tflops, peak_flops)");
  }
  const char* key = tflops ? "peak_tflops" : "peak_flops";
  const double scale = tflops ? core::kTFLOP : 1.0;
  const JsonWhere w = where.field(key);
  const Json& obj = j.at(key);
  core::expect_object(obj, w);
  std::map<Dtype, double> peaks;
  for (const auto& [name, value] : obj.items()) {
    const Dtype d = parse_dtype(name, w.field(name).str());
    peaks[d] = core::get_positive_number(obj, name, w) * scale;
  }
  if (!peaks.count(Dtype::fp32)) core::fail(w, "must list fp32 (the fallback of every dtype)");
  return peaks;
}

template <class T>
void check_unique(const std::vector<T>& items, const JsonWhere& where) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (!seen.insert(items[i].name).second) {
      core::fail(where.index(i).field("name"), fmt::format("duplicate name '{}'", items[i].name));
    }
  }
}

const Json& entries(const Json& doc, std::string_view key, const JsonWhere& where) {
  const Json& arr = core::require_field(doc, key, where);
  core::expect_array(arr, where.field(key));
  return arr;
}
}  // namespace

GpuSpec gpu_from_json(const Json& j, const JsonWhere& where, bool require_source) {
  check_keys(j,
             {"name", "display_name", "vendor", "memory_bytes", "memory_gib", "memory_gb", "memory_bw_bytes_per_s",
              "memory_bw_gb_per_s", "peak_flops", "peak_tflops", "source"},
             where);
  GpuSpec g;
  g.name = required_name(j, where);
  g.display_name = core::opt_string(j, "display_name", where).value_or(g.name);
  g.vendor = core::opt_string(j, "vendor", where).value_or("custom");
  g.memory_bytes =
      *one_of_scaled(j, {{"memory_bytes", 1.0}, {"memory_gib", core::kGiB}, {"memory_gb", core::kGB}}, where, true);
  g.memory_bw_bytes_per_s =
      *one_of_scaled(j, {{"memory_bw_bytes_per_s", 1.0}, {"memory_bw_gb_per_s", core::kGB}}, where, true);
  g.peak_flops = parse_peaks(j, where);
  g.source = source_of(j, where, require_source);
  return g;
}

LinkSpec link_from_json(const Json& j, const JsonWhere& where, bool require_source) {
  check_keys(j, {"name", "description", "bw_bytes_per_s", "bw_gb_per_s", "bw_gbit_per_s", "latency_s", "latency_us",
                 "source"},
             where);
  LinkSpec l;
  l.name = required_name(j, where);
  l.description = core::opt_string(j, "description", where).value_or("");
  l.bw_bytes_per_s = *one_of_scaled(
      j, {{"bw_bytes_per_s", 1.0}, {"bw_gb_per_s", core::kGB}, {"bw_gbit_per_s", core::kGbit}}, where, true);
  l.latency_s = *one_of_scaled(j, {{"latency_s", 1.0}, {"latency_us", core::kMicrosecond}}, where, true,
                               /*allow_zero=*/true);
  l.source = source_of(j, where, require_source);
  return l;
}

std::optional<std::vector<std::vector<double>>> bw_matrix_from_json(const Json& obj, std::string_view key,
                                                                    std::size_t n, const JsonWhere& where) {
  const std::string gb_key = std::string(key) + "_gb_per_s";
  const bool si = core::has_field(obj, key), gb = core::has_field(obj, gb_key);
  if (!si && !gb) return std::nullopt;
  if (si && gb) core::fail(where, fmt::format("give only one of '{}' and '{}'", key, gb_key));
  const std::string used = si ? std::string(key) : gb_key;
  const double scale = si ? 1.0 : core::kGB;
  const JsonWhere w = where.field(used);
  const Json& rows = obj.at(used);
  core::expect_array(rows, w);
  if (rows.size() != n) core::fail(w, fmt::format("expected {} rows (one per device), got {}", n, rows.size()));
  std::vector<std::vector<double>> m(n, std::vector<double>(n, 0.0));
  for (std::size_t i = 0; i < n; ++i) {
    const JsonWhere wr = w.index(i);
    core::expect_array(rows[i], wr);
    if (rows[i].size() != n) core::fail(wr, fmt::format("expected {} entries, got {}", n, rows[i].size()));
    for (std::size_t k = 0; k < n; ++k) {
      const Json& v = rows[i][k];
      const JsonWhere we = wr.index(k);
      if (!v.is_number()) core::fail(we, fmt::format("expected a number, got {}", v.type_name()));
      const double x = v.get<double>();
      if (!std::isfinite(x)) core::fail(we, "must be finite");
      if (i != k && !(x > 0)) core::fail(we, fmt::format("bandwidth must be > 0, got {}", x));
      if (i == k && x < 0) core::fail(we, fmt::format("must be >= 0 (the diagonal is ignored), got {}", x));
      m[i][k] = x * scale;
    }
  }
  return m;
}

NodeSpec node_from_json(const Json& j, const JsonWhere& where, const Catalog& catalog, bool require_source) {
  check_keys(j, {"name", "gpu", "gpus", "intra_link", "nics", "nic_link", "intra_bw_matrix",
                 "intra_bw_matrix_gb_per_s", "cpu_cores", "gpus_per_host", "source"},
             where);
  NodeSpec n;
  n.name = required_name(j, where);
  n.gpu = catalog.gpu(core::get_string(j, "gpu", where), where.field("gpu").str()).name;
  const auto gpus = core::get_positive_int(j, "gpus", where);
  if (gpus > 65536) core::fail(where.field("gpus"), fmt::format("at most 65536 GPUs per node, got {}", gpus));
  n.gpus = static_cast<int>(gpus);
  n.intra_link = catalog.link(core::get_string(j, "intra_link", where), where.field("intra_link").str()).name;
  const auto nics = core::get_positive_int(j, "nics", where);
  if (nics > 65536) core::fail(where.field("nics"), fmt::format("at most 65536 NICs per node, got {}", nics));
  n.nics = static_cast<int>(nics);
  n.nic_link = catalog.link(core::get_string(j, "nic_link", where), where.field("nic_link").str()).name;
  n.intra_bw_matrix = bw_matrix_from_json(j, "intra_bw_matrix", static_cast<std::size_t>(n.gpus), where);
  if (const auto cores = core::opt_positive_int(j, "cpu_cores", where)) {
    if (*cores > 65536) core::fail(where.field("cpu_cores"), fmt::format("at most 65536 cores per node, got {}", *cores));
    n.cpu_cores = static_cast<int>(*cores);
  }
  if (const auto per_host = core::opt_positive_int(j, "gpus_per_host", where)) {
    if (*per_host > n.gpus || n.gpus % *per_host != 0) {
      std::string valid;
      for (int d = 1; d <= n.gpus; ++d)
        if (n.gpus % d == 0) valid += (valid.empty() ? "" : ", ") + std::to_string(d);
      core::fail(where.field("gpus_per_host"),
                 fmt::format("{} does not divide the node's {} GPUs into whole hosts (valid: {})", *per_host, n.gpus,
                             n.gpus > 4096 ? std::string("a divisor of gpus") : valid));
    }
    n.gpus_per_host = static_cast<int>(*per_host);
  }
  n.source = source_of(j, where, require_source);
  return n;
}

Catalog builtin_catalog() {
  Catalog c;
  const Json gpus = core::embedded_json("gpus.json");
  const JsonWhere wg{"data/gpus.json", ""};
  const Json& ga = entries(gpus, "gpus", wg);
  for (std::size_t i = 0; i < ga.size(); ++i) c.gpus.push_back(gpu_from_json(ga[i], wg.field("gpus").index(i), true));
  check_unique(c.gpus, wg.field("gpus"));

  const Json links = core::embedded_json("links.json");
  const JsonWhere wl{"data/links.json", ""};
  const Json& la = entries(links, "links", wl);
  for (std::size_t i = 0; i < la.size(); ++i) {
    c.links.push_back(link_from_json(la[i], wl.field("links").index(i), true));
  }
  check_unique(c.links, wl.field("links"));

  const Json nodes = core::embedded_json("nodes.json");
  const JsonWhere wn{"data/nodes.json", ""};
  const Json& na = entries(nodes, "nodes", wn);
  for (std::size_t i = 0; i < na.size(); ++i) {
    c.nodes.push_back(node_from_json(na[i], wn.field("nodes").index(i), c, true));
  }
  check_unique(c.nodes, wn.field("nodes"));
  return c;
}

core::OrderedJson to_json(const GpuSpec& g) {
  core::OrderedJson j;
  j["name"] = g.name;
  j["display_name"] = g.display_name;
  j["vendor"] = g.vendor;
  j["memory_bytes"] = g.memory_bytes;
  j["memory_bw_bytes_per_s"] = g.memory_bw_bytes_per_s;
  core::OrderedJson peaks = core::OrderedJson::object();
  for (const auto& [d, v] : g.peak_flops) peaks[std::string(to_string(d))] = v;
  j["peak_flops"] = peaks;
  j["source"] = g.source;
  return j;
}

core::OrderedJson to_json(const LinkSpec& l) {
  core::OrderedJson j;
  j["name"] = l.name;
  j["description"] = l.description;
  j["bw_bytes_per_s"] = l.bw_bytes_per_s;
  j["latency_s"] = l.latency_s;
  j["source"] = l.source;
  return j;
}

core::OrderedJson to_json(const NodeSpec& n) {
  core::OrderedJson j;
  j["name"] = n.name;
  j["gpu"] = n.gpu;
  j["gpus"] = n.gpus;
  j["intra_link"] = n.intra_link;
  j["nics"] = n.nics;
  j["nic_link"] = n.nic_link;
  if (n.intra_bw_matrix) j["intra_bw_matrix"] = *n.intra_bw_matrix;
  if (n.cpu_cores > 0) j["cpu_cores"] = n.cpu_cores;
  if (n.gpus_per_host > 0) j["gpus_per_host"] = n.gpus_per_host;
  j["source"] = n.source;
  return j;
}

}  // namespace strata::hw
