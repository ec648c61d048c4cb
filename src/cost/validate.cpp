// cost/validate: predicted vs measured on the embedded calibration data (see validate.hpp), and the Table 5 fit
// of the efficiency constants stored in data/cost_constants.json.
#include "strata/cost/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "strata/core/data.hpp"
#include "strata/core/units.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "validate_internal.hpp"

namespace strata::cost {
namespace {

constexpr const char* kKorthikanti = "calibration/megatron_seqsel_2022.json";
constexpr const char* kMosaic = "calibration/mosaicml_fsdp.json";

struct Case {
  std::string name;
  model::Model model;
  hw::Cluster cluster;
  Strategy strategy;
};

model::Model gpt_model(const std::string& name, const core::Json& shape, std::int64_t seq, std::int64_t vocab) {
  model::TransformerConfig cfg;
  cfg.name = name;
  cfg.family = "gpt";
  cfg.layers = shape.at("layers").get<std::int64_t>();
  cfg.hidden = shape.at("hidden").get<std::int64_t>();
  cfg.heads = shape.at("heads").get<std::int64_t>();
  cfg.ffn = shape.at("ffn").get<std::int64_t>();
  cfg.vocab = vocab;
  cfg.seq = seq;
  return model::build_transformer(cfg, std::string("data/") + kKorthikanti);
}

// Korthikanti setup: DGX A100 80 GB nodes, tp 8, pp and interleaving per the file, dp 1, fp16.
Case korthikanti_case(const std::string& name, const core::Json& data, const std::string& mode,
                      const hw::Catalog& catalog) {
  const auto& common = data.at("common");
  const auto& cfg = data.at("configs").at(name);
  Case c;
  c.name = name + " " + mode;
  c.model = gpt_model(name, data.at("models").at(name), common.at("seq_len").get<std::int64_t>(),
                      common.at("vocab").get<std::int64_t>());
  const int gpus = cfg.at("gpus").get<int>();
  c.cluster = hw::resolve_cluster(fmt::format("dgx-a100:{}", (gpus + 7) / 8), catalog);
  Strategy& s = c.strategy;
  s.tp = cfg.at("tp").get<int>();
  s.pp = cfg.at("pp").get<int>();
  s.dp = common.at("data_parallel").get<int>();
  s.micro_batch = cfg.at("micro_batch").get<int>();
  s.global_batch = cfg.at("global_batch").get<int>();
  s.virtual_stages = cfg.at("interleave").get<int>();
  s.schedule = s.virtual_stages > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  s.dtype = hw::Dtype::fp16;
  s.attention = model::AttentionKernel::eager;  // Megatron-LM 2022 had no fused attention
  if (mode == "full") {
    s.recompute = model::Recompute::full;
  } else if (mode == "seqsel") {
    s.recompute = model::Recompute::selective;
    s.sequence_parallel = true;
  }  // "none": defaults
  s = complete_strategy(s, c.model, c.cluster);
  return c;
}

double pct(double predicted, double measured) { return detail::pct_error(predicted, measured); }

void summarise(const std::vector<ValidationRow>& rows, const std::string& dataset, double& mean, double& max) {
  double sum = 0;
  int n = 0;
  max = 0;
  for (const auto& r : rows)
    if (r.dataset == dataset) {
      sum += std::abs(r.error_pct);
      max = std::max(max, std::abs(r.error_pct));
      ++n;
    }
  mean = n ? sum / n : 0;
}

// MosaicML rows: FSDP full shard (ZeRO-3) over all GPUs, no TP/PP, activation checkpointing = full recompute.
void mosaic_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out) {
  const auto data = core::embedded_json(kMosaic);
  const auto& shapes = data.at("model_shapes");
  for (const auto& row : data.at("rows")) {
    const std::string name = row[0].get<std::string>();
    const auto seq = row[1].get<std::int64_t>();
    const int gpus = row[2].get<int>();
    const std::string gpu = row[3].get<std::string>();
    const auto mbs = row[6].get<std::int64_t>();
    const auto gbs = row[8].get<std::int64_t>();
    const double measured = row[9].get<double>();
    const bool ac = row[10].get<bool>();
    const auto& sh = shapes.at(name);
    model::TransformerConfig cfg;
    cfg.name = name;
    cfg.family = "mpt";
    cfg.layers = sh.at("layers").get<std::int64_t>();
    cfg.hidden = sh.at("hidden").get<std::int64_t>();
    cfg.heads = sh.at("heads").get<std::int64_t>();
    cfg.ffn = sh.at("ffn").get<std::int64_t>();
    cfg.vocab = sh.at("vocab").get<std::int64_t>();
    cfg.seq = seq;
    cfg.learned_positions = false;  // ALiBi
    cfg.bias = false;
    cfg.dropout = false;
    const auto m = model::build_transformer(cfg, std::string("data/") + kMosaic);
    // Node: 8 GPUs on NVSwitch; A100 rows 1600 Gb/s per node (8 × HDR-class NICs), H100 rows DGX H100.
    hw::Cluster c;
    if (gpu.rfind("H100", 0) == 0) {
      c = hw::resolve_cluster(fmt::format("dgx-h100:{}", gpus / 8), catalog);
    } else {
      hw::NodeSpec node = catalog.node("dgx-a100");
      node.name = gpu.find("40GB") != std::string::npos ? "a100-40gb-roce" : "a100-80gb-roce";
      node.gpu = gpu.find("40GB") != std::string::npos ? "a100-40gb" : "a100-80gb";
      c.name = fmt::format("{}:{}", node.name, gpus / 8);
      hw::add_nodes(c, node, gpus / 8, catalog);
    }
    Strategy s;
    s.dp = gpus;
    s.micro_batch = mbs;
    s.global_batch = gbs;
    s.zero_stage = 3;
    s.recompute = ac ? model::Recompute::full : model::Recompute::none;
    s.recompute_early_stop = ac;  // Composer's FSDP non-reentrant checkpointing, as the llm-foundry rows
    s.dtype = hw::Dtype::bf16;
    s.attention = detail::attention_of_source("mosaicml");  // llm-foundry's stack: FlashAttention v1
    s.eager_elementwise = true;                               // ... and eager PyTorch element-wise ops
    s = complete_strategy(s, m, c);
    CostOptions opt;
    opt.constants = &k;
    const auto e = estimate(m, c, s, opt);
    const double predicted = e.tokens_per_s / gpus;
    out.push_back({"mosaicml", fmt::format("{} {}x{} mbs{} {}", name, gpus, gpu, mbs, ac ? "ac" : "no-ac"),
                   "tokens_per_s_per_gpu", predicted, measured, pct(predicted, measured), e.fits});
  }
}

void table5_rows(const CostConstants& k, const hw::Catalog& catalog, const core::Json& data,
                 std::vector<ValidationRow>& out) {
  CostOptions opt;
  opt.constants = &k;
  for (const auto& [name, modes] : data.at("table5_iteration_time_s").items())
    for (const std::string mode : {"full", "seqsel"}) {
      const auto c = korthikanti_case(name, data, mode, catalog);
      const auto e = estimate(c.model, c.cluster, c.strategy, opt);
      const double measured = modes.at(mode).get<double>();
      out.push_back({"korthikanti_table5", c.name, "iteration_time_s", e.iteration_time_s, measured,
                     pct(e.iteration_time_s, measured), e.fits});
    }
}

void figure1_rows(const CostConstants& k, const hw::Catalog& catalog, const core::Json& data,
                  std::vector<ValidationRow>& out) {
  CostOptions opt;
  opt.constants = &k;
  for (const auto& [name, modes] : data.at("figure1_memory_GiB_per_gpu").items()) {
    if (name == "note") continue;
    for (const std::string mode : {"none", "seqsel"}) {
      const auto c = korthikanti_case(name, data, mode, catalog);
      const auto e = estimate(c.model, c.cluster, c.strategy, opt);
      const auto& mem = e.stages.front().memory;  // first pipeline stage
      const double par_opt = (mem.weights_bytes + mem.gradients_bytes + mem.optimizer_bytes) / core::kGiB;
      const double act = mem.activations_bytes / core::kGiB;
      const double m_par = modes.at(mode).at("par_opt").get<double>();
      const double m_act = modes.at(mode).at("act").get<double>();
      out.push_back({"korthikanti_fig1", c.name, "par_opt_gib", par_opt, m_par, pct(par_opt, m_par), true});
      out.push_back({"korthikanti_fig1", c.name, "activations_gib", act, m_act, pct(act, m_act), true});
    }
  }
}

// Per dataset, in order of first appearance, then "overall" over every throughput row (Korthikanti time and the
// memory rows excluded). Targets (issue 13): Table 5 time ≤ 3 % mean, Figure 1 memory ≤ 5 % mean, every other
// source ≤ 8 % mean and ≤ 15 % max; every row a real system ran must be predicted to fit.
std::vector<SourceSummary> source_summaries(const std::vector<ValidationRow>& rows,
                                            const std::vector<SkippedRow>& skipped) {
  std::vector<SourceSummary> out;
  SourceSummary overall;
  overall.dataset = "overall (throughput)";
  overall.metric = "tokens/s or model TFLOP/s per GPU";
  const auto add = [](SourceSummary& s, const ValidationRow& r) {
    s.mean_abs_pct += std::abs(r.error_pct);
    s.max_abs_pct = std::max(s.max_abs_pct, std::abs(r.error_pct));
    ++s.rows;
    if (!r.fits) ++s.not_fit;
  };
  for (const auto& r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const SourceSummary& s) { return s.dataset == r.dataset; });
    if (it == out.end()) {
      SourceSummary s;
      s.dataset = r.dataset;
      s.metric = r.dataset == "korthikanti_fig1" ? "par_opt_gib, activations_gib" : r.metric;
      const bool memory = r.dataset == "korthikanti_fig1" || r.dataset == detail::kSavedTensorsDataset ||
                          detail::is_probe_memory(r.dataset);
      const bool probe_time = detail::is_probe_time(r.dataset);  // issue 38: time ≤ 10 % mean
      s.target_mean_pct = r.dataset == "korthikanti_table5" ? 3 : memory ? 5 : probe_time ? 10 : 8;
      s.target_max_pct = r.dataset.rfind("korthikanti", 0) == 0 || memory || probe_time ? 0 : 15;
      out.push_back(s);
      it = out.end() - 1;
    }
    add(*it, r);
    if (r.dataset.rfind("korthikanti", 0) != 0 && r.dataset != detail::kSavedTensorsDataset &&
        !detail::is_probe_memory(r.dataset) && !detail::is_probe_time(r.dataset))
      add(overall, r);
  }
  for (const auto& sk : skipped)
    for (auto& s : out)
      if (s.dataset == sk.dataset) ++s.skipped;
  overall.target_mean_pct = 8;
  overall.target_max_pct = 15;
  out.push_back(overall);
  for (auto& s : out) s.mean_abs_pct = s.rows ? s.mean_abs_pct / s.rows : 0;
  return out;
}

double table5_error(const CostConstants& k, const hw::Catalog& catalog, const core::Json& data) {
  std::vector<ValidationRow> rows;
  table5_rows(k, catalog, data, rows);
  double mean = 0, max = 0;
  summarise(rows, "korthikanti_table5", mean, max);
  return mean;
}

}  // namespace

ValidationReport validate_calibration(const CostConstants& k) {
  const auto catalog = hw::builtin_catalog();
  const auto data = core::embedded_json(kKorthikanti);
  ValidationReport r;
  table5_rows(k, catalog, data, r.rows);
  figure1_rows(k, catalog, data, r.rows);
  mosaic_rows(k, catalog, r.rows);
  summarise(r.rows, "korthikanti_table5", r.time_mean_abs_pct, r.time_max_abs_pct);
  summarise(r.rows, "korthikanti_fig1", r.memory_mean_abs_pct, r.memory_max_abs_pct);
  summarise(r.rows, "mosaicml", r.mosaicml_mean_abs_pct, r.mosaicml_max_abs_pct);
  detail::public_rows(k, catalog, r.rows, r.skipped, {}, {}, &r.async_tp_speedup);
  detail::saved_tensor_rows(r.rows);
  detail::train_probe_rows(k, catalog, r.rows, r.skipped);
  detail::blackwell_rows(k, catalog, r.rows, r.skipped);
  r.sources = source_summaries(r.rows, r.skipped);
  detail::measured_layer_rows(k, catalog, r.measured_layers);
  return r;
}

nlohmann::ordered_json to_json(const ValidationReport& r) {
  nlohmann::ordered_json j;
  j["time_mean_abs_pct"] = r.time_mean_abs_pct;
  j["time_max_abs_pct"] = r.time_max_abs_pct;
  j["memory_mean_abs_pct"] = r.memory_mean_abs_pct;
  j["memory_max_abs_pct"] = r.memory_max_abs_pct;
  j["mosaicml_mean_abs_pct"] = r.mosaicml_mean_abs_pct;
  j["mosaicml_max_abs_pct"] = r.mosaicml_max_abs_pct;
  j["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows) {
    nlohmann::ordered_json e;
    e["dataset"] = row.dataset;
    e["name"] = row.name;
    e["metric"] = row.metric;
    e["predicted"] = row.predicted;
    e["measured"] = row.measured;
    e["error_pct"] = row.error_pct;
    e["fits"] = row.fits;
    if (row.memory_fraction > 0) e["memory_fraction"] = row.memory_fraction;
    j["rows"].push_back(e);
  }
  j["sources"] = nlohmann::ordered_json::array();
  for (const auto& s : r.sources)
    j["sources"].push_back({{"dataset", s.dataset}, {"metric", s.metric}, {"rows", s.rows}, {"skipped", s.skipped},
                            {"not_fit", s.not_fit}, {"mean_abs_pct", s.mean_abs_pct}, {"max_abs_pct", s.max_abs_pct},
                            {"target_mean_pct", s.target_mean_pct}, {"target_max_pct", s.target_max_pct},
                            {"met", s.met()}});
  j["async_tp_speedup"] = nlohmann::ordered_json::array();
  for (const auto& a : r.async_tp_speedup)
    j["async_tp_speedup"].push_back({{"name", a.name}, {"predicted", a.predicted}, {"measured", a.measured},
                                     {"error_pct", a.error_pct}});
  j["measured_layers"] = nlohmann::ordered_json::array();
  for (const auto& a : r.measured_layers)
    j["measured_layers"].push_back({{"dataset", a.dataset}, {"name", a.name}, {"metric", a.metric},
                                    {"predicted", a.predicted}, {"measured", a.measured}, {"error_pct", a.error_pct}});
  j["skipped"] = nlohmann::ordered_json::array();
  for (const auto& s : r.skipped)
    j["skipped"].push_back({{"dataset", s.dataset}, {"name", s.name}, {"reason", s.reason}});
  return j;
}

CostConstants fit_constants_to_table5(const CostConstants& start) {
  const auto catalog = hw::builtin_catalog();
  const auto data = core::embedded_json(kKorthikanti);
  CostConstants best = start;
  double best_err = table5_error(best, catalog, data);
  // Coordinate search over three parameters, shrinking steps; deterministic.
  struct Param {
    double CostConstants::*field;
    double lo, hi, step;
    bool log_scale;
  };
  std::vector<Param> params = {{&CostConstants::gemm_max_efficiency, 0.3, 1.0, 0.05, false},
                               {&CostConstants::gemm_half_flops, 1e6, 1e12, 4.0, true},
                               {&CostConstants::intra_node_bw_efficiency, 0.3, 1.0, 0.05, false},
                               {&CostConstants::memory_bw_efficiency, 0.3, 1.0, 0.05, false}};
  for (int round = 0; round < 6; ++round) {
    for (auto& p : params) {
      for (int dir : {-1, 1}) {
        for (int tries = 0; tries < 40; ++tries) {
          CostConstants cand = best;
          double& f = cand.*(p.field);
          f = p.log_scale ? (dir > 0 ? f * p.step : f / p.step) : f + dir * p.step;
          if (f < p.lo || f > p.hi) break;
          const double err = table5_error(cand, catalog, data);
          if (err + 1e-12 < best_err) {
            best = cand;
            best_err = err;
          } else {
            break;
          }
        }
      }
      p.step = p.log_scale ? std::sqrt(p.step) : p.step / 2;
    }
  }
  return best;
}

namespace {

// Mean absolute % error of the public rows that pass the filters.
double public_error(const CostConstants& k, const hw::Catalog& catalog, const std::string& dtype,
                    const std::string& gpu, const std::string& source) {
  std::vector<ValidationRow> rows;
  std::vector<SkippedRow> skipped;
  detail::public_rows(k, catalog, rows, skipped, dtype, gpu, nullptr, source);
  double sum = 0;
  for (const auto& r : rows) sum += std::abs(r.error_pct);
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

// One parameter on a grid of `step` (default 0.01) over [lo, hi]: a bounded 1-D problem, exact enough and
// deterministic.
struct Grid {
  double lo = 0.3, hi = 1.0, step = 0.01;
};
template <typename Set>
CostConstants fit_on_grid(const CostConstants& start, Grid grid, Set set, const std::string& dtype,
                          const std::string& gpu, const std::string& source = {}) {
  const auto catalog = hw::builtin_catalog();
  CostConstants best = start;
  double best_err = -1;
  const int first = static_cast<int>(std::lround(grid.lo / grid.step));
  const int last = static_cast<int>(std::lround(grid.hi / grid.step));
  for (int i = first; i <= last; ++i) {
    CostConstants cand = start;
    set(cand, i * grid.step);
    const double err = public_error(cand, catalog, dtype, gpu, source);
    if (best_err < 0 || err + 1e-12 < best_err) {
      best = cand;
      best_err = err;
    }
  }
  return best;
}
template <typename Set>
CostConstants fit_one(const CostConstants& start, double lo, Set set, const std::string& dtype,
                      const std::string& gpu, const std::string& source = {}) {
  return fit_on_grid(start, Grid{lo, 1.0, 0.01}, set, dtype, gpu, source);
}

}  // namespace

CostConstants fit_h100_to_public_rows(const CostConstants& start) {
  return fit_one(
      start, 0.3,
      [](CostConstants& k, double v) {
        // The H200 has the H100 SXM's compute die (132 SMs, same clocks and peaks): the factor applies to both.
        std::erase_if(k.gpu_compute_efficiency,
                      [](const auto& e) { return e.first == "h100-sxm" || e.first == "h200"; });
        k.gpu_compute_efficiency.emplace_back("h100-sxm", v);
        k.gpu_compute_efficiency.emplace_back("h200", v);
      },
      "bf16", "H100");
}

CostConstants fit_torchtitan_gpu_to_its_rows(const CostConstants& start) {
  // torchtitan's Grand Teton H100 (96 GB HBM2e, 500 W power limit; validate_public's h100-sxm-96gb-500w) is the
  // GPU of the torchtitan rows only: its own factor (longest prefix wins over h100-sxm), fitted to all of them
  // (bf16 and tensorwise fp8, vanilla and async TP). The h100-sxm fit does not see these rows once it exists.
  return fit_one(
      start, 0.3,
      [](CostConstants& k, double v) {
        std::erase_if(k.gpu_compute_efficiency, [](const auto& e) { return e.first == "h100-sxm-96gb-500w"; });
        k.gpu_compute_efficiency.emplace_back("h100-sxm-96gb-500w", v);
      },
      "", "96GB");
}

CostConstants fit_fp8_to_public_rows(const CostConstants& start) {
  // Up to 1.5: the bf16 curve it scales carries the H100 factor, which also holds the bf16 stacks' non-GEMM
  // slowness (docs/cost-model.md, Validation), so fp8 GEMMs may reach more than twice its speed; the product
  // stays below the fp8 peak (0.75 · 0.72 · 1.5 = 0.82).
  return fit_on_grid(
      start, Grid{0.3, 1.5, 0.01}, [](CostConstants& k, double v) { k.fp8_gemm_relative_efficiency = v; }, "fp8", "");
}

CostConstants fit_flash1_to_foundry_rows(const CostConstants& start) {
  return fit_one(
      start, 0.05, [](CostConstants& k, double v) { k.flash1_attention_efficiency = v; }, "", "", "llm-foundry");
}

CostConstants fit_ampere_attention_to_foundry_h100_rows(const CostConstants& start) {
  // The llm-foundry rows on H100 (bf16 and fp8) run FlashAttention v1 on Hopper, at every sequence length from 512
  // to 64 k: the attention share separates this factor from the H100 GEMM factor. Every Hopper GPU of the catalog
  // (H100 SXM, PCIe and the torchtitan variant by the "h100" prefix; H200) has the same SM, so one value.
  return fit_one(
      start, 0.3,
      [](CostConstants& k, double v) {
        std::erase_if(k.ampere_attention_gpu_efficiency,
                      [](const auto& e) { return e.first == "h100" || e.first == "h200"; });
        k.ampere_attention_gpu_efficiency.emplace_back("h100", v);
        k.ampere_attention_gpu_efficiency.emplace_back("h200", v);
      },
      "", "H100", "llm-foundry");
}

CostConstants fit_eager_to_foundry_a100_rows(const CostConstants& start) {
  // The A100 llm-foundry rows: eager element-wise ops without the H100 factor (which is fitted on the H100 rows).
  return fit_one(
      start, 0.05, [](CostConstants& k, double v) { k.eager_elementwise_efficiency = v; }, "bf16", "A100",
      "llm-foundry");
}

CostConstants fit_cudnn_to_nemo_rows(const CostConstants& start) {
  return fit_one(
      start, 0.05, [](CostConstants& k, double v) { k.cudnn_attention_efficiency = v; }, "", "", "nemo-long-seq");
}

CostConstants fit_public_constants(const CostConstants& start) {
  // Coupled groups, alternated three times each (a deterministic coordinate search): the H100 GEMM factor (bf16
  // H100 rows) with FlashAttention v1 (llm-foundry rows, whose H100 part shares the factor) and its Hopper factor
  // (llm-foundry H100 rows); then cuDNN fused
  // attention (NeMo long-sequence rows, attention-dominated) with the fp8 GEMM efficiency (fp8 rows). torchtitan's
  // GPU factor closes each round (its rows have bf16 and fp8 parts). From the data file's values, the result is
  // those values again (a fixed point; docs/cost-model.md, Validation).
  // The async-TP contention first (a speedup ratio, nearly independent of the compute constants; the
  // Megatron-Bridge fp8 rows run with it), and once more at the end with the fitted compute constants.
  CostConstants k = fit_tp_overlap_to_async_rows(start);
  for (int round = 0; round < 3; ++round)
    k = fit_torchtitan_gpu_to_its_rows(fit_ampere_attention_to_foundry_h100_rows(
        fit_flash1_to_foundry_rows(fit_h100_to_public_rows(fit_eager_to_foundry_a100_rows(k)))));
  for (int round = 0; round < 3; ++round)
    k = fit_torchtitan_gpu_to_its_rows(fit_fp8_to_public_rows(fit_cudnn_to_nemo_rows(k)));
  return fit_blackwell_constants(fit_tp_overlap_to_async_rows(k));
}

CostConstants fit_tp_overlap_to_async_rows(const CostConstants& start) {
  // Rows on the torchtitan GPU ("96GB") hold every async/vanilla pair; the error is on the speedup ratio, so the
  // compute constants fitted before cancel out.
  const auto catalog = hw::builtin_catalog();
  CostConstants best = start;
  double best_err = -1;
  for (int i = 100; i <= 300; ++i) {
    CostConstants cand = start;
    cand.tp_async_overlap_slowdown = i / 100.0;
    std::vector<ValidationRow> rows, speedups;
    std::vector<SkippedRow> skipped;
    detail::public_rows(cand, catalog, rows, skipped, "", "96GB", &speedups);
    double err = 0;
    for (const auto& r : speedups) err += std::abs(r.error_pct);
    err = speedups.empty() ? 0 : err / static_cast<double>(speedups.size());
    if (best_err < 0 || err + 1e-12 < best_err) {
      best = cand;
      best_err = err;
    }
  }
  return best;
}

}  // namespace strata::cost
