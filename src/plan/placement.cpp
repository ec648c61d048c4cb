// plan/placement: Megatron, heterogeneity-aware and simulated-annealing device placements (see the header).
#include "strata/plan/placement.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::plan {
namespace {

// splitmix64: a tiny, fully specified generator so annealing is identical on every platform/library.
struct Rng {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  double unit() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
};

double intra_bw(const hw::Node& n, int a, int b) {
  if (n.intra_bw_matrix) return (*n.intra_bw_matrix)[a][b];
  return n.intra.bw_bytes_per_s;
}

// tp groups inside one node (local indices): greedy on the bandwidth matrix (lowest free device, then the free
// device with the highest min-bandwidth to the group, ties by index); consecutive without a matrix.
std::vector<std::vector<int>> node_tp_groups(const hw::Node& n, int tp) {
  std::vector<std::vector<int>> groups;
  std::vector<char> used(n.num_devices, 0);
  for (int u = 0; u < n.num_devices; ++u) {
    if (used[u]) continue;
    std::vector<int> g{u};
    used[u] = 1;
    while (static_cast<int>(g.size()) < tp) {
      int best = -1;
      double best_bw = -1;
      for (int v = 0; v < n.num_devices; ++v) {
        if (used[v]) continue;
        if (!n.intra_bw_matrix) {  // no matrix: consecutive
          best = v;
          break;
        }
        double mn = INFINITY;
        for (int x : g) mn = std::min(mn, intra_bw(n, x, v));
        if (mn > best_bw) {
          best_bw = mn;
          best = v;
        }
      }
      g.push_back(best);
      used[best] = 1;
    }
    for (int& x : g) x += n.first_device;
    groups.push_back(std::move(g));
  }
  return groups;
}

// The tp groups (or single devices when tp does not divide every node) stably ordered by the rank of their GPU
// type. A node holds one GPU type, so that is the nodes' groups taken rank by rank in node order: O(devices).
std::vector<int> placement_for_type_order(const hw::Cluster& c, int tp, const std::vector<int>& type_rank) {
  bool tp_in_nodes = true;
  for (const auto& n : c.nodes)
    if (n.num_devices % tp != 0) tp_in_nodes = false;
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(c.num_devices()));
  const int k = static_cast<int>(c.gpu_types.size());
  for (int rank = 0; rank < k; ++rank)
    for (const auto& n : c.nodes) {
      if (n.num_devices == 0 || type_rank[c.devices[n.first_device].gpu_type] != rank) continue;
      if (!tp_in_nodes || (!n.intra_bw_matrix && tp > 0)) {  // single devices, or consecutive tp groups
        for (int d = 0; d < n.num_devices; ++d) out.push_back(n.first_device + d);
        continue;
      }
      for (const auto& g : node_tp_groups(n, tp)) out.insert(out.end(), g.begin(), g.end());
    }
  return out;
}

double type_speed(const hw::GpuSpec& g) { return g.peak(hw::Dtype::bf16); }

}  // namespace

std::string_view to_string(PlacementMode m) {
  switch (m) {
    case PlacementMode::megatron: return "megatron";
    case PlacementMode::hetero: return "hetero";
    case PlacementMode::anneal: return "anneal";
  }
  return "?";
}

PlacementMode parse_placement_mode(std::string_view text, const std::string& where) {
  if (text == "megatron") return PlacementMode::megatron;
  if (text == "hetero") return PlacementMode::hetero;
  if (text == "anneal") return PlacementMode::anneal;
  throw core::InputError(fmt::format("{}: unknown placement '{}' (valid: megatron, hetero, anneal)", where, text));
}

std::vector<int> megatron_placement(const hw::Cluster& c) {
  std::vector<int> p(c.num_devices());
  std::iota(p.begin(), p.end(), 0);
  return p;
}

std::vector<PlacementCandidate> hetero_placements(const hw::Cluster& c, const cost::Dims& d) {
  const int tp = d.tp;  // the candidates depend on tp only
  std::vector<PlacementCandidate> out;
  out.push_back({megatron_placement(c), "megatron"});
  const int k = static_cast<int>(c.gpu_types.size());
  std::vector<std::vector<int>> orders;  // orders[i] = type indices, first = earliest in the pipeline
  std::vector<int> perm(k);
  std::iota(perm.begin(), perm.end(), 0);
  if (k <= 4) {
    do orders.push_back(perm);
    while (std::next_permutation(perm.begin(), perm.end()));
  } else {
    orders.push_back(perm);
    auto fast = perm;
    std::stable_sort(fast.begin(), fast.end(),
                     [&](int a, int b) { return type_speed(c.gpu_types[a]) > type_speed(c.gpu_types[b]); });
    orders.push_back(fast);
    std::reverse(fast.begin(), fast.end());
    orders.push_back(fast);
  }
  for (const auto& order : orders) {
    std::vector<int> rank(k);
    std::vector<std::string> names;
    for (int i = 0; i < k; ++i) {
      rank[order[i]] = i;
      names.push_back(c.gpu_types[order[i]].name);
    }
    PlacementCandidate cand{placement_for_type_order(c, tp, rank),
                            k == 1 ? std::string("tp-on-fastest-links") : "types " + core::join(names, ">")};
    bool dup = false;
    for (const auto& o : out) dup = dup || o.placement == cand.placement;
    if (!dup) out.push_back(std::move(cand));
  }
  return out;
}

std::vector<int> anneal_placement(const hw::Cluster& c, const cost::Dims& d, const std::vector<int>& start,
                                  const std::function<double(const std::vector<int>&)>& cost, std::uint64_t seed,
                                  int iterations) {
  const int n = d.world(), tp = d.tp;
  std::vector<int> cur = start, best = start;
  double cur_cost = cost(cur), best_cost = cur_cost;
  if (n < 2 || iterations <= 0 || !std::isfinite(cur_cost)) return best;
  Rng rng{seed};
  const double t0 = 0.02 * cur_cost;
  const int blocks = n / tp;
  for (int it = 0; it < iterations; ++it) {
    const double temp = t0 * std::pow(1e-3, static_cast<double>(it) / iterations);
    std::vector<int> next = cur;
    if (tp > 1 && blocks > 1 && rng.below(2) == 0) {
      // swap two whole tp groups (keeps every tp group intact)
      const int a = rng.below(blocks), b = rng.below(blocks);
      if (a == b) continue;
      std::swap_ranges(next.begin() + a * tp, next.begin() + (a + 1) * tp, next.begin() + b * tp);
    } else {
      // swap two devices of the same GPU type (tp groups never mix types)
      const int i = rng.below(n), j = rng.below(n);
      if (i == j || c.devices[next[i]].gpu_type != c.devices[next[j]].gpu_type) continue;
      std::swap(next[i], next[j]);
    }
    const double nc = cost(next);
    if (!std::isfinite(nc)) continue;
    if (nc < cur_cost || rng.unit() < std::exp(-(nc - cur_cost) / std::max(temp, 1e-300))) {
      cur = std::move(next);
      cur_cost = nc;
      if (cur_cost < best_cost) {
        best_cost = cur_cost;
        best = cur;
      }
    }
  }
  return best;
}

std::vector<int> stage_gpu_types(const hw::Cluster& c, const cost::Strategy& s) {
  std::vector<int> out;
  if (!cost::is_uniform(s)) {  // per-stage form: the stages hold their devices
    for (const auto& v : cost::stage_views(s, c)) out.push_back(v.gpu_type);
    return out;
  }
  for (int st = 0; st < s.pp; ++st) {
    int t = -2;
    for (int r = 0; r < s.dp_cp() * s.tp; ++r) {
      const int dev = s.placement.empty() ? st * s.dp_cp() * s.tp + r : s.placement[st * s.dp_cp() * s.tp + r];
      const int g = c.devices[dev].gpu_type;
      t = (t == -2 || t == g) ? g : -1;
    }
    out.push_back(t);
  }
  return out;
}

std::string placement_summary(const hw::Cluster& c, const cost::Strategy& s) {
  const auto types = stage_gpu_types(c, s);
  std::string out;
  for (std::size_t i = 0; i < types.size();) {
    std::size_t j = i;
    while (j + 1 < types.size() && types[j + 1] == types[i]) ++j;
    const std::string name = types[i] < 0 ? "mixed" : c.gpu_types[types[i]].name;
    if (!out.empty()) out += ", ";
    out += i == j ? fmt::format("stage {}: {}", i, name)
                  : fmt::format("stages {}-{}: {}", i, j, name);
    i = j + 1;
  }
  return out;
}

std::string group_tiers_summary(const hw::Cluster& c, const cost::Strategy& s) {
  const auto views = cost::stage_views(s, c);
  if (views.empty() || views.front().devices.empty()) return "";
  const auto& v = views.front();
  const int tpcp = v.tp * v.cp;
  auto nodes_of = [&](auto first, int count, int stride) {
    std::vector<int> nodes;
    for (int i = 0; i < count; ++i) nodes.push_back(c.devices[v.devices[first + i * stride]].node);
    std::sort(nodes.begin(), nodes.end());
    return static_cast<int>(std::unique(nodes.begin(), nodes.end()) - nodes.begin());
  };
  const hw::Node& n0 = c.nodes[c.devices[v.devices[0]].node];
  const std::string domain = c.bw_matrix ? "node" : fmt::format("{} domain ({} GPUs)", n0.intra.name, n0.num_devices);
  auto where = [&](int nodes) { return nodes == 1 ? "inside one " + domain : fmt::format("across {} nodes", nodes); };
  std::vector<std::string> parts;
  if (tpcp > 1) {
    const std::string name = v.cp > 1 ? fmt::format("tp {} x cp {}", v.tp, v.cp) : fmt::format("tp {}", v.tp);
    parts.push_back(name + " " + where(nodes_of(0, tpcp, 1)));
  }
  if (v.dp > 1) parts.push_back(fmt::format("dp {} {}", v.dp, where(nodes_of(0, v.dp, tpcp))));
  if (views.size() > 1) {
    bool crosses = false;
    for (std::size_t i = 1; i < views.size() && !crosses; ++i)
      crosses = c.devices[views[i].devices[0]].node != c.devices[views[i - 1].devices[0]].node;
    parts.push_back(fmt::format("pp {} {}", views.size(), crosses ? "across nodes" : "inside one node"));
  }
  return parts.empty() ? "one device" : core::join(parts, "; ");
}

std::string device_ranges(std::span<const int> devices) {
  std::string out;
  for (std::size_t i = 0; i < devices.size();) {
    std::size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += i == j ? std::to_string(devices[i]) : fmt::format("{}-{}", devices[i], devices[j]);
    i = j + 1;
  }
  return out;
}

std::string placement_ranges(const hw::Cluster& c, const cost::Strategy& s) {
  std::string out;
  const auto views = cost::stage_views(s, c);
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    const std::string gpu = v.gpu_type < 0 ? "mixed" : c.gpu_types[v.gpu_type].name;
    out += fmt::format("{}stage {} {} devices {}", i ? "; " : "", i, gpu, device_ranges(v.devices));
  }
  return out;
}

}  // namespace strata::plan
