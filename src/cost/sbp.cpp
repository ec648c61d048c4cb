// cost/sbp: SBP primitives, nd-SBP local sizes, same-mesh boxing (notes_004 §2.2) and the pricing of boxing
// collectives over mesh axes with cost/comm. See sbp.hpp; the matmul layouts are in sbp_matmul.cpp.
#include "strata/cost/sbp.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "strata/core/error.hpp"

namespace strata::cost {

std::string to_string(Sbp s) {
  switch (s.kind) {
    case SbpKind::split: return fmt::format("S{}", s.dim);
    case SbpKind::broadcast: return "B";
    case SbpKind::partial: return "P";
  }
  return "B";
}

std::string to_string(MeshAxis a) {
  return a.nodes == 1 ? std::to_string(a.gpus) : fmt::format("{}x{}", a.nodes, a.gpus);
}

std::string to_string(const NdSbp& d) {
  std::string out = "(";
  for (std::size_t i = 0; i < d.size(); ++i)
    out += fmt::format("{}{}:{}", i ? ", " : "", to_string(d[i].sbp), to_string(d[i].axis));
  return out + ")";
}

double local_elements(double rows, double cols, const NdSbp& d, const std::string& where) {
  for (const auto& a : d) {
    if (a.sbp.kind != SbpKind::split) continue;
    if (a.sbp.dim == 0) {
      rows /= a.axis.size();
    } else if (a.sbp.dim == 1) {
      cols /= a.axis.size();
    } else {
      throw core::InputError(fmt::format("{}: split dimension {} of a 2-D tensor (valid: 0, 1)", where, a.sbp.dim));
    }
  }
  return rows * cols;
}

double moved_bytes_of(Collective kind, int group_size, double buffer_bytes) {
  if (group_size <= 1) return 0;
  const double share = static_cast<double>(group_size - 1) / group_size;  // AutoDDL Table 2: (p−1)/p·n
  return (kind == Collective::allreduce ? 2.0 : 1.0) * share * buffer_bytes;
}

namespace {

BoxingStep make_step(Collective kind, MeshAxis axis, double buffer_bytes, const char* what) {
  BoxingStep s;
  s.kind = kind;
  s.group = axis;
  s.buffer_bytes = buffer_bytes;
  s.moved_bytes = moved_bytes_of(kind, axis.size(), buffer_bytes);
  s.what = what;
  return s;
}

}  // namespace

std::vector<BoxingStep> boxing(const NdSbp& from, const NdSbp& to, double rows, double cols, double elem_bytes,
                               const std::string& where) {
  if (from.size() != to.size())
    throw core::InputError(fmt::format("{}: boxing between {} and {}: different numbers of mesh axes", where,
                                       to_string(from), to_string(to)));
  for (std::size_t i = 0; i < from.size(); ++i)
    if (!(from[i].axis == to[i].axis))
      throw core::InputError(fmt::format("{}: boxing between {} and {}: mesh axis {} differs", where,
                                         to_string(from), to_string(to), i));
  std::vector<BoxingStep> steps;
  NdSbp state = from;
  auto local_bytes = [&] { return local_elements(rows, cols, state, where) * elem_bytes; };
  local_bytes();  // validates the split dimensions of `from`
  local_elements(rows, cols, to, where);
  // 1. Partial axes: P→B all-reduce, P→S(d) reduce-scatter (buffer = the input, AutoDDL Table 2).
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (state[i].sbp.kind != SbpKind::partial || to[i].sbp.kind == SbpKind::partial) continue;
    const double in = local_bytes();
    if (to[i].sbp.kind == SbpKind::broadcast) {
      steps.push_back(make_step(Collective::allreduce, state[i].axis, in, "P→B all-reduce"));
    } else {
      steps.push_back(make_step(Collective::reduce_scatter, state[i].axis, in, "P→S reduce-scatter"));
    }
    state[i].sbp = to[i].sbp;
  }
  // 2. S(i)→S(j): all-to-all of the local block.
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (state[i].sbp.kind != SbpKind::split || to[i].sbp.kind != SbpKind::split || state[i].sbp == to[i].sbp)
      continue;
    steps.push_back(make_step(Collective::all_to_all, state[i].axis, local_bytes(), "S→S all-to-all"));
    state[i].sbp = to[i].sbp;
  }
  // 3. S→B: all-gather (buffer = the output).
  for (std::size_t i = 0; i < state.size(); ++i) {
    if (state[i].sbp.kind != SbpKind::split || to[i].sbp.kind != SbpKind::broadcast) continue;
    state[i].sbp = to[i].sbp;
    steps.push_back(make_step(Collective::allgather, state[i].axis, local_bytes(), "S→B all-gather"));
  }
  // 4. What is left is local: B→S (keep a slice), B→P / S→P (keep own values, zeros elsewhere).
  return steps;
}

// ---- pricing ---------------------------------------------------------------------------------------------------
SbpComm make_sbp_comm(const hw::Cluster& c, const std::string& where, const CommOptions& o) {
  if (c.nodes.empty() || c.num_devices() < 1)
    throw core::InputError(fmt::format("{}: cluster '{}' has no devices", where, c.name));
  const hw::Node& n0 = c.nodes.front();
  for (const auto& n : c.nodes) {
    if (n.num_devices != n0.num_devices)
      throw core::InputError(fmt::format(
          "{}: cluster '{}': node {} has {} GPUs and node 0 has {} (an SBP device mesh needs the same GPUs per node)",
          where, c.name, n.id, n.num_devices, n0.num_devices));
  }
  for (const auto& d : c.devices)
    if (d.gpu_type != c.devices.front().gpu_type)
      throw core::InputError(fmt::format("{}: cluster '{}' mixes GPU types (an SBP device mesh needs one type)",
                                         where, c.name));
  SbpComm comm;
  comm.cluster = &c;
  comm.nodes = static_cast<int>(c.nodes.size());
  comm.gpus_per_node = n0.num_devices;
  comm.options = o;
  for (int d = 1; d <= comm.nodes; ++d)
    if (comm.nodes % d == 0) comm.node_divisors.push_back(d);
  for (int d = 1; d <= comm.gpus_per_node; ++d)
    if (comm.gpus_per_node % d == 0) comm.gpu_divisors.push_back(d);
  return comm;
}

double sbp_collective_time(const SbpComm& comm, Collective kind, MeshAxis axis, double bytes) {
  if (axis.size() <= 1 || bytes <= 0) return 0;
  const auto key = std::make_pair(axis.nodes, axis.gpus);
  auto it = comm.cache.find(key);
  if (it == comm.cache.end()) {
    const hw::Cluster& c = *comm.cluster;
    std::vector<int> group;
    group.reserve(static_cast<std::size_t>(axis.size()));
    for (int n = 0; n < axis.nodes; ++n)
      for (int g = 0; g < axis.gpus; ++g) group.push_back(c.nodes[static_cast<std::size_t>(n)].first_device + g);
    const hw::GroupLinks links = hw::group_links(c, group);
    CommOptions o = comm.options;
    if (!links.intra_node) {
      // Every group of this axis runs at once: a node's GPUs sharing one NIC belong to gpus_per_nic / (members of
      // this group on it) different groups (cost/stage's DP sync counts NIC sharers the same way).
      const int own = std::max(1, links.max_devices_per_nic);
      o.concurrent_groups_per_nic = std::max(o.concurrent_groups_per_nic, std::max(1, hw::gpus_per_nic(c, 0) / own));
    }
    it = comm.cache.emplace(key, group_bandwidth(links, axis.size(), o)).first;
  }
  return collective_time(kind, axis.size(), it->second, bytes);
}

void price_steps(std::vector<BoxingStep>& steps, const SbpComm& comm) {
  for (auto& s : steps) s.time_s = sbp_collective_time(comm, s.kind, s.group, s.buffer_bytes);
}

}  // namespace strata::cost
