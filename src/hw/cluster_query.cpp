// hw/cluster_query: the link queries on a built cluster — pair bandwidth/latency, a group's bottleneck and shape,
// NIC sharing, and whole-cluster summaries. On the cost model's hot path: group_links is O(group size) without a
// full matrix and allocates only for unsorted input. Semantics: docs/clusters.md.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "strata/hw/cluster.hpp"
#include "strata/core/units.hpp"

namespace strata::hw {
namespace {
using core::kInf;

const Device& device(const Cluster& c, int d) {
  // An out-of-range id is a caller bug, not user input.
  if (d < 0 || d >= c.num_devices()) {
    throw std::out_of_range(fmt::format("device {} out of range (cluster has {})", d, c.num_devices()));
  }
  return c.devices[static_cast<std::size_t>(d)];
}

// Local device i of a node with g GPUs and N NICs uses NIC ⌊i·N/g⌋ (even spread).
int local_nic(const Node& n, int local) {
  return static_cast<int>(static_cast<long long>(local) * n.nics / n.num_devices);
}
// NICs a local device owns: ⌊(i+1)·N/g⌋ − ⌊i·N/g⌋ when N ≥ g (p5: 4), else it shares one.
int nics_owned(const Node& n, int local) {
  if (n.nics <= n.num_devices) return 1;
  const long long g = n.num_devices, N = n.nics;
  return static_cast<int>((local + 1) * N / g - local * N / g);
}
double local_nic_bw(const Node& n, int local) { return n.nic.bw_bytes_per_s * nics_owned(n, local); }

double pair_bw(const std::vector<std::vector<double>>& m, int i, int j) {
  const auto a = static_cast<std::size_t>(i), b = static_cast<std::size_t>(j);
  return std::min(m[a][b], m[b][a]);
}

// Bottleneck among the members of one node (ids sorted, all on `node`, at least two).
double node_intra_bottleneck(const Cluster& c, const Node& node, std::span<const int> ids) {
  if (!node.intra_bw_matrix) return node.intra.bw_bytes_per_s;
  double bw = kInf;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    const int lp = c.devices[static_cast<std::size_t>(ids[p])].local_index;
    for (std::size_t q = p + 1; q < ids.size(); ++q) {
      const int lq = c.devices[static_cast<std::size_t>(ids[q])].local_index;
      if (lp != lq) bw = std::min(bw, pair_bw(*node.intra_bw_matrix, lp, lq));
    }
  }
  return bw;
}

struct Scan {
  double intra_bw = kInf, min_nic_bw = kInf, intra_lat = 0, nic_lat = 0;
  int num_nodes = 0, max_per_node = 0, min_per_node = INT_MAX, racks = 0, max_per_nic = 0;
};

// One pass over node runs of sorted ids (node index is monotone in device id, and so are rack and NIC).
Scan scan_runs(const Cluster& c, std::span<const int> ids) {
  Scan s;
  int last_rack = -1;
  std::size_t i = 0;
  while (i < ids.size()) {
    const Node& node = c.nodes[static_cast<std::size_t>(c.devices[static_cast<std::size_t>(ids[i])].node)];
    std::size_t j = i;
    while (j < ids.size() && c.devices[static_cast<std::size_t>(ids[j])].node == node.id) ++j;
    const int r = static_cast<int>(j - i);
    ++s.num_nodes;
    s.max_per_node = std::max(s.max_per_node, r);
    s.min_per_node = std::min(s.min_per_node, r);
    if (node.rack != last_rack) {
      ++s.racks;
      last_rack = node.rack;
    }
    if (r >= 2) {
      s.intra_lat = std::max(s.intra_lat, node.intra.latency_s);
      s.intra_bw = std::min(s.intra_bw, node_intra_bottleneck(c, node, ids.subspan(i, j - i)));
    }
    int run = 0, last_nic = -1;
    for (std::size_t k = i; k < j; ++k) {
      const int local = c.devices[static_cast<std::size_t>(ids[k])].local_index;
      const int nic = local_nic(node, local);
      run = nic == last_nic ? run + 1 : 1;
      last_nic = nic;
      s.max_per_nic = std::max(s.max_per_nic, run);
      s.min_nic_bw = std::min(s.min_nic_bw, local_nic_bw(node, local));
    }
    s.nic_lat = std::max(s.nic_lat, node.nic.latency_s);
    i = j;
  }
  return s;
}

// With a full matrix every pair's bandwidth comes from it: O(n²) over the group.
void matrix_override(const Cluster& c, std::span<const int> ids, GroupLinks& g) {
  double intra = kInf, inter = kInf;
  for (std::size_t p = 0; p < ids.size(); ++p) {
    for (std::size_t q = p + 1; q < ids.size(); ++q) {
      if (ids[p] == ids[q]) continue;
      const double bw = pair_bw(*c.bw_matrix, ids[p], ids[q]);
      const bool same = c.devices[static_cast<std::size_t>(ids[p])].node == c.devices[static_cast<std::size_t>(ids[q])].node;
      (same ? intra : inter) = std::min(same ? intra : inter, bw);
    }
  }
  g.intra_bw_bytes_per_s = intra < kInf ? intra : 0;
  g.inter_bw_bytes_per_s = inter < kInf ? inter : 0;
  g.bw_bytes_per_s = std::min(intra, inter);
}
}  // namespace

double nic_bandwidth(const Cluster& c, int d) {
  const Device& dv = device(c, d);
  return local_nic_bw(c.nodes[static_cast<std::size_t>(dv.node)], dv.local_index);
}

int nic_of(const Cluster& c, int d) {
  const Device& dv = device(c, d);
  const Node& n = c.nodes[static_cast<std::size_t>(dv.node)];
  return n.first_nic + local_nic(n, dv.local_index);
}

int gpus_per_nic(const Cluster& c, int d) {
  const Device& dv = device(c, d);
  const Node& n = c.nodes[static_cast<std::size_t>(dv.node)];
  if (n.nics >= n.num_devices) return 1;
  // Locals using NIC k are those with ⌊i·N/g⌋ = k, i.e. i ∈ [⌈k·g/N⌉, ⌈(k+1)·g/N⌉).
  const long long g = n.num_devices, N = n.nics, k = local_nic(n, dv.local_index);
  auto ceil_div = [](long long a, long long b) { return (a + b - 1) / b; };
  return static_cast<int>(ceil_div((k + 1) * g, N) - ceil_div(k * g, N));
}

int num_nics(const Cluster& c) { return c.nodes.empty() ? 0 : c.nodes.back().first_nic + c.nodes.back().nics; }

double link_bandwidth(const Cluster& c, int a, int b) {
  const Device& da = device(c, a);
  const Device& db = device(c, b);
  if (a == b) return kInf;
  if (c.bw_matrix) return pair_bw(*c.bw_matrix, a, b);
  if (da.node == db.node) {
    const Node& n = c.nodes[static_cast<std::size_t>(da.node)];
    return n.intra_bw_matrix ? pair_bw(*n.intra_bw_matrix, da.local_index, db.local_index) : n.intra.bw_bytes_per_s;
  }
  const Node& na = c.nodes[static_cast<std::size_t>(da.node)];
  const Node& nb = c.nodes[static_cast<std::size_t>(db.node)];
  const double bw = std::min(local_nic_bw(na, da.local_index), local_nic_bw(nb, db.local_index));
  return na.rack == nb.rack ? bw : bw / c.rack_oversubscription;
}

double link_latency(const Cluster& c, int a, int b) {
  const Device& da = device(c, a);
  const Device& db = device(c, b);
  if (a == b) return 0;
  const Node& na = c.nodes[static_cast<std::size_t>(da.node)];
  if (da.node == db.node) return na.intra.latency_s;
  return std::max(na.nic.latency_s, c.nodes[static_cast<std::size_t>(db.node)].nic.latency_s);
}

GroupLinks group_links(const Cluster& c, std::span<const int> devices) {
  GroupLinks g;
  if (devices.empty()) {
    g.bw_bytes_per_s = kInf;
    g.num_nodes = g.max_devices_per_node = g.min_devices_per_node = g.max_devices_per_nic = g.num_racks = 0;
    return g;
  }
  bool increasing = true;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    device(c, devices[i]);
    if (i > 0 && devices[i] <= devices[i - 1]) increasing = false;
  }
  std::vector<int> sorted;  // only for unsorted input
  std::span<const int> ids = devices;
  if (!increasing) {
    sorted.assign(devices.begin(), devices.end());
    std::sort(sorted.begin(), sorted.end());
    ids = sorted;
  }
  const Scan s = scan_runs(c, ids);
  g.num_nodes = s.num_nodes;
  g.intra_node = s.num_nodes == 1;
  g.max_devices_per_node = s.max_per_node;
  g.min_devices_per_node = s.min_per_node;
  g.uniform_per_node = s.max_per_node == s.min_per_node;
  g.max_devices_per_nic = s.max_per_nic;
  g.num_racks = s.racks;
  g.intra_bw_bytes_per_s = s.intra_bw < kInf ? s.intra_bw : 0;
  g.intra_latency_s = s.intra_lat;
  double inter = kInf;
  if (s.num_nodes >= 2) {
    // The member with the slowest NIC has a partner on another node (and in another rack when racks ≥ 2, where
    // oversubscription divides every pair), so the inter-node bottleneck is that NIC's bandwidth.
    inter = s.racks >= 2 ? s.min_nic_bw / c.rack_oversubscription : s.min_nic_bw;
    g.inter_bw_bytes_per_s = inter;
    g.inter_latency_s = s.nic_lat;
  }
  g.bw_bytes_per_s = std::min(s.intra_bw, inter);
  g.latency_s = std::max(g.intra_latency_s, g.inter_latency_s);
  if (c.bw_matrix) matrix_override(c, ids, g);
  return g;
}

bool same_node(const Cluster& c, std::span<const int> devices) {
  if (devices.empty()) return true;
  const int node = device(c, devices[0]).node;
  for (int d : devices) {
    if (device(c, d).node != node) return false;
  }
  return true;
}

namespace {
bool same_node_kind(const Node& a, const Node& b) {
  return a.num_devices == b.num_devices && a.nics == b.nics && a.node_type == b.node_type && a.num_devices == b.num_devices && a.intra.name == b.intra.name &&
         a.intra.bw_bytes_per_s == b.intra.bw_bytes_per_s && a.intra.latency_s == b.intra.latency_s &&
         a.nics == b.nics && a.nic.bw_bytes_per_s == b.nic.bw_bytes_per_s && a.nic.latency_s == b.nic.latency_s &&
         a.intra_bw_matrix == b.intra_bw_matrix;
}
}  // namespace

namespace {
bool consecutive(std::span<const int> v) {
  bool ok = true;
  for (std::size_t i = 0; i < v.size(); ++i) ok &= v[i] == v[0] + static_cast<int>(i);
  return ok;
}
}  // namespace

bool same_topology(const Cluster& c, std::span<const int> a, std::span<const int> b) {
  if (c.bw_matrix || a.size() != b.size()) return false;
  if (a.empty()) return true;
  const auto& da0 = c.devices[a[0]];
  const auto& db0 = c.devices[b[0]];
  const int ra0 = c.nodes[da0.node].rack, rb0 = c.nodes[db0.node].rack;
  const int node_shift = db0.node - da0.node;
  if (consecutive(a) && consecutive(b)) {
    // Runs of consecutive device ids (node-major placements): the per-device conditions below hold for a whole
    // node run once they hold for its first device (same node kind ⇒ same size, one GPU type per node), so the
    // walk is per node.
    const int n = static_cast<int>(a.size());
    for (int i = 0; i < n;) {
      const auto& da = c.devices[a[0] + i];
      const auto& db = c.devices[b[0] + i];
      if (da.local_index != db.local_index || da.gpu_type != db.gpu_type || db.node - da.node != node_shift)
        return false;
      const auto& na = c.nodes[da.node];
      const auto& nb = c.nodes[db.node];
      if (na.rack - ra0 != nb.rack - rb0 || (na.id != nb.id && !same_node_kind(na, nb))) return false;
      i += std::max(1, std::min(n - i, na.num_devices - da.local_index));
    }
    return true;
  }
  int last_a = -1, last_b = -1;  // the node pair checked last (node runs repeat it)
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& da = c.devices[a[i]];
    const auto& db = c.devices[b[i]];
    if (da.local_index != db.local_index || da.gpu_type != db.gpu_type || db.node - da.node != node_shift)
      return false;
    if (da.node == last_a && db.node == last_b) continue;
    last_a = da.node;
    last_b = db.node;
    const auto& na = c.nodes[da.node];
    const auto& nb = c.nodes[db.node];
    if (na.rack - ra0 != nb.rack - rb0 || (na.id != nb.id && !same_node_kind(na, nb))) return false;
  }
  return true;
}

int identical_whole_nodes(const Cluster& c, int first, int count) {
  if (c.bw_matrix || count <= 0 || first < 0 || first + count > c.num_devices()) return 0;
  const auto& d0 = c.devices[static_cast<std::size_t>(first)];
  const auto& dl = c.devices[static_cast<std::size_t>(first + count - 1)];
  const Node& n0 = c.nodes[static_cast<std::size_t>(d0.node)];
  if (d0.local_index != 0 || dl.local_index != c.nodes[static_cast<std::size_t>(dl.node)].num_devices - 1) return 0;
  for (int node = d0.node + 1; node <= dl.node; ++node) {
    const Node& n = c.nodes[static_cast<std::size_t>(node)];
    if (n.rack != n0.rack || !same_node_kind(n0, n)) return 0;
  }
  // Device ids are node-major, so the range is exactly these nodes' devices when the counts add up.
  return (dl.node - d0.node + 1) * n0.num_devices == count ? n0.num_devices : 0;
}

bool same_boundary_topology(const Cluster& c, std::span<const int> from, std::span<const int> to,
                            std::span<const int> pf, std::span<const int> pt) {
  if (from.empty() || to.empty() || pf.empty() || pt.empty()) return from.empty() && pf.empty() && to.empty() && pt.empty();
  const auto node = [&](int d) { return c.devices[d].node; };
  const auto rack = [&](int d) { return c.nodes[c.devices[d].node].rack; };
  return node(to[0]) - node(from[0]) == node(pt[0]) - node(pf[0]) &&
         rack(to[0]) - rack(from[0]) == rack(pt[0]) - rack(pf[0]) && same_topology(c, from, pf) &&
         same_topology(c, to, pt);
}

double total_memory_bytes(const Cluster& c) {
  double total = 0;
  for (const auto& d : c.devices) total += c.gpu_types[static_cast<std::size_t>(d.gpu_type)].memory_bytes;
  return total;
}

double total_peak_flops(const Cluster& c, Dtype dt) {
  // Each type's peak once (GpuSpec::peak applies the fallback rule), then the sum in device order (the same
  // additions, so the same bits, as summing peak() per device).
  std::vector<double> peak(c.gpu_types.size());
  for (std::size_t t = 0; t < peak.size(); ++t) peak[t] = c.gpu_types[t].peak(dt);
  double total = 0;
  for (const auto& d : c.devices) total += peak[static_cast<std::size_t>(d.gpu_type)];
  return total;
}

namespace {
// The slowest GPU pair of a node with an intra-node bandwidth matrix (link_classes, tier_rows).
double slowest_matrix_pair(const Node& n) {
  double bw = kInf;
  for (int i = 0; i < n.num_devices; ++i)
    for (int k = i + 1; k < n.num_devices; ++k) bw = std::min(bw, pair_bw(*n.intra_bw_matrix, i, k));
  return bw;
}
}  // namespace

std::vector<TierRow> tier_rows(const Cluster& c) {
  std::vector<TierRow> out;
  for (const auto& n : c.nodes) {
    const std::string link = n.intra_bw_matrix ? "custom matrix" : n.intra.name;
    auto it = std::find_if(out.begin(), out.end(), [&](const TierRow& r) {
      return r.node_type == n.node_type && r.domain_gpus == n.num_devices && r.domain_link == link &&
             r.nics == n.nics && r.nic_link == n.nic.name;
    });
    if (it != out.end()) {
      ++it->nodes;
      continue;
    }
    TierRow r;
    r.node_type = n.node_type;
    r.nodes = 1;
    r.gpus_per_host = n.gpus_per_host > 0 ? n.gpus_per_host : n.num_devices;
    r.hosts = n.num_devices / std::max(1, r.gpus_per_host);
    r.domain_gpus = n.num_devices;
    r.domain_link = link;
    r.domain_bw_bytes_per_s = n.intra.bw_bytes_per_s;
    if (n.intra_bw_matrix) r.domain_bw_bytes_per_s = n.num_devices < 2 ? 0.0 : slowest_matrix_pair(n);
    r.nic_link = n.nic.name;
    r.nics = n.nics;
    r.nic_bw_per_gpu_bytes_per_s = n.nic.bw_bytes_per_s * n.nics / std::max(1, n.num_devices);
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<LinkClass> link_classes(const Cluster& c) {
  // Keyed by (scope order, first appearance) so the output order is deterministic.
  std::vector<LinkClass> out;
  auto add = [&](const std::string& scope, const std::string& link, double bw, double lat) -> LinkClass& {
    for (auto& lc : out) {
      if (lc.scope == scope && lc.link == link && lc.bw_bytes_per_s == bw) return lc;
    }
    out.push_back(LinkClass{scope, link, bw, lat, 0});
    return out.back();
  };
  if (c.bw_matrix) {
    // Distinct matrix values per scope, fastest first; `nodes` counts the nodes with a pair of that class.
    std::map<std::tuple<int, double, int>, bool> seen;  // (scope, -bw, node) → counted
    std::map<std::pair<int, double>, LinkClass> classes;
    const int n = c.num_devices();
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        const bool intra = c.devices[static_cast<std::size_t>(a)].node == c.devices[static_cast<std::size_t>(b)].node;
        const double bw = pair_bw(*c.bw_matrix, a, b);
        auto& lc = classes[{intra ? 0 : 1, -bw}];
        lc.scope = intra ? "intra" : "inter";
        lc.link = "bw_matrix";
        lc.bw_bytes_per_s = bw;
        lc.latency_s = std::max(lc.latency_s, link_latency(c, a, b));
        for (int node : {c.devices[static_cast<std::size_t>(a)].node, c.devices[static_cast<std::size_t>(b)].node}) {
          if (!seen.emplace(std::tuple{intra ? 0 : 1, -bw, node}, true).second) continue;
          ++lc.nodes;
        }
      }
    }
    for (auto& [key, lc] : classes) out.push_back(lc);
    return out;
  }
  for (const auto& n : c.nodes) {
    if (n.num_devices < 2) continue;
    double bw = n.intra.bw_bytes_per_s;
    std::string name = n.intra.name;
    if (n.intra_bw_matrix) {
      bw = slowest_matrix_pair(n);
      name += " (pair matrix)";
    }
    ++add("intra", name, bw, n.intra.latency_s).nodes;
  }
  if (c.nodes.size() >= 2) {
    for (const auto& n : c.nodes) {
      double bw = kInf;
      for (int i = 0; i < n.num_devices; ++i) bw = std::min(bw, local_nic_bw(n, i));
      const std::string name = n.nics > 1 ? fmt::format("{}x {}", n.nics, n.nic.name) : n.nic.name;
      ++add("inter", name, bw, n.nic.latency_s).nodes;
    }
    // Across racks every pair is divided by the oversubscription.
    const bool racks = c.nodes.back().rack != c.nodes.front().rack;
    if (racks && c.rack_oversubscription > 1) {
      for (const auto& n : c.nodes) {
        double bw = kInf;
        for (int i = 0; i < n.num_devices; ++i) bw = std::min(bw, local_nic_bw(n, i));
        const std::string name = fmt::format("{}x {} / {:g}", n.nics, n.nic.name, c.rack_oversubscription);
        ++add("inter-rack", name, bw / c.rack_oversubscription, n.nic.latency_s).nodes;
      }
    }
  }
  return out;
}

}  // namespace strata::hw
