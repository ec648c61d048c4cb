// export/torchtitan_import: a torchtitan job TOML read back into a strategy (defaults of the toml_last snapshot:
// local_batch_size 8, global_batch_size -1 = local·dp, dp_shard -1 = the rest of the world, schedule 1F1B,
// activation_checkpoint.mode selective). HSDP (replicate > 1 and shard > 1) has no strata equivalent.
#include <fmt/format.h>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/export/toml.hpp"

namespace strata::exporter {
namespace {

struct Section {
  const nlohmann::json& j;
  std::string name, origin;
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw core::InputError(fmt::format("{}: [{}] {}: {}", origin, name, key, problem));
  }
  std::int64_t num(const std::string& key, std::int64_t fallback, std::int64_t min) const {
    if (!j.contains(key)) return fallback;
    if (!j.at(key).is_number_integer()) fail(key, "expected an integer");
    const auto v = j.at(key).get<std::int64_t>();
    if (v < min) fail(key, fmt::format("must be >= {}, got {}", min, v));
    return v;
  }
  std::string str(const std::string& key, std::string fallback) const {
    if (!j.contains(key)) return fallback;
    if (!j.at(key).is_string()) fail(key, "expected a string");
    return j.at(key).get<std::string>();
  }
  bool flag(const std::string& key, bool fallback) const {
    if (!j.contains(key)) return fallback;
    if (!j.at(key).is_boolean()) fail(key, "expected true or false");
    return j.at(key).get<bool>();
  }
};

Section section(const nlohmann::json& doc, const std::string& name, const std::string& origin) {
  static const nlohmann::json empty = nlohmann::json::object();
  const auto it = doc.find(name);
  if (it != doc.end() && !it->is_object()) throw core::InputError(fmt::format("{}: [{}] is not a section", origin, name));
  return Section{it == doc.end() ? empty : *it, name, origin};
}

// Chain entries per part from module_fqns_per_model_part (tok_embeddings, layers.N in order, norm + output).
std::vector<int> split_of_parts(const Section& p) {
  const auto& parts = p.j.at("module_fqns_per_model_part");
  const std::string key = "module_fqns_per_model_part";
  if (!parts.is_array() || parts.empty()) p.fail(key, "expected a list of lists of module names");
  std::vector<int> split;
  int next_layer = 0;
  bool emb = false, head = false;
  for (const auto& part : parts) {
    if (!part.is_array()) p.fail(key, "expected a list of lists of module names");
    int entries = 0;
    for (const auto& n : part) {
      if (!n.is_string()) p.fail(key, "module names must be strings");
      const std::string name = n.get<std::string>();
      if (name == "tok_embeddings") {
        if (emb || next_layer > 0 || !split.empty()) p.fail(key, "tok_embeddings must come first");
        emb = true;
        ++entries;
      } else if (name.rfind("layers.", 0) == 0) {
        if (!emb || head) p.fail(key, fmt::format("'{}' out of order", name));
        if (detail::parse_int(name.substr(7), p.origin, key, 0) != next_layer)
          p.fail(key, fmt::format("'{}' out of order (expected layers.{})", name, next_layer));
        ++next_layer;
        ++entries;
      } else if (name == "norm") {
        if (head) p.fail(key, "norm given twice");
        head = true;
        ++entries;  // norm + output are strata's one LM-head entry
      } else if (name != "output" || !head) {
        p.fail(key, fmt::format("unknown or misplaced module '{}'", name));
      }
    }
    split.push_back(entries);
  }
  if (!emb || !head) p.fail(key, "needs tok_embeddings first and norm, output last");
  return split;
}

}  // namespace

Imported import_torchtitan_toml(std::string_view text, const std::string& origin) {
  const nlohmann::json doc = parse_toml(text, origin);
  const Section tr = section(doc, "training", origin), par = section(doc, "parallelism", origin);
  const Section ac = section(doc, "activation_checkpoint", origin), mod = section(doc, "model", origin);
  const Section compile = section(doc, "compile", origin);
  Imported im;
  im.engine = Engine::torchtitan;
  cost::Strategy& s = im.strategy;
  const auto replicate = par.num("data_parallel_replicate_degree", 1, 1);
  const auto shard = par.num("data_parallel_shard_degree", -1, -1);
  if (shard == 0) par.fail("data_parallel_shard_degree", "must be -1 or >= 1");
  if (replicate > 1 && shard != 1) par.fail("data_parallel_shard_degree", "HSDP (replicate and shard > 1) is not modelled");
  s.dp = static_cast<int>(shard == -1 ? 0 : replicate * shard);  // 0 = the rest of the world
  const std::string reshard = par.str("fsdp_reshard_after_forward", "default");
  if (reshard != "default" && reshard != "always" && reshard != "never")
    par.fail("fsdp_reshard_after_forward", "expected default, always or never");
  s.tp = static_cast<int>(par.num("tensor_parallel_degree", 1, 1));
  s.pp = static_cast<int>(par.num("pipeline_parallel_degree", 1, 1));
  s.cp = static_cast<int>(par.num("context_parallel_degree", 1, 1));
  if (s.cp > 1 && replicate > 1) par.fail("context_parallel_degree", "replicate > 1 with cp (HSDP over cp) is not modelled");
  // torchtitan's FSDP mesh is dp_shard·cp: cp > 1 shards parameters even with dp_shard = 1 (parallel_dims.py).
  s.zero_stage = shard == 1 && s.cp == 1 ? 0 : reshard == "never" ? 2 : 3;
  s.sequence_parallel = s.tp > 1;
  // Async TP: the chunked collective matmul (overlap=async; torchtitan runs it only under torch.compile).
  s.tp_async = par.flag("enable_async_tensor_parallel", false) && s.tp > 1;
  // torch.compile fuses the element-wise ops; without it (torchtitan's default) each runs as its own kernel.
  s.eager_elementwise = !compile.flag("enable", false);
  const auto local = tr.num("local_batch_size", 8, 1);
  const auto global = tr.num("global_batch_size", -1, -1);
  if (global == 0) tr.fail("global_batch_size", "must be -1 or >= 1");
  if (global == -1 && s.dp == 0) tr.fail("global_batch_size", "-1 needs explicit data-parallel degrees to be costed");
  s.global_batch = global == -1 ? local * s.dp : global;
  s.micro_batch = s.pp > 1 ? par.num("pipeline_parallel_microbatch_size", 1, 1) : local;
  if (s.pp > 1 && local % s.micro_batch != 0)
    par.fail("pipeline_parallel_microbatch_size", "must divide training.local_batch_size");
  const std::string sched = core::to_lower(par.str("pipeline_parallel_schedule", "1F1B"));
  if (sched == "1f1b") s.schedule = cost::Schedule::one_f_one_b;
  else if (sched == "gpipe") s.schedule = cost::Schedule::gpipe;
  else if (sched == "interleaved1f1b") s.schedule = cost::Schedule::interleaved;
  else par.fail("pipeline_parallel_schedule", fmt::format("schedule '{}' is not modelled", sched));
  if (s.pp > 1 && par.j.contains("module_fqns_per_model_part")) {
    s.split = split_of_parts(par);
    if (static_cast<int>(s.split.size()) % s.pp != 0)
      par.fail("module_fqns_per_model_part", fmt::format("{} parts are not divisible by pp = {}", s.split.size(), s.pp));
    s.virtual_stages = static_cast<int>(s.split.size()) / s.pp;
  } else if (s.schedule == cost::Schedule::interleaved) {
    s.virtual_stages = 2;  // torchtitan's default for multi-stage schedules
  }
  const std::string mode = ac.str("mode", "selective");
  if (mode == "memory_budget") ac.fail("mode", "memory_budget is not modelled");
  s.recompute = model::parse_recompute(mode, origin + ": [activation_checkpoint] mode");
  // torchtitan's full AC wraps each block in checkpoint_wrapper (non-reentrant torch.utils.checkpoint), whose
  // recomputation stops early by default (cost::Strategy::recompute_early_stop).
  s.recompute_early_stop = s.recompute == model::Recompute::full;
  const std::string param = tr.str("mixed_precision_param", "bfloat16");
  if (param != "bfloat16" && param != "float32") tr.fail("mixed_precision_param", "expected bfloat16 or float32");
  s.dtype = param == "float32" ? hw::Dtype::fp32 : hw::Dtype::bf16;
  if (mod.j.contains("converters") && mod.j.at("converters").is_array())
    for (const auto& cv : mod.j.at("converters"))
      if (cv == "quantize.linear.float8" || cv == "float8") s.dtype = hw::Dtype::fp8;
      else if (cv == "quantize.linear.mx" || cv == "mx") s.dtype = hw::Dtype::mxfp8;
  s.fp8_separate_casts = s.dtype == hw::Dtype::fp8;  // torchao float8: its own amax and cast kernels per operand
  return im;
}

}  // namespace strata::exporter
