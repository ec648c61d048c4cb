// cost/validate_layers: per-layer forward/backward times strata measured on real GPUs
// (data/calibration/gpu_layer_<gpu>_<dtype>.json, written by scripts/gpu_layer_profile.py; issue 13 item 8) against
// the cost model's compute-only prediction of the same tensor-parallel shard (layer_stage_cost, no collectives).
// A check of the model, never a fitting target (constants are fitted only to the published rows).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "strata/core/data.hpp"
#include "strata/cost/precision.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"
#include "validate_internal.hpp"

namespace strata::cost::detail {
namespace {

// The measured files (data/calibration/gpu_layer_*.json), in name order.
std::vector<std::string> layer_files() {
  std::vector<std::string> files;
  for (const auto& name : core::embedded_file_names())
    if (name.rfind("calibration/gpu_layer_", 0) == 0) files.push_back(name);
  std::sort(files.begin(), files.end());
  return files;
}

// One Llama-style block (RMSNorm, RoPE, SwiGLU, no biases or dropout) of the measured shape, between an embedding
// and a head that are not looked at.
model::Model block_model(const core::Json& row, const std::string& origin) {
  model::TransformerConfig cfg;
  cfg.name = "measured-block";
  cfg.layers = 1;
  cfg.hidden = row.at("hidden").get<std::int64_t>();
  cfg.heads = row.at("heads").get<std::int64_t>();
  cfg.kv_heads = row.value("kv_heads", std::int64_t{0});
  cfg.ffn = row.at("ffn").get<std::int64_t>();
  cfg.vocab = 128256;
  cfg.seq = row.at("seq").get<std::int64_t>();
  cfg.activation = model::Activation::swiglu;
  cfg.norm = model::Norm::rmsnorm;
  cfg.tied_embeddings = false;
  cfg.learned_positions = false;
  cfg.bias = false;
  cfg.dropout = false;
  return model::build_transformer(cfg, origin);
}

// One node of `tp` GPUs of the measured type (the shard runs on one of them; the others only size the tp group).
hw::Cluster one_node(const std::string& gpu_type, int tp, const hw::Catalog& catalog) {
  hw::NodeSpec node = catalog.node("dgx-h100");
  node.gpu = gpu_type;
  node.gpus = tp;
  node.name = "measured-" + gpu_type;
  hw::Cluster c;
  c.name = node.name + ":1";
  hw::add_nodes(c, node, 1, catalog);
  return c;
}

// The forward projections (single GEMMs; the fused attention core is timed apart), each priced as
// layer_stage_cost prices it.
double projection_gemm_s(const model::LayerCost& lc, const StageContext& ctx) {
  double t = 0;
  for (const auto& g : lc.fwd_gemms)
    if (g.count == 1) t += gemm_time_s(ctx, g, precision_recipe(ctx.strategy->dtype).activation_bytes_per_element);
  return t;
}

void push(std::vector<ValidationRow>& out, const std::string& dataset, const std::string& name,
          const std::string& metric, double predicted_s, double measured_s) {
  ValidationRow r;
  r.dataset = dataset;
  r.name = name;
  r.metric = metric;
  r.predicted = predicted_s * 1e3;
  r.measured = measured_s * 1e3;
  r.error_pct = pct_error(predicted_s, measured_s);
  out.push_back(r);
}

}  // namespace

void measured_layer_rows(const CostConstants& k, const hw::Catalog& catalog, std::vector<ValidationRow>& out) {
  for (const auto& file : layer_files()) {
    const auto doc = core::embedded_json(file);
    const std::string origin = "data/" + file;
    const std::string gpu = doc.at("gpu_type").get<std::string>();
    const std::string dtype_name = doc.at("dtype").get<std::string>();
    // eager: the script's plain PyTorch block; fused: the same under torch.compile.
    const std::string elementwise = doc.value("elementwise", std::string("eager"));
    const std::string dataset = fmt::format("measured {} {} {}", gpu, dtype_name, elementwise);
    for (const auto& row : doc.at("layers")) {
      const auto m = block_model(row, origin);
      Strategy s;
      s.tp = row.at("tp").get<int>();
      s.micro_batch = row.value("mbs", std::int64_t{1});
      s.global_batch = s.micro_batch;
      s.dtype = hw::parse_dtype(dtype_name, origin + ": dtype");
      s.attention = model::AttentionKernel::flash;  // PyTorch SDPA's flash backend (FlashAttention-2)
      s.eager_elementwise = elementwise == "eager";
      const auto c = one_node(gpu, s.tp, catalog);
      s = complete_strategy(s, m, c);
      CostOptions opt;
      opt.constants = &k;
      std::vector<int> devices(static_cast<std::size_t>(s.tp));
      for (int d = 0; d < s.tp; ++d) devices[d] = d;
      const auto ctx = make_stage_context(m, c, s, devices, opt);
      std::size_t block = 0;
      while (!is_block(m.layers[block].kind)) ++block;
      const auto lsc = layer_stage_cost(m, m.layers[block], ctx, model::Recompute::none);
      const std::string name = fmt::format("llama3-8b block tp={} mbs={} seq={}", s.tp, s.micro_batch, m.seq);
      push(out, dataset, name, "fwd ms", lsc.fwd_compute_s, row.at("fwd_s").get<double>());
      push(out, dataset, name, "bwd ms", lsc.bwd_compute_s, row.at("bwd_s").get<double>());
      if (row.contains("gemm_fwd_s")) {
        model::LayerQuery q;  // the projections' shapes depend on the micro-batch, sequence and tp only
        q.micro_batch = s.micro_batch;
        q.seq = m.seq;
        q.tp = s.tp;
        const auto lc = model::layer_cost(m.layers[block], q);
        push(out, dataset, name, "proj GEMMs fwd ms", projection_gemm_s(lc, ctx),
             row.at("gemm_fwd_s").get<double>());
      }
    }
  }
}

}  // namespace strata::cost::detail
