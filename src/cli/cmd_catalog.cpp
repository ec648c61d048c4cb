// cli/cmd_catalog: the listing sub-commands `strata models`, `strata hardware` and `strata clusters` — the
// built-in model zoo, the GPU/link catalog and the node presets, as tables or JSON (--json).
#include <fmt/format.h>

#include <optional>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/core/units.hpp"
#include "strata/core/error.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {
namespace {

struct ListOptions {
  bool json = false;
  bool sources = false;
  std::optional<std::string> show;  // clusters --show SPEC
};

void print_json(const core::OrderedJson& j) { fmt::print("{}\n", j.dump(2)); }

// ---- strata models ---------------------------------------------------------------------------------------------
void run_models(const ListOptions& o) {
  if (o.json) return print_json(model::zoo_listing_json());
  std::vector<std::vector<std::string>> rows;
  for (const auto& name : model::zoo_names()) {
    const model::Model m = model::zoo_model(name);
    const double params = model::total_params(m);
    rows.push_back({m.name, m.family, std::to_string(m.layers.size()), std::to_string(m.num_blocks()),
                    m.hidden > 0 ? std::to_string(m.hidden) : "-", m.seq > 0 ? std::to_string(m.seq) : "-",
                    core::format_count(params)});
  }
  fmt::print("{}", core::render_table({"model", "family", "layers", "blocks", "hidden", "seq", "params"}, rows));
  fmt::print("\n{} built-in models. Details: strata describe --model <name>; custom models: docs/models.md.\n",
             rows.size());
}

// ---- strata hardware -------------------------------------------------------------------------------------------
// A peak cell: the native number, or the fallback value marked '*' (GpuSpec::peak, docs/hardware.md).
std::string peak_cell(const hw::GpuSpec& g, hw::Dtype d) {
  const std::string v = core::format_flops(g.peak(d));
  return g.supports(d) ? v : v + " *";
}

// The low-precision columns show only native paths ("-" elsewhere): mxfp8 and fp4 have no fallback.
std::string native_cell(const hw::GpuSpec& g, hw::Dtype d) {
  return g.supports(d) ? core::format_flops(g.peak(d)) : "-";
}

void run_hardware(const ListOptions& o) {
  const hw::Catalog cat = hw::builtin_catalog();
  if (o.json) return print_json(hw::catalog_listing_json(cat));
  std::vector<std::vector<std::string>> rows;
  for (const auto& g : cat.gpus) {
    std::vector<std::string> r{g.name,
                               g.display_name,
                               core::format_bytes(g.memory_bytes),
                               peak_cell(g, hw::Dtype::bf16),
                               peak_cell(g, hw::Dtype::fp16),
                               peak_cell(g, hw::Dtype::fp32),
                               native_cell(g, hw::Dtype::fp8),
                               native_cell(g, hw::Dtype::mxfp8),
                               native_cell(g, hw::Dtype::fp4),
                               core::format_bandwidth(g.memory_bw_bytes_per_s)};
    if (o.sources) r.push_back(g.source);
    rows.push_back(std::move(r));
  }
  std::vector<std::string> header{"gpu", "model", "memory", "bf16", "fp16", "fp32", "fp8", "mxfp8", "fp4", "mem bw"};
  if (o.sources) header.push_back("source");
  fmt::print("GPUs (dense peak FLOP/s; * = no native path, falls back per docs/hardware.md; fp8, mxfp8 (MX block-scaled "
             "FP8) and fp4 (NVFP4/MXFP4) only where native)\n{}\n",
             core::render_table(header, rows));

  rows.clear();
  for (const auto& l : cat.links) {
    std::vector<std::string> r{l.name, core::format_bandwidth(l.bw_bytes_per_s),
                               fmt::format("{:g} Gbit/s", l.bw_bytes_per_s / core::kGbit),
                               core::format_seconds(l.latency_s), l.description};
    if (o.sources) r.push_back(l.source);
    rows.push_back(std::move(r));
  }
  header = {"link", "bandwidth", "(bits)", "latency", "what"};
  if (o.sources) header.push_back("source");
  fmt::print("Links (bandwidth one direction, per GPU for GPU fabrics, per port for NICs)\n{}",
             core::render_table(header, rows));
}

// ---- strata clusters -------------------------------------------------------------------------------------------
// `strata clusters --show SPEC`: one resolved cluster — its nodes and the link classes its devices see.
void show_cluster(const std::string& spec, bool json) {
  const hw::Catalog cat = hw::builtin_catalog();
  const hw::Cluster c = hw::resolve_cluster(spec, cat);
  if (json) return print_json(hw::cluster_summary_json(c));
  const auto classes = hw::link_classes(c);
  fmt::print("cluster {}: {} devices on {} nodes, {} memory, {} bf16 peak\n", c.name, c.num_devices(),
             c.nodes.size(), core::format_bytes(hw::total_memory_bytes(c)),
             core::format_flops(hw::total_peak_flops(c, hw::Dtype::bf16)));
  std::vector<std::vector<std::string>> rows;
  for (const auto& n : c.nodes) {
    rows.push_back({std::to_string(n.id), n.node_type,
                    fmt::format("{}-{}", n.first_device, n.first_device + n.num_devices - 1),
                    fmt::format("{}x {}", n.num_devices, c.gpu_of(n.first_device).name), n.intra.name,
                    fmt::format("{}x {}", n.nics, n.nic.name), std::to_string(n.rack)});
  }
  fmt::print("{}\n", core::render_table({"node", "type", "devices", "gpus", "intra", "nics", "rack"}, rows));
  rows.clear();
  for (const auto& lc : classes) {
    rows.push_back({lc.scope, lc.link, core::format_bandwidth(lc.bw_bytes_per_s), core::format_seconds(lc.latency_s),
                    std::to_string(lc.nodes)});
  }
  fmt::print("{}", core::render_table({"scope", "link", "pair bandwidth", "latency", "nodes"}, rows));
}

void run_clusters(const ListOptions& o) {
  const hw::Catalog cat = hw::builtin_catalog();
  if (o.show) {
    if (o.show->empty()) throw core::InputError("clusters: --show: empty cluster spec (give a preset, "
                                                "<node-type>:<count>[+...] or a JSON file)");
    return show_cluster(*o.show, o.json);
  }
  if (o.json) return print_json(hw::node_presets_json(cat));
  std::vector<std::vector<std::string>> rows;
  for (const auto& n : cat.nodes) {
    // Interconnect: the link, and for a pair matrix the slowest and fastest pair.
    const hw::Cluster c = hw::resolve_cluster(n.name, cat);
    std::string intra =
        fmt::format("{} ({})", n.intra_link, core::format_bandwidth(cat.link(n.intra_link).bw_bytes_per_s));
    if (n.intra_bw_matrix) {
      double lo = std::numeric_limits<double>::infinity(), hi = 0;
      for (int a = 0; a < n.gpus; ++a) {
        for (int b = a + 1; b < n.gpus; ++b) {
          lo = std::min(lo, hw::link_bandwidth(c, a, b));
          hi = std::max(hi, hw::link_bandwidth(c, a, b));
        }
      }
      intra = fmt::format("{} pairs {}-{}", n.intra_link, core::format_bandwidth(lo), core::format_bandwidth(hi));
    }
    const double nic_bw = cat.link(n.nic_link).bw_bytes_per_s;
    std::vector<std::string> r{n.name, fmt::format("{}x {}", n.gpus, n.gpu), intra,
                               fmt::format("{}x {}", n.nics, n.nic_link),
                               fmt::format("{:g} Gbit/s", n.nics * nic_bw / core::kGbit)};
    if (o.sources) r.push_back(n.source);
    rows.push_back(std::move(r));
  }
  std::vector<std::string> header{"preset", "gpus/node", "interconnect", "nics", "network total"};
  if (o.sources) header.push_back("source");
  fmt::print("{}", core::render_table(header, rows));
  fmt::print(
      "\nUse --cluster <preset>[:<nodes>][+<preset>:<nodes>...] (e.g. p3.8xlarge:3+g4dn.12xlarge:1, dgx-a100:128) "
      "or a JSON file (docs/clusters.md).\n");
}

CLI::App* add_list_command(CLI::App& app, const char* name, const std::string& help,
                           void (*run)(const ListOptions&), bool with_sources) {
  auto opts = std::make_shared<ListOptions>();
  CLI::App* sub = app.add_subcommand(name, help);
  sub->add_flag("--json", opts->json, "Print JSON (SI units: bytes, bytes/s, FLOP/s, seconds) instead of a table");
  if (with_sources) sub->add_flag("--sources", opts->sources, "Add a column citing the source of each entry");
  if (std::string(name) == "clusters") {
    sub->add_option("--show", opts->show,
                    "Resolve one cluster spec (a preset, <node-type>:<count>[+...], or a JSON file) and print its "
                    "nodes and link classes, e.g. --show p3.8xlarge:3+g4dn.12xlarge:1");
  }
  sub->callback([opts, run] { run(*opts); });
  return sub;
}

}  // namespace

void register_catalog_commands(CLI::App& app) {
  add_list_command(app, "models",
                   "List the built-in models: name, family, layers, transformer blocks, hidden size, sequence "
                   "length and total parameters.\nExample: strata models --json",
                   run_models, false);
  add_list_command(app, "hardware",
                   "List the GPU catalog (memory, dense peak bf16/fp16/fp32/fp8 FLOP/s, memory bandwidth) and the "
                   "link catalog (bandwidth one direction, latency). Numbers and their sources: data/gpus.json, "
                   "data/links.json, docs/hardware.md.\nExample: strata hardware --sources",
                   run_hardware, true);
  add_list_command(app, "clusters",
                   "List the node presets usable in --cluster: GPUs per node, intra-node interconnect, NICs and "
                   "total network bandwidth; with --show SPEC, the nodes and link classes of one cluster.\n"
                   "Examples: strata clusters; strata clusters --show p3.8xlarge:3+g4dn.12xlarge:1",
                   run_clusters, true);
}

}  // namespace strata::cli
