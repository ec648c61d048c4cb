// report/summary: the page's first two sections — the plan in words with its headline numbers (taken verbatim
// from the plan file, so the page equals `strata plan --json`), and the cluster/placement picture data (which
// stage, dp replica and tp rank each GPU holds).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "report_internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/export/export.hpp"

namespace strata::report::detail {

OJson number_item(const std::string& key, const std::string& label, double value, const std::string& text) {
  OJson j;
  j["key"] = key;
  j["label"] = label;
  j["value"] = value;
  j["text"] = text;
  return j;
}

double plan_number(const nlohmann::json& obj, const std::string& key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number())
    throw core::InputError(fmt::format("{}: field '{}' is missing or not a number", where, key));
  return obj[key].get<double>();
}

namespace {

// True when every tp group of the strategy (either form) sits inside one node.
bool tp_inside_nodes(const cost::Strategy& s, const hw::Cluster& c) {
  for (const auto& v : cost::stage_views(s, c))
    for (std::size_t g = 0; g < v.devices.size(); g += v.tp)
      for (int r = 1; r < v.tp; ++r)
        if (c.devices[v.devices[g + r]].node != c.devices[v.devices[g]].node) return false;
  return true;
}

std::string schedule_words(const cost::Strategy& s) {
  switch (s.schedule) {
    case cost::Schedule::gpipe: return "GPipe";
    case cost::Schedule::one_f_one_b: return "1F1B";
    case cost::Schedule::interleaved: return fmt::format("interleaved 1F1B with {} chunks per GPU", s.virtual_stages);
    case cost::Schedule::pipedream: return "PipeDream (weight stashing)";
    case cost::Schedule::two_bw: return "PipeDream-2BW (double-buffered weights)";
  }
  return std::string(cost::to_string(s.schedule));
}

}  // namespace

namespace {

// A per-stage plan: its stages' own GPU types and (dp, tp), then the traits they share.
std::string per_stage_in_words(const cost::Strategy& s, const hw::Cluster& c) {
  std::vector<std::string> parts, stages;
  parts.push_back(fmt::format("{} pipeline stages of their own widths ({}, {} micro-batches of {} sample{} dealt "
                              "round-robin over each stage's replicas)",
                              s.pp, schedule_words(s), s.global_batch / s.micro_batch, s.micro_batch,
                              s.micro_batch > 1 ? "s" : ""));
  const auto views = cost::stage_views(s, c);
  bool per_layer = false;
  for (std::size_t i = 0; i < views.size(); ++i) {
    const auto& v = views[i];
    per_layer = per_layer || !v.layer_choices.empty();
    stages.push_back(fmt::format("stage {} {} dp {} tp {} ({} layers)", i,
                                 v.gpu_type < 0 ? "mixed" : c.gpu_types[v.gpu_type].name, v.dp, v.tp, v.num_layers));
  }
  parts.push_back(core::join(stages, "; "));
  if (per_layer) parts.push_back("per-layer tp / ZeRO-3 / recompute choices inside the stages (Galvatron-BMW)");
  if (cost::devices_used(s) < c.num_devices())
    parts.push_back(fmt::format("{} of the {} GPUs used", cost::devices_used(s), c.num_devices()));
  if (s.zero_stage > 0) parts.push_back(fmt::format("ZeRO-{}", s.zero_stage));
  if (s.recompute != model::Recompute::none)
    parts.push_back(fmt::format("{} activation recompute", model::to_string(s.recompute)));
  if (s.sequence_parallel) parts.push_back("sequence parallel");
  parts.push_back(fmt::format("{} compute", hw::to_string(s.dtype)));
  return core::join(parts, ", ");
}

}  // namespace

std::string strategy_in_words(const cost::Strategy& s, const hw::Cluster& c) {
  if (!cost::is_uniform(s)) return per_stage_in_words(s, c);
  std::vector<std::string> parts;
  const auto m = s.num_micro_batches();
  if (s.pp > 1)
    parts.push_back(fmt::format("{} pipeline stages ({}, {} micro-batches of {} sample{})", s.pp, schedule_words(s),
                                m, s.micro_batch, s.micro_batch > 1 ? "s" : ""));
  else
    parts.push_back(fmt::format("no pipeline ({} micro-batch{} of {} per replica)", m, m > 1 ? "es" : "",
                                s.micro_batch));
  if (s.tp > 1)
    parts.push_back(fmt::format("tensor parallel tp {} {}", s.tp,
                                tp_inside_nodes(s, c) ? "inside each node" : "spanning nodes"));
  if (s.dp > 1)
    parts.push_back(s.zero_stage > 0 ? fmt::format("ZeRO-{} over {} data-parallel replicas", s.zero_stage, s.dp)
                                     : fmt::format("{} data-parallel replicas", s.dp));
  else if (s.zero_stage > 0)
    parts.push_back(fmt::format("ZeRO-{} (one replica: no sharding)", s.zero_stage));
  if (s.cp > 1) parts.push_back(fmt::format("context parallel cp {} (ring attention)", s.cp));
  if (s.recompute != model::Recompute::none)
    parts.push_back(fmt::format("{} activation recompute", model::to_string(s.recompute)));
  if (s.sequence_parallel) parts.push_back("sequence parallel");
  parts.push_back(fmt::format("{} compute", hw::to_string(s.dtype)));
  return core::join(parts, ", ");
}

namespace {

// The launch script from the export module: torchrun around Megatron-LM's arguments, else Megatron's arguments
// alone; when neither can express the plan, the reason (the page then shows the strategy string only).
OJson launch_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c) {
  OJson j;
  std::vector<std::string> reasons;
  for (const auto e : {exporter::Engine::torchrun, exporter::Engine::megatron}) {
    const std::string engine(exporter::to_string(e));
    try {
      const std::string why = exporter::unexpressible_feature(e, m, c, pv.best);
      if (!why.empty()) {
        reasons.push_back(engine + ": " + why);
        continue;
      }
      const auto f = exporter::export_strategy(e, m, c, pv.best);
      j["engine"] = engine;
      j["file"] = f.name;
      j["command"] = fmt::format("strata export --plan <plan file> --to {} --out DIR", engine);
      j["text"] = f.text;
      return j;
    } catch (const core::InputError& err) {
      reasons.push_back(engine + ": " + err.what());
    }
  }
  j["note"] = "no launch script: " + core::join(reasons, "; ");
  return j;
}

}  // namespace

OJson summary_section(const PlanView& pv, const model::Model& m, const hw::Cluster& c) {
  const auto& e = pv.best_estimate;
  const std::string w = pv.origin + ": best.estimate";
  OJson j;
  j["title"] = fmt::format("{} on {} ({} GPUs)", m.name, c.name, c.num_devices());
  j["model"] = m.name;
  j["cluster"] = c.name;
  j["devices"] = c.num_devices();
  j["seq"] = m.seq;
  j["gbs"] = pv.best.global_batch;
  j["words"] = strategy_in_words(pv.best, c);
  j["placement"] = pv.plan["best"].value("placement", std::string());
  const double t = plan_number(e, "iteration_time_s", w), tok = plan_number(e, "tokens_per_s", w);
  const double mfu = plan_number(e, "mfu", w), tflops = plan_number(e, "tflops_per_gpu", w);
  const double peak = plan_number(e, "peak_memory_bytes", w);
  // Capacity of the fullest stage (highest memory / capacity).
  double cap = 0, worst = -1;
  int worst_stage = 0;
  if (e.contains("stages") && e["stages"].is_array())
    for (std::size_t st = 0; st < e["stages"].size(); ++st) {
      const auto& sj = e["stages"][st];
      const double used = plan_number(sj, "memory_bytes", w), c_bytes = plan_number(sj, "memory_capacity_bytes", w);
      if (c_bytes > 0 && used / c_bytes > worst) {
        worst = used / c_bytes;
        cap = c_bytes;
        worst_stage = static_cast<int>(st);
      }
    }
  OJson nums = OJson::array();
  nums.push_back(number_item("iteration_time_s", "iteration time (predicted)", t, core::format_seconds(t)));
  nums.push_back(number_item("tokens_per_s", "tokens/s", tok, fmt::format("{:.0f}", tok)));
  nums.push_back(number_item("mfu", "MFU", mfu, fmt::format("{:.1f} %", 100 * mfu)));
  nums.push_back(number_item("tflops_per_gpu", "TFLOP/s per GPU", tflops, fmt::format("{:.1f}", tflops)));
  nums.push_back(number_item("peak_memory_bytes", "peak memory", peak,
                             fmt::format("{} of {} (stage {})", core::format_bytes(peak), core::format_bytes(cap),
                                         worst_stage)));
  j["numbers"] = nums;
  OJson gains = OJson::array();
  if (pv.plan.contains("speedups") && pv.plan["speedups"].is_object())
    for (const auto& [name, v] : pv.plan["speedups"].items())
      if (v.is_number())
        gains.push_back(number_item("speedup_" + name, name, v.get<double>(),
                                    fmt::format("{:.2f}x faster than {}", v.get<double>(), name)));
  j["gains"] = gains;
  j["strategy_cli"] = pv.plan["best"].value("cli", cost::to_cli_string(pv.best));
  j["launch"] = launch_section(pv, m, c);
  return j;
}

OJson placement_section(const PlanView& pv, const hw::Cluster& c) {
  const cost::Strategy& s = pv.best;
  std::vector<std::array<int, 3>> role(c.num_devices(), {-1, -1, -1});  // idle devices of a per-stage plan: -1
  const auto views = cost::stage_views(s, c);
  int max_dp = 0, max_tp = 0;
  for (std::size_t st = 0; st < views.size(); ++st) {
    const auto& v = views[st];
    max_dp = std::max(max_dp, static_cast<int>(v.devices.size()) / v.tp);
    max_tp = std::max(max_tp, v.tp);
    for (std::size_t i = 0; i < v.devices.size(); ++i)
      role[v.devices[i]] = {static_cast<int>(st), static_cast<int>(i) / v.tp, static_cast<int>(i) % v.tp};
  }
  OJson j;
  OJson types = OJson::array();
  for (const auto& g : c.gpu_types) types.push_back(g.name);
  j["gpu_types"] = types;
  OJson nodes = OJson::array();
  for (const auto& n : c.nodes) nodes.push_back(OJson::array({n.node_type, n.first_device, n.num_devices}));
  j["nodes"] = nodes;
  OJson devs = OJson::array();  // [gpu type, stage, dp rank, tp rank] per device id
  for (const auto& d : c.devices)
    devs.push_back(OJson::array({d.gpu_type, role[d.id][0], role[d.id][1], role[d.id][2]}));
  j["devices"] = devs;
  j["dp"] = cost::is_uniform(s) ? s.dp : max_dp;  // per-stage plans: the widest stage's
  j["tp"] = cost::is_uniform(s) ? s.tp : max_tp;
  j["pp"] = s.pp;
  return j;
}

}  // namespace strata::report::detail
