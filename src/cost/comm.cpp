// cost/comm: α–β collective times on actual device groups — flat ring on one node at the group's bottleneck link
// (AMP eq. 3), hierarchical intra/inter-node where the group spans nodes evenly, NIC sharing. See comm.hpp.
#include "strata/cost/comm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/constants.hpp"
#include "strata/core/units.hpp"

namespace strata::cost {
namespace {

using core::kInf;

const CostConstants& consts(const CommOptions& o) { return o.constants ? *o.constants : builtin_constants(); }

// β term helper that treats an infinite bandwidth as free.
double per_bw(double bytes, double bw) { return (bw == kInf || bytes <= 0) ? 0.0 : bytes / bw; }

}  // namespace

std::string_view to_string(Collective c) {
  switch (c) {
    case Collective::allreduce: return "allreduce";
    case Collective::allreduce_tree: return "allreduce_tree";
    case Collective::allgather: return "allgather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::broadcast: return "broadcast";
    case Collective::p2p: return "p2p";
  }
  return "allreduce";
}

Collective parse_collective(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "allreduce" || t == "all_reduce" || t == "allreduce_ring") return Collective::allreduce;
  if (t == "allreduce_tree") return Collective::allreduce_tree;
  if (t == "allgather" || t == "all_gather") return Collective::allgather;
  if (t == "reduce_scatter" || t == "reducescatter") return Collective::reduce_scatter;
  if (t == "all_to_all" || t == "alltoall") return Collective::all_to_all;
  if (t == "broadcast") return Collective::broadcast;
  if (t == "p2p" || t == "send") return Collective::p2p;
  throw core::InputError(fmt::format(
      "{}: unknown collective '{}' (valid: allreduce, allreduce_tree, allgather, reduce_scatter, all_to_all, "
      "broadcast, p2p)",
      where, text));
}

// ---- closed forms ----------------------------------------------------------------------------------------------
double ring_allreduce_closed(int n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  return 2.0 * (n - 1) * (lat + per_bw(bytes / n, bw));
}
double ring_allgather_closed(int n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  return (n - 1) * (lat + per_bw(bytes / n, bw));
}
double tree_allreduce_closed(int n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  const double depth = std::ceil(std::log2(static_cast<double>(n)));
  return 2.0 * depth * lat + 2.0 * per_bw(bytes, bw);
}
double all_to_all_closed(int n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  return (n - 1) * lat + per_bw(bytes * (n - 1) / n, bw);
}
double broadcast_closed(int n, double bytes, double bw, double lat) {
  if (n <= 1) return 0;
  return (n - 1) * lat + per_bw(bytes, bw);
}

// ---- NCCL algorithms across nodes ------------------------------------------------------------------------------
double nccl_ring_time(const NcclGroupShape& g, double bytes, int passes) {
  const int n = g.ranks, nodes = g.nodes;
  if (n <= 1 || bytes < 0) return 0;
  // NCCL (src/graph/tuning.cc): a ring pass has n−1 steps, nodes−1 of which cross a node boundary; each step
  // pays its hop's latency.
  const double latency = (n - nodes) * g.intra_latency_s + (nodes - 1) * g.inter_latency_s;
  // Every chunk but one enters each node once per pass (one ring channel per NIC), and every GPU forwards the
  // same bytes over its intra-node link; the pipelined ring runs at the slower of the two.
  const double moved = bytes * (n - 1) / n;
  const double bw_time = std::max(per_bw(moved, g.node_nic_bw_bytes_per_s), per_bw(moved, g.intra_bw_bytes_per_s));
  return passes * (latency + bw_time);
}

double nccl_tree_allreduce_time(const NcclGroupShape& g, double bytes) {
  const int n = g.ranks, nodes = std::max(1, g.nodes);
  if (n <= 1 || bytes < 0) return 0;
  const int k = n / nodes;
  if (nodes == 1) return tree_allreduce_closed(n, bytes, g.intra_bw_bytes_per_s, g.intra_latency_s);
  // NCCL's tree: a chain through the k GPUs of each node and a double binary tree over the nodes, reduce up and
  // broadcast down: 2·(⌈log2 nodes⌉·α_inter + (k−1)·α_intra). Each node receives about the whole buffer in each
  // phase (two half-trees) through its NICs, and each GPU forwards it along the chain: 2·M at the slower of both.
  const double depth = std::ceil(std::log2(static_cast<double>(nodes)));
  const double latency = 2.0 * (depth * g.inter_latency_s + (k - 1) * g.intra_latency_s);
  const double bw_time = std::max(per_bw(2.0 * bytes, g.node_nic_bw_bytes_per_s),
                                  per_bw(2.0 * bytes, g.intra_bw_bytes_per_s));
  return latency + bw_time;
}

// ---- group bandwidth -------------------------------------------------------------------------------------------
GroupBandwidth group_bandwidth(const hw::Cluster& c, std::span<const int> group, const CommOptions& o) {
  GroupBandwidth g;
  g.intra_bw_bytes_per_s = kInf;
  g.inter_bw_bytes_per_s = kInf;
  g.ring_inter_bw_bytes_per_s = kInf;
  if (group.size() <= 1) return g;
  // The group's bottleneck links (AMP eq. 3), shape and NIC sharing come from hw::group_links.
  return group_bandwidth(hw::group_links(c, group), static_cast<int>(group.size()), o);
}

GroupBandwidth group_bandwidth(const hw::GroupLinks& links, int group_size, const CommOptions& o) {
  const auto& k = consts(o);
  GroupBandwidth g;
  g.intra_bw_bytes_per_s = kInf;
  g.inter_bw_bytes_per_s = kInf;
  g.ring_inter_bw_bytes_per_s = kInf;
  if (group_size <= 1) return g;
  g.num_nodes = links.num_nodes;
  g.members_per_node = links.max_devices_per_node;
  g.uniform = links.uniform_per_node;
  if (links.intra_bw_bytes_per_s > 0) g.intra_bw_bytes_per_s = links.intra_bw_bytes_per_s * k.intra_node_bw_efficiency;
  if (!links.intra_node && links.inter_bw_bytes_per_s > 0) {
    // NIC sharing: members of this group leaving through one NIC, times the groups crossing it at once.
    const int sharers = std::max(1, links.max_devices_per_nic) * std::max(1, o.concurrent_groups_per_nic);
    g.inter_bw_bytes_per_s = links.inter_bw_bytes_per_s * k.inter_node_bw_efficiency / sharers;
    g.ring_inter_bw_bytes_per_s =
        links.inter_bw_bytes_per_s * k.inter_node_bw_efficiency / std::max(1, o.concurrent_groups_per_nic);
  }
  g.intra_latency_s = links.intra_latency_s;
  g.inter_latency_s = links.inter_latency_s;
  return g;
}

namespace {

// Time of a ring-family collective with step costs: `phase_fn(n, bytes, bw, lat)` is the closed form.
// Hierarchical when the group spans nodes evenly: intra RS, inter `phase` on bytes/k, intra AG (for all-reduce),
// or intra + inter phases for gathers.
enum class Kind { allreduce, gather, tree, a2a, bcast };

double group_time_with(Kind kind, int n, const GroupBandwidth& g, double bytes) {
  if (n <= 1 || bytes < 0) return 0;
  if (g.num_nodes == 1) {
    const double bw = g.intra_bw_bytes_per_s, lat = g.intra_latency_s;
    switch (kind) {
      case Kind::allreduce: return ring_allreduce_closed(n, bytes, bw, lat);
      case Kind::gather: return ring_allgather_closed(n, bytes, bw, lat);
      case Kind::tree: return tree_allreduce_closed(n, bytes, bw, lat);
      case Kind::a2a: return all_to_all_closed(n, bytes, bw, lat);
      case Kind::bcast: return broadcast_closed(n, bytes, bw, lat);
    }
  }
  const int k = g.members_per_node;
  const int nn = g.num_nodes;
  if (!g.uniform) {
    // One flat ring at the bottleneck of all links (AMP eq. 3); it crosses each node boundary once per direction.
    const double bw = std::min(g.intra_bw_bytes_per_s, g.ring_inter_bw_bytes_per_s);
    const double lat = std::max(g.intra_latency_s, g.inter_latency_s);
    switch (kind) {
      case Kind::allreduce: return ring_allreduce_closed(n, bytes, bw, lat);
      case Kind::gather: return ring_allgather_closed(n, bytes, bw, lat);
      case Kind::tree: return tree_allreduce_closed(n, bytes, bw, lat);
      case Kind::a2a: return all_to_all_closed(n, bytes, bw, lat);
      case Kind::bcast: return broadcast_closed(n, bytes, bw, lat);
    }
  }
  // k members on each of nn nodes: NCCL's rings and trees (nccl_ring_time / nccl_tree_allreduce_time).
  const double bi = g.intra_bw_bytes_per_s, li = g.intra_latency_s;
  const double be = g.inter_bw_bytes_per_s, le = g.inter_latency_s;
  const NcclGroupShape shape{n, nn, li, le, bi, k * be};
  switch (kind) {
    case Kind::allreduce:
      // NCCL picks the faster of ring and tree from its own model; ours does the same.
      return std::min(nccl_ring_time(shape, bytes, 2), nccl_tree_allreduce_time(shape, bytes));
    case Kind::gather: return nccl_ring_time(shape, bytes, 1);
    case Kind::tree: return nccl_tree_allreduce_time(shape, bytes);
    case Kind::a2a:
      // Intra-node share at intra bandwidth, the rest leaves through the (shared) NICs.
      return all_to_all_closed(k, bytes * k / n, bi, li) + (nn - 1) * le + per_bw(bytes * (n - k) / n, be);
    case Kind::bcast:
      return broadcast_closed(nn, bytes, be, le) + broadcast_closed(k, bytes, bi, li);
  }
  return 0;
}

double group_time(Kind kind, const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  if (group.size() <= 1 || bytes < 0) return 0;
  return group_time_with(kind, static_cast<int>(group.size()), group_bandwidth(c, group, o), bytes);
}

Kind kind_of(Collective k) {
  switch (k) {
    case Collective::allreduce: return Kind::allreduce;
    case Collective::allreduce_tree: return Kind::tree;
    case Collective::allgather:
    case Collective::reduce_scatter: return Kind::gather;
    case Collective::all_to_all: return Kind::a2a;
    default: return Kind::bcast;
  }
}

}  // namespace

double collective_time(Collective kind, int group_size, const GroupBandwidth& g, double bytes) {
  if (kind == Collective::p2p) {
    const double bw = g.num_nodes > 1 ? g.ring_inter_bw_bytes_per_s : g.intra_bw_bytes_per_s;
    const double lat = g.num_nodes > 1 ? g.inter_latency_s : g.intra_latency_s;
    return group_size < 2 || bytes <= 0 ? 0.0 : lat + per_bw(bytes, bw);
  }
  return group_time_with(kind_of(kind), group_size, g, bytes);
}

double allreduce_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  return group_time(Kind::allreduce, c, group, bytes, o);
}
double allreduce_tree_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  return group_time(Kind::tree, c, group, bytes, o);
}
double allgather_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  return group_time(Kind::gather, c, group, bytes, o);
}
double reduce_scatter_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  // Ring reduce-scatter moves the same bytes as all-gather (reverse direction).
  return group_time(Kind::gather, c, group, bytes, o);
}
double all_to_all_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  return group_time(Kind::a2a, c, group, bytes, o);
}
double broadcast_time(const hw::Cluster& c, std::span<const int> group, double bytes, const CommOptions& o) {
  return group_time(Kind::bcast, c, group, bytes, o);
}

double p2p_device_time(const hw::Cluster& c, int from, int to, double bytes, const CommOptions& o) {
  if (from == to || bytes <= 0) return 0;
  const auto& k = consts(o);
  const bool same = c.devices[from].node == c.devices[to].node;
  double bw = hw::link_bandwidth(c, from, to);
  bw *= same ? k.intra_node_bw_efficiency
             : k.inter_node_bw_efficiency / std::max(1, o.concurrent_groups_per_nic);
  return hw::link_latency(c, from, to) + per_bw(bytes, bw);
}

double collective_time(Collective kind, const hw::Cluster& c, std::span<const int> group, double bytes,
                       const CommOptions& o) {
  switch (kind) {
    case Collective::allreduce: return allreduce_time(c, group, bytes, o);
    case Collective::allreduce_tree: return allreduce_tree_time(c, group, bytes, o);
    case Collective::allgather: return allgather_time(c, group, bytes, o);
    case Collective::reduce_scatter: return reduce_scatter_time(c, group, bytes, o);
    case Collective::all_to_all: return all_to_all_time(c, group, bytes, o);
    case Collective::broadcast: return broadcast_time(c, group, bytes, o);
    case Collective::p2p: return group.size() < 2 ? 0.0 : p2p_device_time(c, group[0], group[1], bytes, o);
  }
  return 0;
}

}  // namespace strata::cost
