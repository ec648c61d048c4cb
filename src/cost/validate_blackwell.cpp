// cost/validate_blackwell: the sources "megatron-bridge blackwell" and "amd mlperf" of `strata validate` — dense
// Llama pre-training throughput on B200, B300, GB200 and GB300 (NVIDIA-NeMo/Megatron-Bridge performance summaries,
// data/calibration/megatron_bridge_perf.json, one row per release and precision) and on MI350X / MI355X (AMD's MLPerf
// Training v5.1 submissions, data/calibration/amd_training_rows.json), each row as a strata model, cluster and
// strategy. The mapping is documented in docs/cost-model.md §Validation (Blackwell and MI3xx).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "validate_internal.hpp"

namespace strata::cost::detail {
namespace {

constexpr const char* kBridgeRows = "calibration/megatron_bridge_perf.json";
constexpr const char* kAmdRows = "calibration/amd_training_rows.json";
constexpr const char* kBridgeRecipes = "calibration/megatron_bridge_row_recipes.json";

int bw_int_or(const core::Json& j, const char* key, int fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<int>();
}

// Published precision labels → strata dtypes: FP8 current/delayed scaling (and 25.09's unstated FP8) → fp8,
// MXFP8 → mxfp8, NVFP4 → fp4, BF16 → bf16. Blockwise FP8 (128×128, DeepSeek-style) is not a strata recipe.
std::optional<hw::Dtype> bw_row_dtype(const std::string& norm) {
  if (norm == "fp8" || norm == "fp8-cs" || norm == "fp8-ds") return hw::Dtype::fp8;
  if (norm == "mxfp8") return hw::Dtype::mxfp8;
  if (norm == "nvfp4") return hw::Dtype::fp4;
  if (norm == "bf16") return hw::Dtype::bf16;
  return std::nullopt;
}

// The zoo model of a Llama row at the row's sequence length (Llama 3.1 405B has Llama 3 405B's shape).
model::Model bw_row_model(const std::string& key, std::int64_t seq) {
  const std::string zoo = key == "llama3.1-405b" ? "llama3-405b" : key == "llama3.1-8b" ? "llama3-8b" : key;
  return model::with_seq(model::zoo_model(zoo), seq);
}

// The node the row ran on: DGX B200/B300 (8 GPUs); a GB200/GB300 NVL72 rack of which at most 64 GPUs are one
// job's NVLink domain (16 of its 18 trays: NVIDIA's Slurm segment of 16 four-GPU trays, assumed — the tables state
// only the GPU count); MI350X/MI355X 8-GPU nodes.
hw::Cluster bw_row_cluster(const std::string& gpu, int gpus, const hw::Catalog& catalog) {
  const std::string preset = gpu == "b200" ? "dgx-b200" : gpu == "b300" ? "dgx-b300" : gpu == "gb200" ? "gb200-nvl72"
                             : gpu == "gb300" ? "gb300-nvl72" : gpu;
  hw::NodeSpec node = catalog.node(preset, "gpu");
  if (node.gpus > 8) {
    node.gpus = std::min(64, gpus);
    node.nics = node.gpus;
    node.gpus_per_host = node.gpus % 4 == 0 ? 4 : 0;
  }
  node.gpus = std::min(node.gpus, gpus);
  if (gpus % node.gpus != 0) throw core::InputError(fmt::format("{} GPUs do not fill {}-GPU nodes", gpus, node.gpus));
  hw::Cluster c;
  c.name = fmt::format("{}-row:{}", preset, gpus / node.gpus);
  hw::add_nodes(c, node, gpus / node.gpus, catalog);
  return c;
}

// Megatron-core as the perf recipes run it: distributed optimizer (ZeRO-1) or Megatron-FSDP (the `fsdp` column),
// sequence parallelism and TransformerEngine's userbuffers TP overlap with tp > 1 (as the H100 Megatron-Bridge rows,
// validate_public.cpp), interleaved 1F1B with vp > 1, cuDNN fused attention, fused element-wise kernels, and the
// recipe's memory knobs (apply_recipe).
Strategy bw_row_strategy(const core::Json& row, int gpus, hw::Dtype dtype) {
  Strategy s;
  s.tp = bw_int_or(row, "tp", 1);
  s.pp = bw_int_or(row, "pp", 1);
  s.cp = bw_int_or(row, "cp", 1);
  s.dp = gpus / (s.tp * s.pp * s.cp);
  s.micro_batch = bw_int_or(row, "mbs", 1);
  s.global_batch = row.at("gbs").get<std::int64_t>();
  if (const int vp = bw_int_or(row, "vp", 1); vp > 1) {
    s.virtual_stages = vp;
    s.schedule = Schedule::interleaved;
  }
  s.zero_stage = bw_int_or(row, "fsdp", 0) > 0 ? 3 : 1;
  s.recompute = model::Recompute::none;  // no recipe of these rows recomputes (megatron_bridge_row_recipes.json)
  s.sequence_parallel = s.tp > 1;
  s.tp_async = s.sequence_parallel;
  s.dtype = dtype;
  s.attention = model::AttentionKernel::cudnn;
  return s;
}

// The memory knobs of the recipe the row ran with (data/calibration/megatron_bridge_row_recipes.json): CPU
// activation offloading, FP8/FP4 parameter gather, the bf16 gradient buffer. AMD's rows have none.
void apply_bw_recipe(Strategy& s, const core::Json* recipe) {
  if (recipe == nullptr) return;
  s.activation_offload_layers = recipe->value("offload", 0);
  s.low_precision_weights = recipe->value("lpweights", false) &&
                            (s.dtype == hw::Dtype::fp8 || s.dtype == hw::Dtype::mxfp8 || s.dtype == hw::Dtype::fp4);
  s.grad_buffer_bf16 = recipe->value("gradbuf_bf16", false);
}

struct BwRowInput {
  std::string dataset, name, gpu, model_key, precision;
  int gpus = 0;
  std::int64_t seq = 0;
  double measured = 0;  // tokens/s per GPU
  const core::Json* recipe = nullptr;  // the row's recipe knobs, when known
};

void add_bw_row(const CostConstants& k, const hw::Catalog& catalog, const core::Json& row, const BwRowInput& in,
             std::vector<ValidationRow>& out, std::vector<SkippedRow>& skipped) {
  const auto dtype = bw_row_dtype(in.precision);
  if (!dtype) {
    skipped.push_back({in.dataset, in.name, fmt::format("precision {} is not a strata recipe", in.precision)});
    return;
  }
  try {
    const model::Model m = bw_row_model(in.model_key, in.seq);
    const hw::Cluster c = bw_row_cluster(in.gpu, in.gpus, catalog);
    Strategy given = bw_row_strategy(row, in.gpus, *dtype);
    apply_bw_recipe(given, in.recipe);
    const Strategy s = complete_strategy(given, m, c);
    CostOptions opt;
    opt.constants = &k;
    const Estimate e = estimate(m, c, s, opt);
    const double predicted = e.tokens_per_s / in.gpus;
    out.push_back({in.dataset, in.name, "tokens_per_s_per_gpu", predicted, in.measured,
                   pct_error(predicted, in.measured), e.fits, e.peak_memory_bytes / c.gpu_types.front().memory_bytes});
  } catch (const core::InputError& err) {
    skipped.push_back({in.dataset, in.name, err.what()});
  }
}

// The precision filters of the fits: per-tensor fp8 (the GPU factors), mxfp8, nvfp4.
bool bw_precision_matches(const std::string& norm, const std::string& filter) {
  if (filter.empty()) return true;
  if (filter == "fp8") return norm == "fp8" || norm == "fp8-cs" || norm == "fp8-ds";
  return norm == filter;
}

}  // namespace

void blackwell_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                    std::vector<SkippedRow>& skipped, const RowFilter& filter) {
  const core::Json bridge = core::embedded_json(kBridgeRows);
  const core::Json recipes = core::embedded_json(kBridgeRecipes);
  for (const auto& row : bridge.at("rows")) {
    const std::string gpu = row.at("gpu").get<std::string>();
    if (gpu != "b200" && gpu != "b300" && gpu != "gb200" && gpu != "gb300") continue;
    if (row.value("superseded", false) || row.value("moe", false) || row.value("task", "") != "pretrain") continue;
    const std::string key = row.value("model_key", std::string());
    if (key.rfind("llama3", 0) != 0) continue;  // the dense models of the zoo; MoE and Nemotron-H rows wait
    if (!filter.gpu.empty() && gpu.rfind(filter.gpu, 0) != 0) continue;
    if (!bw_precision_matches(row.at("precision_norm").get<std::string>(), filter.precision)) continue;
    BwRowInput in;
    in.dataset = kBlackwellDataset;
    in.gpu = gpu;
    in.gpus = row.at("num_gpus").get<int>();
    in.model_key = key;
    in.precision = row.at("precision_norm").get<std::string>();
    in.seq = row.at("seq").get<std::int64_t>();
    in.measured = row.at("tokens_per_s_per_gpu").get<double>();
    const std::string id = row.at("id").get<std::string>();
    if (const auto it = recipes.at("rows").find(id); it != recipes.at("rows").end()) in.recipe = &*it;
    in.name = fmt::format("{} {} {}x{} {} {}", id, key, in.gpus, gpu, in.precision,
                          row.at("release").get<std::string>().substr(0, 8));
    // Only stated configurations: 25.09's table has no precision column, and a published layout that matches no
    // recipe of its release leaves the run's memory settings unknown (megatron_bridge_row_recipes.json "status").
    if (!row.at("precision").is_string()) {
      skipped.push_back({in.dataset, in.name, "the table states no precision (25.09; inferred, not published)"});
      continue;
    }
    if (in.recipe != nullptr && in.recipe->value("status", std::string()) == "layout_mismatch") {
      skipped.push_back({in.dataset, in.name, "its published layout matches no recipe of its release, so its memory "
                                              "settings are not stated"});
      continue;
    }
    add_bw_row(k, catalog, row, in, out, skipped);
  }
  const core::Json amd = core::embedded_json(kAmdRows);
  for (const auto& row : amd.at("rows")) {
    if (row.value("task", "") != "pretrain") continue;  // the Llama 2 70B LoRA rows belong to fine-tuning
    if (!filter.gpu.empty() && row.at("gpu").get<std::string>().rfind(filter.gpu, 0) != 0) continue;
    if (!filter.precision.empty() && filter.precision != "fp8") continue;
    BwRowInput in;
    in.dataset = kAmdDataset;
    in.gpu = row.at("gpu").get<std::string>();
    in.gpus = row.at("num_gpus").get<int>();
    in.model_key = row.at("model_key").get<std::string>();
    // MLPerf logs state "FP8" only (no precision_norm): per-tensor FP8 (TransformerEngine's hybrid recipe).
    in.precision = row.contains("precision_norm") && row.at("precision_norm").is_string()
                       ? row.at("precision_norm").get<std::string>()
                       : core::to_lower(row.at("precision").get<std::string>());
    in.seq = row.at("seq").get<std::int64_t>();
    in.measured = row.at("tokens_per_s_per_gpu_derived").get<double>();
    in.name = fmt::format("{} {} {}x{} {} {}", row.at("id").get<std::string>(), in.model_key, in.gpus, in.gpu,
                          in.precision, row.at("release").get<std::string>());
    add_bw_row(k, catalog, row, in, out, skipped);
  }
}

double blackwell_error(const CostConstants& k, const hw::Catalog& catalog, const RowFilter& filter) {
  std::vector<ValidationRow> rows;
  std::vector<SkippedRow> skipped;
  blackwell_rows(k, catalog, rows, skipped, filter);
  double sum = 0;
  for (const auto& r : rows) sum += std::abs(r.error_pct);
  return rows.empty() ? 0 : sum / static_cast<double>(rows.size());
}

}  // namespace strata::cost::detail

namespace strata::cost {
namespace {

// One constant on a grid of 0.01 over [lo, hi] against the Blackwell/MI3xx rows that pass `filter` (the same
// deterministic 1-D search as the public-row fits, validate.cpp).
template <typename Set>
CostConstants fit_blackwell_grid(const CostConstants& start, double lo, double hi, Set set,
                                 const detail::RowFilter& filter) {
  const auto catalog = hw::builtin_catalog();
  CostConstants best = start;
  double best_err = -1;
  for (int i = static_cast<int>(std::lround(lo * 100)); i <= static_cast<int>(std::lround(hi * 100)); ++i) {
    CostConstants cand = start;
    set(cand, i / 100.0);
    const double err = detail::blackwell_error(cand, catalog, filter);
    if (best_err < 0 || err + 1e-12 < best_err) {
      best = cand;
      best_err = err;
    }
  }
  return best;
}

void set_bw_gpu_factor(CostConstants& k, const std::string& gpu, double v) {
  std::erase_if(k.gpu_compute_efficiency, [&](const auto& e) { return e.first == gpu; });
  k.gpu_compute_efficiency.emplace_back(gpu, v);
}

}  // namespace

CostConstants fit_blackwell_gpu_to_bridge_rows(const CostConstants& start, const std::string& gpu) {
  // The GPU's end-to-end factor on its per-tensor fp8 rows (the precision whose GEMM efficiency the H100 rows
  // fitted). B300 has no dense row: it takes GB300's factor (the same Blackwell Ultra die), an assumption.
  return fit_blackwell_grid(
      start, 0.3, 1.2,
      [&](CostConstants& k, double v) {
        set_bw_gpu_factor(k, gpu, v);
        if (gpu == "gb300") set_bw_gpu_factor(k, "b300", v);
      },
      {gpu, "fp8"});
}

CostConstants fit_mxfp8_to_bridge_rows(const CostConstants& start) {
  return fit_blackwell_grid(
      start, 0.3, 1.5, [](CostConstants& k, double v) { k.mxfp8_gemm_relative_efficiency = v; }, {"", "mxfp8"});
}

CostConstants fit_fp4_to_bridge_rows(const CostConstants& start) {
  // Per part on its NVFP4 rows (GB200, GB300); B200 takes GB200's value and B300 GB300's (the same dies).
  CostConstants k = start;
  for (const char* gpu : {"gb200", "gb300"}) {
    const std::string twin = std::string(gpu) == "gb200" ? "b200" : "b300";
    k = fit_blackwell_grid(
        k, 0.3, 1.5,
        [&](CostConstants& c, double v) {
          for (const std::string& g : {std::string(gpu), twin}) {
            std::erase_if(c.fp4_gemm_gpu_efficiency, [&](const auto& e) { return e.first == g; });
            c.fp4_gemm_gpu_efficiency.emplace_back(g, v);
          }
        },
        {gpu, "nvfp4"});
  }
  return k;
}

CostConstants fit_cdna4_to_mlperf_rows(const CostConstants& start) {
  // MI350X and MI355X (CDNA 4) share one factor, fitted to the two MLPerf pre-training rows (both fp8).
  return fit_blackwell_grid(
      start, 0.3, 1.2, [](CostConstants& k, double v) { set_bw_gpu_factor(k, "mi35", v); }, {"mi35", "fp8"});
}

CostConstants fit_blackwell_constants(const CostConstants& start) {
  // The GPU factors (their fp8 rows), then the MXFP8 and NVFP4 efficiencies (their rows on every GPU), alternated
  // three times; the other fits never see these rows, so this group runs after them (fit_public_constants).
  CostConstants k = start;
  for (int round = 0; round < 3; ++round) {
    for (const char* gpu : {"b200", "gb200", "gb300"}) k = fit_blackwell_gpu_to_bridge_rows(k, gpu);
    k = fit_fp4_to_bridge_rows(fit_mxfp8_to_bridge_rows(k));
  }
  return fit_cdna4_to_mlperf_rows(k);
}

}  // namespace strata::cost
