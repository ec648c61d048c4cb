// cost/validate_train: the sources "PyTorch training H100 (memory|time)" of `strata validate` — whole models trained
// on one H100 by the loop most PyTorch users write (scripts/gpu_train_probe.py; data/calibration/
// gpu_train_h100-sxm.json) against `strata estimate --engine pytorch` of the same model, batch and recompute.
// A check: no constant is fitted to these rows except efficient_attention_efficiency (the fp32 rows, said there).
#include <fmt/format.h>

#include <string>
#include <vector>

#include "strata/core/data.hpp"
#include "strata/cost/engine.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "validate_internal.hpp"

namespace strata::cost::detail {
namespace {

constexpr const char* kTrainRows = "calibration/gpu_train_h100-sxm.json";

// The probe files: each its GPU (one GPU of that node preset) and its two datasets. The H200 set (issue 50 item 5)
// is the gradient-accumulation, torch.compile, fp32 and memory-limit sweep.
struct ProbeSource {
  const char* file;
  const char* node;
  const char* memory_dataset;
  const char* time_dataset;
};
constexpr ProbeSource kProbeSources[] = {
    {kTrainRows, "dgx-h100", kTrainMemoryDataset, kTrainTimeDataset},
    {"calibration/gpu_train_h200_accum.json", "dgx-h200", kTrainH200MemoryDataset, kTrainH200TimeDataset},
};

// One GPU of the node preset (the probe's GPU: H100 80GB HBM3 or H200 141 GB, 700 W).
hw::Cluster one_gpu(const hw::Catalog& catalog, const char* preset) {
  hw::NodeSpec node = catalog.node(preset);
  node.name = std::string(preset) + "-probe";
  node.gpus = 1;
  hw::Cluster c;
  c.name = node.name + ":1";
  hw::add_nodes(c, node, 1, catalog);
  return c;
}

// The row's strategy on the pytorch engine's stack (autocast, SDPA, fp32 loss, fused AdamW, on-demand grads,
// torch.utils.checkpoint's early stop).
Strategy row_strategy(const core::Json& row, const hw::Cluster& c, const std::string& file) {
  const std::string where = file + ": rows";
  Strategy s;
  s.dp = 1;
  s.tp = 1;
  s.pp = 1;
  s.micro_batch = row.at("mbs").get<int>();
  s.global_batch = s.micro_batch * row.at("grad_accum").get<int>();
  s.dtype = hw::parse_dtype(row.at("dtype").get<std::string>(), where + ": dtype");
  s.recompute = model::parse_recompute(row.at("recompute").get<std::string>(), where + ": recompute");
  apply_engine_traits(engine_profile("pytorch"), c, s);
  // torch.compile rows (the probe's `elementwise: fused`): the user's key wins over the engine's eager trait.
  if (row.value("elementwise", std::string("eager")) == "fused") s.eager_elementwise = false;
  return s;
}

}  // namespace

namespace {

void probe_source_rows(const CostConstants& k, const hw::Catalog& catalog, const ProbeSource& src,
                       std::vector<ValidationRow>& out, std::vector<SkippedRow>& skipped) {
  const std::string file = src.file;
  const core::Json doc = core::embedded_json(file);
  const hw::Cluster c = one_gpu(catalog, src.node);
  CostOptions opt;
  opt.constants = &k;
  for (const auto& row : doc.at("rows")) {
    const std::string name = row.at("name").get<std::string>();
    core::Json mj = row.at("model");
    mj["seq"] = row.at("seq");  // the run's sequence (the model's own is a default its layers would take)
    const model::Model m = model::model_from_json(mj, "data/" + file);
    const Strategy s = complete_strategy(row_strategy(row, c, file), m, c);
    const Estimate e = estimate(m, c, s, opt);
    // torch.cuda.max_memory_allocated counts the caching allocator's blocks: not the CUDA context (part of
    // strata's workspace_bytes), nor the reserved-but-free gap (the headroom).
    const auto& st = e.stages.front();
    const double predicted = st.memory_bytes - st.memory.workspace_bytes;
    if (row.value("oom", false)) {
      const bool agrees = !e.fits;
      skipped.push_back({src.memory_dataset, name,
                         fmt::format("ran out of memory on the GPU; strata predicts {:.1f} GiB allocated, {}", predicted / (1ull << 30),
                                     agrees ? "does not fit (agrees)" : "FITS (disagrees)")});
      continue;
    }
    const double measured = row.at("peak_allocated_bytes").get<double>();
    out.push_back({src.memory_dataset, name, "peak_allocated_gib", predicted / (1ull << 30),
                   measured / (1ull << 30), pct_error(predicted, measured), e.fits,
                   e.peak_memory_bytes / c.gpu_types.front().memory_bytes});
    const double t = row.at("step_time_s").get<double>();
    out.push_back({src.time_dataset, name, "step_time_ms", e.iteration_time_s * 1e3, t * 1e3,
                   pct_error(e.iteration_time_s, t), e.fits});
  }
}

}  // namespace

void train_probe_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out,
                      std::vector<SkippedRow>& skipped) {
  for (const ProbeSource& src : kProbeSources) probe_source_rows(k, catalog, src, out, skipped);
}

}  // namespace strata::cost::detail
