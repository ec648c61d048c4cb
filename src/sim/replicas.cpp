// sim/replicas: classes of identical data-parallel replicas and the expansion of a representative simulation
// to every replica (see replicas.hpp; the design is in docs/simulator.md §Scale).
#include "replicas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "strata/cost/layerwise.hpp"

namespace strata::sim::detail {
namespace {

ReplicaClasses each_its_own(int dp, std::string reason) {
  ReplicaClasses rc;
  rc.rep.resize(dp);
  std::iota(rc.rep.begin(), rc.rep.end(), 0);
  rc.count.assign(dp, 1);
  rc.class_of = rc.rep;
  rc.full_reason = std::move(reason);
  return rc;
}

// A NIC carrying the traffic of two replicas couples their timelines (their pipeline sends share it), which one
// representative per class cannot show: "" when no NIC is shared across replicas, else the reason.
std::string shared_nic(const hw::Cluster& c, const cost::Strategy& s) {
  std::unordered_map<int, int> owner;  // NIC → dp rank
  for (int d = 0; d < s.dp_cp(); ++d)
    for (int dev : replica_devices(s, d)) {
      const int nic = hw::nic_of(c, dev);
      if (nic < 0) continue;
      const auto [it, fresh] = owner.emplace(nic, d);
      if (!fresh && it->second != d)
        return fmt::format("NIC {} carries the traffic of dp replicas {} and {}", nic, it->second, d);
    }
  return "";
}

// The kinds of replica d's dp ring hops (per stage and tp rank: outgoing and incoming hop, intra-node or over a
// NIC). Members of a class have the same kinds, so the representative's ports stand for theirs exactly.
std::vector<char> ring_hop_kinds(const hw::Cluster& c, const cost::Strategy& s, int d) {
  std::vector<char> out;
  out.reserve(static_cast<std::size_t>(s.pp) * s.tp);
  const int ranks = s.dp_cp(), next = (d + 1) % ranks, prev = (d + ranks - 1) % ranks;
  auto same_node = [&](int a, int b) { return c.devices[a].node == c.devices[b].node; };
  for (int r = 0; r < s.pp; ++r)
    for (int j = 0; j < s.tp; ++j) {
      const int x = s.device(r, d, j);
      out.push_back(static_cast<char>(same_node(x, s.device(r, next, j)) + 2 * same_node(s.device(r, prev, j), x)));
    }
  return out;
}

// The devices whose topology a rank's costs read: per stage its own tp group and, with cp > 1, the rest of its
// cp group (ring attention: the worker's layer costs take the group, sim/from_cost.cpp), listed from its own
// position round the ring so that equal lists mean equal rings seen from the rank.
std::vector<int> class_devices(const cost::Strategy& s, int d) {
  if (s.cp <= 1) return replica_devices(s, d);
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(s.pp) * s.cp * s.tp);
  const int first = d / s.cp * s.cp, own = d % s.cp;
  for (int r = 0; r < s.pp; ++r)
    for (int j = 0; j < s.cp; ++j)
      for (int t = 0; t < s.tp; ++t) out.push_back(s.device(r, first + (own + j) % s.cp, t));
  return out;
}

}  // namespace

std::vector<int> replica_devices(const cost::Strategy& s, int dp_rank) {
  std::vector<int> out;
  out.reserve(static_cast<std::size_t>(s.pp) * s.tp);
  for (int r = 0; r < s.pp; ++r)
    for (int j = 0; j < s.tp; ++j) out.push_back(s.device(r, dp_rank, j));
  return out;
}

ReplicaClasses replica_classes(const hw::Cluster& c, const cost::Strategy& s, bool full) {
  if (full || s.dp_cp() <= 1) return each_its_own(std::max(1, s.dp_cp()), "");
  // The workers are the dp·cp ranks (with cp > 1 each cp rank is a worker of its own, rank d·cp + c).
  const int ranks = s.dp_cp();
  if (cost::is_layerwise(s, c)) return each_its_own(ranks, "per-layer strategy (simulated per replica)");
  if (c.bw_matrix) return each_its_own(ranks, "the cluster has a full bandwidth matrix (no symmetry to use)");
  if (std::string why = shared_nic(c, s); !why.empty()) return each_its_own(ranks, why);
  ReplicaClasses rc;
  rc.class_of.assign(ranks, -1);
  std::vector<std::vector<int>> rep_devices;
  std::vector<std::vector<char>> rep_hops;
  for (int d = 0; d < ranks; ++d) {
    const std::vector<int> devs = class_devices(s, d);
    const std::vector<char> hops = ring_hop_kinds(c, s, d);
    for (std::size_t k = 0; k < rc.rep.size() && rc.class_of[d] < 0; ++k)
      if (rep_hops[k] == hops && hw::same_topology(c, rep_devices[k], devs)) rc.class_of[d] = static_cast<int>(k);
    if (rc.class_of[d] < 0) {
      rc.class_of[d] = static_cast<int>(rc.rep.size());
      rc.rep.push_back(d);
      rc.count.push_back(0);
      rep_devices.push_back(devs);
      rep_hops.push_back(hops);
    }
    ++rc.count[rc.class_of[d]];
  }
  return rc;
}

void expand_replicas(const cost::Strategy& s, const ReplicaClasses& rc, Simulation& out) {
  PipelineInput& in = out.input;
  SimResult& res = out.result;
  const int k = in.dp, dp = s.dp_cp(), p = in.p;
  std::vector<WorkerInput> workers;
  std::vector<WorkerStats> stats;
  workers.reserve(static_cast<std::size_t>(p) * dp);
  stats.reserve(workers.capacity());
  double bubble_sum = 0;
  for (int r = 0; r < p; ++r)
    for (int d = 0; d < dp; ++d) {
      const int w = r * k + rc.class_of[d];
      workers.push_back(in.workers[w]);
      workers.back().devices.clear();
      for (int j = 0; j < s.tp; ++j) workers.back().devices.push_back(s.device(r, d, j));
      stats.push_back(res.workers[w]);
      bubble_sum += stats.back().bubble_fraction;
    }
  in.workers = std::move(workers);
  in.dp = dp;
  res.workers = std::move(stats);
  res.bubble_fraction = bubble_sum / static_cast<double>(res.workers.size());
}

}  // namespace strata::sim::detail
