// cli/cmd_describe: `strata describe --model M [--cluster C] [--seq S] [--mbs B] [--json]` — what is trained
// (parameters, the layer chain with per-layer numbers from model::layer_cost, FLOPs per token) and, with a
// cluster, on what (devices, GPU types, total memory, peak FLOP/s, the bandwidth classes present).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/hw/hardware.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {
namespace {

struct DescribeOptions {
  std::string model;
  std::string cluster;
  std::int64_t seq = 0;
  bool seq_given = false;
  std::int64_t mbs = 1;
  bool json = false;
};

struct LayerRow {
  const model::LayerSpec* spec = nullptr;
  model::LayerCost cost;
};

// "7.63 TFLOP": the FLOP/s formatter without its "/s" (one place for the number format).
std::string flop_count(double flops) {
  std::string s = core::format_flops(flops);
  return s.substr(0, s.size() - 2);
}

bool same_numbers(const LayerRow& a, const LayerRow& b) {
  return a.spec->kind == b.spec->kind && a.cost.params == b.cost.params && a.cost.fwd_flops == b.cost.fwd_flops &&
         a.cost.act_total_bytes() == b.cost.act_total_bytes() && a.cost.output_bytes == b.cost.output_bytes;
}

std::string shape_of(const model::LayerSpec& l) {
  using model::LayerKind;
  switch (l.kind) {
    case LayerKind::embedding: return fmt::format("V={} h={}", l.vocab, l.hidden);
    case LayerKind::lm_head: return fmt::format("h={} V={}{}", l.hidden, l.vocab, l.tied_embeddings ? " tied" : "");
    case LayerKind::transformer:
    case LayerKind::encoder:
    case LayerKind::decoder: {
      std::string s = fmt::format("h={} a={} s={}", l.hidden, l.heads, l.seq);
      if (l.kv_heads != l.heads) s += fmt::format(" kv={}", l.kv_heads);
      if (l.activation == model::Activation::swiglu) s += " swiglu";
      if (l.attention_window > 0) s += fmt::format(" win={}", l.attention_window);
      if (l.experts > 0) s += fmt::format(" moe={}x{}", l.experts, l.top_k);
      if (l.kind == LayerKind::decoder) s += fmt::format(" enc={}", l.encoder_seq);
      return s;
    }
    case LayerKind::patch_embedding: return fmt::format("p={} c={} h={} s={}", l.patch, l.channels, l.hidden, l.seq);
    case LayerKind::conv:
      return fmt::format("{}->{} {}x{}->{}x{}", l.conv.in_channels, l.conv.out_channels, l.conv.height,
                         l.conv.width, l.conv.out_height, l.conv.out_width);
    case LayerKind::generic: return "numbers";
  }
  return "";
}

core::OrderedJson cluster_json(const hw::Cluster& c, std::map<std::string, int>& type_counts) {
  core::OrderedJson j;
  j["name"] = c.name;
  j["devices"] = c.num_devices();
  j["nodes"] = c.nodes.size();
  core::OrderedJson types = core::OrderedJson::array();
  for (const hw::GpuSpec& g : c.gpu_types) {
    types.push_back({{"gpu", g.name},
                     {"count", type_counts[g.name]},
                     {"memory_bytes", g.memory_bytes},
                     {"peak_bf16_flops", g.peak(hw::Dtype::bf16)}});
  }
  j["gpu_types"] = types;
  j["total_memory_bytes"] = hw::total_memory_bytes(c);
  j["total_peak_bf16_flops"] = hw::total_peak_flops(c, hw::Dtype::bf16);
  core::OrderedJson classes = core::OrderedJson::array();
  for (const hw::LinkClass& lc : hw::link_classes(c))
    classes.push_back({{"scope", lc.scope},
                       {"link", lc.link},
                       {"bw_bytes_per_s", lc.bw_bytes_per_s},
                       {"latency_s", lc.latency_s},
                       {"nodes", lc.nodes}});
  j["bandwidth_classes"] = classes;
  core::OrderedJson tiers = core::OrderedJson::array();
  for (const hw::TierRow& t : hw::tier_rows(c))
    tiers.push_back({{"node_type", t.node_type}, {"nodes", t.nodes},
                     {"host", {{"gpus", t.gpus_per_host}, {"per_node", t.hosts}}},
                     {"scale_up_domain", {{"gpus", t.domain_gpus}, {"link", t.domain_link},
                                          {"bw_bytes_per_s", t.domain_bw_bytes_per_s}}},
                     {"network", {{"nics", t.nics}, {"link", t.nic_link},
                                  {"bw_bytes_per_s_per_gpu", t.nic_bw_per_gpu_bytes_per_s}}}});
  j["tiers"] = tiers;
  core::OrderedJson shared = core::OrderedJson::array();
  for (const hw::Node& n : c.nodes)
    if (n.cpu_cores > 0) shared.push_back({{"node", n.id}, {"devices", n.num_devices}, {"cpu_cores", n.cpu_cores}});
  if (!shared.empty()) j["cpu_shared_nodes"] = shared;
  return j;
}

void print_cluster(const hw::Cluster& c, std::map<std::string, int>& type_counts) {
  fmt::print("\ncluster {}: {} devices on {} nodes\n", c.name, c.num_devices(), c.nodes.size());
  std::vector<std::vector<std::string>> rows;
  for (const hw::GpuSpec& g : c.gpu_types)
    rows.push_back({g.name, std::to_string(type_counts[g.name]), core::format_bytes(g.memory_bytes),
                    core::format_flops(g.peak(hw::Dtype::bf16))});
  fmt::print("{}", core::render_table({"gpu", "count", "memory each", "peak bf16 each"}, rows));
  fmt::print("total memory: {}   total peak bf16: {}\n", core::format_bytes(hw::total_memory_bytes(c)),
             core::format_flops(hw::total_peak_flops(c, hw::Dtype::bf16)));
  rows.clear();
  for (const hw::LinkClass& lc : hw::link_classes(c))
    rows.push_back({lc.scope, lc.link, core::format_bandwidth(lc.bw_bytes_per_s), core::format_seconds(lc.latency_s),
                    std::to_string(lc.nodes)});
  fmt::print("bandwidth classes (one direction, per device pair):\n{}",
             core::render_table({"scope", "link", "bandwidth", "latency", "nodes"}, rows));
  rows.clear();
  for (const hw::TierRow& t : hw::tier_rows(c))
    rows.push_back({t.node_type, std::to_string(t.nodes),
                    t.hosts > 1 ? fmt::format("{} x {} GPUs", t.hosts, t.gpus_per_host) : fmt::format("1 x {} GPUs", t.gpus_per_host),
                    fmt::format("{} GPUs, {} {}", t.domain_gpus, t.domain_link,
                                t.domain_gpus > 1 ? core::format_bandwidth(t.domain_bw_bytes_per_s) : "-"),
                    fmt::format("{} x {}, {} per GPU", t.nics, t.nic_link,
                                core::format_bandwidth(t.nic_bw_per_gpu_bytes_per_s))});
  fmt::print("tiers (host: GPUs sharing a CPU tray; scale-up domain: GPUs joined by NVLink/Infinity Fabric, one strata "
             "node; network: the NICs between domains):\n{}",
             core::render_table({"node kind", "nodes", "hosts", "scale-up domain", "network"}, rows));
  for (const hw::Node& n : c.nodes)
    if (n.cpu_cores > 0)
      fmt::print("node {}: its {} devices are processes sharing {} CPU cores{}\n", n.id, n.num_devices, n.cpu_cores,
                 n.num_devices > n.cpu_cores ? " (oversubscribed: the cost model bounds compute by the cores)" : "");
}

// `describe --cluster C` alone: the cluster's devices, bandwidth classes and tiers (the JSON's "cluster" object).
void describe_cluster_only(const DescribeOptions& o) {
  const hw::Cluster c = hw::resolve_cluster(o.cluster, hw::builtin_catalog());
  std::map<std::string, int> type_counts;
  for (const hw::Device& d : c.devices) ++type_counts[c.gpu_types[d.gpu_type].name];
  if (o.json) {
    core::OrderedJson j;
    j["cluster"] = cluster_json(c, type_counts);
    fmt::print("{}\n", j.dump(2));
    return;
  }
  print_cluster(c, type_counts);
}

void run_describe(const DescribeOptions& o) {
  if (o.model.empty() && o.cluster.empty())
    throw core::InputError("describe: give --model, --cluster or both (e.g. strata describe --cluster gb200-nvl72:2)");
  if (o.model.empty()) return describe_cluster_only(o);
  model::Model m = model::resolve_model(o.model);
  if (o.seq_given) m = model::with_seq(m, o.seq);
  std::unique_ptr<hw::Cluster> cluster;
  if (!o.cluster.empty()) cluster = std::make_unique<hw::Cluster>(hw::resolve_cluster(o.cluster, hw::builtin_catalog()));
  std::map<std::string, int> type_counts;
  if (cluster)
    for (const hw::Device& d : cluster->devices) ++type_counts[cluster->gpu_types[d.gpu_type].name];

  model::LayerQuery q;
  q.micro_batch = o.mbs;
  std::vector<LayerRow> rows;
  for (const model::LayerSpec& l : m.layers) rows.push_back({&l, model::layer_cost(l, q)});
  const double params = model::total_params(m);
  const double flops_per_token = model::train_flops_per_token(m);

  if (o.json) {
    core::OrderedJson j;
    j["model"] = m.name;
    j["family"] = m.family;
    j["params"] = params;
    j["num_layers"] = m.layers.size();
    j["num_blocks"] = m.num_blocks();
    j["hidden"] = m.hidden;
    j["heads"] = m.heads;
    j["seq"] = m.seq;
    j["vocab"] = m.vocab;
    j["train_flops_per_token"] = flops_per_token;
    j["train_flops_per_sample"] = flops_per_token * static_cast<double>(m.seq);
    j["micro_batch"] = o.mbs;
    core::OrderedJson layers = core::OrderedJson::array();
    for (const LayerRow& r : rows)
      layers.push_back({{"name", r.spec->name},
                        {"kind", std::string(model::to_string(r.spec->kind))},
                        {"params", r.cost.params},
                        {"fwd_flops", r.cost.fwd_flops},
                        {"bwd_flops", r.cost.bwd_flops},
                        {"activation_bytes", r.cost.act_total_bytes()},
                        {"output_bytes", r.cost.output_bytes}});
    j["layers"] = layers;
    if (cluster) j["cluster"] = cluster_json(*cluster, type_counts);
    fmt::print("{}\n", j.dump(2));
    return;
  }

  fmt::print("model {} ({}): {} layers in the chain, {} transformer blocks", m.name, m.family, m.layers.size(),
             m.num_blocks());
  if (m.hidden > 0) fmt::print(", hidden {}, heads {}", m.hidden, m.heads);
  if (m.vocab > 0) fmt::print(", vocab {}", m.vocab);
  fmt::print(", seq {}\n", m.seq);
  fmt::print("parameters: {} ({:.0f})\n", core::format_count(params), params);
  if (m.vocab > 0)
    fmt::print("training FLOPs per token: {} (forward + backward, no recompute)\n", flop_count(flops_per_token));
  else
    fmt::print("training FLOPs per sample: {} (forward + backward, no recompute)\n",
               flop_count(flops_per_token * static_cast<double>(m.seq)));
  fmt::print("\nlayer chain (micro-batch {}, tp 1, no recompute; identical consecutive layers folded):\n", o.mbs);
  std::vector<std::vector<std::string>> table;
  for (std::size_t i = 0; i < rows.size();) {
    std::size_t j = i + 1;
    while (j < rows.size() && same_numbers(rows[i], rows[j])) ++j;
    const std::string index = j - i > 1 ? fmt::format("{}-{}", i, j - 1) : std::to_string(i);
    const std::string name = j - i > 1 ? fmt::format("{} .. {}", rows[i].spec->name, rows[j - 1].spec->name)
                                       : rows[i].spec->name;
    const model::LayerCost& c = rows[i].cost;
    table.push_back({index, name, std::string(model::to_string(rows[i].spec->kind)), shape_of(*rows[i].spec),
                     core::format_count(c.params), flop_count(c.fwd_flops), core::format_bytes(c.act_total_bytes()),
                     core::format_bytes(c.output_bytes)});
    i = j;
  }
  fmt::print("{}", core::render_table({"#", "layer", "kind", "shape", "params", "fwd FLOPs", "activations", "output"},
                                      table));
  if (cluster) print_cluster(*cluster, type_counts);
}

}  // namespace

void register_describe_command(CLI::App& app) {
  auto opt = std::make_shared<DescribeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "describe",
      "Describe a model (parameters, the layer chain with per-layer parameters, forward FLOPs and stored "
      "activation bytes, training FLOPs per token) and optionally a cluster (devices, GPU types, total memory, "
      "peak FLOP/s, bandwidth classes).\n\nExamples:\n  strata describe --model gpt3-175b\n"
      "  strata describe --model llama3-8b --cluster dgx-a100:2 --seq 4096\n"
      "  strata describe --cluster gb200-nvl72:2\n"
      "  strata describe --model examples/model_custom_layers.json --json");
  cmd->add_option("--model", opt->model,
                  "Built-in model name (see `strata models`) or the path of a model JSON file (docs/models.md); "
                  "optional with --cluster");
  cmd->add_option("--cluster", opt->cluster,
                  "Cluster: preset (dgx-a100), '<node-type>:<count>[+...]' (p3.8xlarge:3+g4dn.12xlarge:1) or a "
                  "cluster JSON file (docs/clusters.md)");
  CLI::Option* seq = cmd->add_option("--seq", opt->seq, "Sequence length override (text transformer models only; default: the model's)")
      ->transform(integer_in(core::limits::kSeq));
  cmd->add_option("--mbs", opt->mbs, "Micro-batch size for the per-layer numbers (default 1)")
      ->transform(integer_in(core::limits::kMbs));
  cmd->add_flag("--json", opt->json, "Print JSON (keys: params, num_layers, layers[], cluster{}) instead of tables");
  cmd->callback([opt, seq] {
    opt->seq_given = seq->count() > 0;
    run_describe(*opt);
  });
}

}  // namespace strata::cli
