// export/launch: torchrun and Slurm launch scripts for Megatron-LM whose node table realises the plan's
// placement: node_rank k starts the global ranks [off_k, off_k + nproc_k) (torchrun numbers ranks node by node),
// and CUDA_VISIBLE_DEVICES lists the node's GPUs in local-rank order, so rank r runs on placement[r]. That works
// when every node's ranks are contiguous — the only placements a launcher can express. The reader inverts it.
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::exporter::detail {
namespace {

struct NodeBlock {
  int node = 0;                 // cluster node index
  int first_rank = 0;
  std::vector<int> local;       // local GPU index of each of its ranks, in rank order
};

// The node blocks in rank order, or empty when some node's ranks are not contiguous.
std::vector<NodeBlock> node_blocks(const hw::Cluster& c, const cost::Strategy& s) {
  std::vector<NodeBlock> blocks;
  std::set<int> seen;
  for (int r = 0; r < static_cast<int>(s.placement.size()); ++r) {
    const auto& d = c.devices[static_cast<std::size_t>(s.placement[static_cast<std::size_t>(r)])];
    if (blocks.empty() || blocks.back().node != d.node) {
      if (!seen.insert(d.node).second) return {};
      blocks.push_back({d.node, r, {}});
    }
    blocks.back().local.push_back(d.local_index);
  }
  return blocks;
}

std::string ints(const std::vector<int>& v) {
  std::vector<std::string> p;
  for (int x : v) p.push_back(std::to_string(x));
  return core::join(p, ",");
}

// Megatron-LM validate_args (megatron/training/arguments.py at d98e8a64): Megatron-FSDP (ZeRO-2/3 here) asserts
// CUDA_DEVICE_MAX_CONNECTIONS != "1" (:1166); otherwise tp > 1 or cp > 1 before Blackwell asserts it is "1"
// (:1453-1478; strata's catalog has no Blackwell GPU, and "1" is accepted there too). Everything else: unset.
std::string cuda_max_connections_line(const cost::Strategy& s) {
  const auto v = cuda_device_max_connections(s);
  if (!v) return "  unset CUDA_DEVICE_MAX_CONNECTIONS  # Megatron rule fsdp_cuda_max_conn / not needed by this plan\n";
  return fmt::format("  export CUDA_DEVICE_MAX_CONNECTIONS={}  # Megatron rule cuda_max_conn (tp or cp > 1, no FSDP)\n", *v);
}

}  // namespace

std::string launch_problem(const hw::Cluster& c, const cost::Strategy& s) {
  if (node_blocks(c, s).empty())
    return "a placement where some node's ranks are not contiguous (torchrun numbers ranks node by node)";
  return "";
}

void launch_closest(cost::Strategy& s) { s.placement.clear(); }  // Megatron's node-major identity

std::string launch_script(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  const auto blocks = node_blocks(c, s);
  const auto args = megatron_arg_list(m, s);
  std::string t = "#!/usr/bin/env bash\n";
  if (e == Engine::slurm)
    t += fmt::format("#SBATCH --job-name=strata-{}\n#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n#SBATCH --exclusive\n",
                     m.name, c.nodes.size());
  t += fmt::format("# strata export: {} launch of Megatron-LM pretrain_gpt.py for {} on {} ({} nodes, {} GPUs)\n",
                   to_string(e), m.name, c.name, c.nodes.size(), c.num_devices());
  t += fmt::format("# strategy: {}\n", cost::to_cli_string(s));
  t += "# Host i must be cluster node i (its GPU type below). Node table: node) node_rank, ranks, GPUs in rank order.\n";
  for (const auto& b : blocks)
    t += fmt::format("#   node {} ({}, {}): node_rank {}, ranks {}-{}\n", b.node, c.nodes[static_cast<std::size_t>(b.node)].node_type,
                     c.gpu_of(c.nodes[static_cast<std::size_t>(b.node)].first_device).name,
                     &b - blocks.data(), b.first_rank, b.first_rank + static_cast<int>(b.local.size()) - 1);
  t += "set -euo pipefail\nstrata_node() {\n  local NODE=\"$1\" NODE_RANK NPROC\n  case \"$NODE\" in\n";
  for (std::size_t k = 0; k < blocks.size(); ++k)
    t += fmt::format("    {}) NODE_RANK={}; NPROC={}; export CUDA_VISIBLE_DEVICES={} ;;\n", blocks[k].node, k,
                     blocks[k].local.size(), ints(blocks[k].local));
  t += fmt::format("    *) echo \"node index must be 0..{}\" >&2; return 2 ;;\n  esac\n", c.nodes.size() - 1);
  t += cuda_max_connections_line(s);
  t += "  local args=(\n";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0;
    t += "    " + args[i] + (has_value ? " '" + args[i + 1] + "'" : "") + "\n";
    if (has_value) ++i;
  }
  t += "  )\n";
  t += fmt::format("  torchrun --nnodes={} --nproc-per-node=\"$NPROC\" --node-rank=\"$NODE_RANK\" \\\n"
                   "    --master-addr=\"$MASTER_ADDR\" --master-port=\"${{MASTER_PORT:-29500}}\" \\\n"
                   "    pretrain_gpt.py \"${{args[@]}}\" ${{EXTRA_ARGS:-}}\n}}\n",
                   c.nodes.size());
  if (e == Engine::torchrun) {
    t += fmt::format("# Run on every host: NODE=<its cluster node index> MASTER_ADDR=<host of node {}> {}\n",
                     blocks.front().node, "launch_torchrun.sh");
    t += "strata_node \"${NODE:?set NODE to the cluster node index of this host}\"\n";
  } else {
    t += fmt::format("# Slurm lists the allocation in SLURM_JOB_NODELIST order: host i = cluster node i.\n"
                     "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | sed -n '{}p')\n",
                     blocks.front().node + 1);
    t += "export MASTER_ADDR\nexport -f strata_node\nsrun --ntasks-per-node=1 bash -c 'strata_node \"$SLURM_NODEID\"'\n";
  }
  return t;
}

}  // namespace strata::exporter::detail

namespace strata::exporter {

std::optional<int> cuda_device_max_connections(const cost::Strategy& s) {
  if (s.zero_stage >= 2) return std::nullopt;  // Megatron-FSDP: must not be 1 (arguments.py:1166)
  if (s.tp > 1 || s.cp > 1) return 1;          // arguments.py:1476
  return std::nullopt;
}

Imported import_launch_script(std::string_view text, const std::string& origin, const hw::Cluster& c) {
  const std::string body(text);
  const auto args_at = body.find("local args=(");
  const auto args_end = args_at == std::string::npos ? args_at : body.find("\n  )", args_at);
  if (args_end == std::string::npos)
    throw core::InputError(fmt::format("{}: not a strata launch script (no 'local args=(' ... ')' block)", origin));
  Imported im = import_megatron_args(body.substr(args_at + 12, args_end - args_at - 12), origin);
  im.engine = body.find("#SBATCH") != std::string::npos ? Engine::slurm : Engine::torchrun;
  static const std::regex row(R"(^\s*(\d+)\) NODE_RANK=(\d+); NPROC=(\d+); export CUDA_VISIBLE_DEVICES=([0-9,]+) ;;)");
  std::vector<std::pair<int, std::pair<int, std::vector<int>>>> by_rank;  // node_rank -> (node, local GPUs)
  int line_no = 0;
  std::size_t start = 0;
  while (start <= body.size()) {
    const auto end = std::min(body.find('\n', start), body.size());
    const std::string line = body.substr(start, end - start);
    ++line_no;
    std::smatch mt;
    if (std::regex_search(line, mt, row)) {
      const std::string where = fmt::format("{}:{}", origin, line_no);
      const int node = static_cast<int>(detail::parse_int(mt[1].str(), where, "node", 0));
      const int nrank = static_cast<int>(detail::parse_int(mt[2].str(), where, "NODE_RANK", 0));
      const int nproc = static_cast<int>(detail::parse_int(mt[3].str(), where, "NPROC", 1));
      if (node >= static_cast<int>(c.nodes.size()))
        throw core::InputError(fmt::format("{}: node {} but cluster {} has {} nodes", where, node, c.name, c.nodes.size()));
      std::vector<int> local;
      for (const auto& tok : detail::shell_tokens(std::regex_replace(mt[4].str(), std::regex(","), " ")))
        local.push_back(static_cast<int>(detail::parse_int(tok, where, "CUDA_VISIBLE_DEVICES", 0)));
      auto sorted = local;
      std::sort(sorted.begin(), sorted.end());
      const auto& n = c.nodes[static_cast<std::size_t>(node)];
      for (std::size_t i = 0; i < sorted.size(); ++i)
        if (sorted[i] != static_cast<int>(i))
          throw core::InputError(fmt::format("{}: CUDA_VISIBLE_DEVICES is not a permutation of the node's GPUs", where));
      if (nproc != n.num_devices || static_cast<int>(local.size()) != nproc)
        throw core::InputError(fmt::format("{}: NPROC {} but node {} has {} GPUs", where, nproc, node, n.num_devices));
      by_rank.push_back({nrank, {node, local}});
    }
    start = end + 1;
  }
  std::sort(by_rank.begin(), by_rank.end());
  std::set<int> nodes;
  auto& placement = im.strategy.placement;
  for (std::size_t k = 0; k < by_rank.size(); ++k) {
    const auto& [nrank, entry] = by_rank[k];
    if (nrank != static_cast<int>(k) || !nodes.insert(entry.first).second)
      throw core::InputError(fmt::format("{}: the node table's node ranks must be 0..N-1, each node once", origin));
    for (int g : entry.second) placement.push_back(c.nodes[static_cast<std::size_t>(entry.first)].first_device + g);
  }
  if (nodes.size() != c.nodes.size())
    throw core::InputError(fmt::format("{}: the node table has {} nodes but cluster {} has {}", origin, nodes.size(), c.name,
                                       c.nodes.size()));
  return im;
}

}  // namespace strata::exporter
