// export/torchtitan_py: a strategy as the current torchtitan configuration (b5bcd76c: a Python module whose
// function returns a Trainer.Config, run with --module/--config; TOML job files are gone since 9810191b) and back.
// The writer starts from torchtitan's own llama3 recipe of the model's flavor and assigns the plan's fields, one
// `config.<section>.<field> = <literal>` per line, which the reader parses. Field names: ../shared/engines/
// torchtitan_config.json snapshot head_python_config; rules: data/engines/rules.json.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::exporter::detail {
namespace {

// torchtitan's llama3 registry (models/llama3/__init__.py llama3_configs) and recipes (config_registry.py).
std::string registered_flavor(const model::Model& m) {
  if (m.name == "llama3-8b") return "8B";
  if (m.name == "llama3-70b") return "70B";
  if (m.name == "llama3-405b") return "405B";
  return "";
}

// Module names per chain entry in the current decoder (models/common/decoder.py: the head is `lm_head`).
std::string decoder_fqn_parts(const cost::Strategy& s, int chain) {
  std::vector<std::string> parts;
  int entry = 0;
  for (int part : s.split) {
    std::vector<std::string> names;
    for (int k = 0; k < part; ++k, ++entry) {
      if (entry == 0) names.push_back("\"tok_embeddings\"");
      else if (entry == chain - 1) names.insert(names.end(), {"\"norm\"", "\"lm_head\""});
      else names.push_back(fmt::format("\"layers.{}\"", entry - 1));
    }
    parts.push_back("[" + core::join(names, ", ") + "]");
  }
  return "[" + core::join(parts, ", ") + "]";
}

}  // namespace

std::string torchtitan_py_problem(const model::Model& m, const cost::Strategy& s) {
  if (registered_flavor(m).empty())
    return fmt::format("model {} (the current torchtitan config starts from a registered llama3 recipe: "
                       "llama3-8b, llama3-70b, llama3-405b)", m.name);
  if (s.dtype == hw::Dtype::fp8 || s.dtype == hw::Dtype::mxfp8)
    return fmt::format("{} (the current format's float8 and mx converters are not written yet)", hw::to_string(s.dtype));
  // b5bcd76c always applies FSDP's mixed-precision policy (llama3/parallelize.py apply_fsdp_to_decoder, also
  // with shard degree 1) and has no DDP path, so the TOML era's DDP and fp32 rules do not apply; cp still
  // shards over dp_shard·cp.
  if (s.cp > 1 && s.zero_stage < 2)
    return "context parallelism without ZeRO-2/3 (torchtitan's cp always shards over dp_shard·cp, rule "
           "torchtitan_cp_fsdp)";
  auto toml_era = s;
  toml_era.zero_stage = s.zero_stage == 0 && s.dp_cp() > 1 ? 2 : s.zero_stage;  // only to skip the TOML-era rules
  if (toml_era.zero_stage == 0) toml_era.dtype = hw::Dtype::fp32;
  return torchtitan_problem(m, toml_era);
}

std::string torchtitan_py(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  const std::string fn = "llama3_" + core::to_lower(registered_flavor(m));
  std::string t = fmt::format(
      "# strata export: torchtitan (current config format, b5bcd76c) for {} on {} ({} GPUs)\n# strategy: {}\n"
      "# Save as strata_plan.py on PYTHONPATH; run: NGPU={} MODULE=strata_plan CONFIG=strata_plan ./run_train.sh\n"
      "# (NGPU must equal dp_replicate·dp_shard·cp·tp·pp.) Data, optimizer and checkpointing: the recipe's.\n"
      "import dataclasses\n\n"
      "from torchtitan.distributed.activation_checkpoint import FullAC, SelectiveAC\n"
      "from torchtitan.models.llama3 import model_registry\n"
      "from torchtitan.models.llama3.config_registry import {}\nfrom torchtitan.trainer import Trainer\n\n\n"
      "def strata_plan() -> Trainer.Config:\n    config = {}()\n",
      m.name, c.name, c.num_devices(), cost::to_cli_string(s), c.num_devices(), fn, fn);
  // The plain model of the flavor: a recipe may convert it (llama3_405b() swaps its Linear layers to float8,
  // config_registry.py:305-321), which would change the dtype strata costs.
  t += fmt::format("    config.model_spec = model_registry(\"{}\")\n", registered_flavor(m));
  auto set = [&](const std::string& field, const std::string& value) { t += "    config." + field + " = " + value + "\n"; };
  // Token-based batch (trainer.py): tokens per dp rank per accumulation step = microbatch tokens × pp microbatches.
  set("training.num_tokens_per_microbatch_per_dp_rank", std::to_string(s.micro_batch * m.seq));
  set("training.num_tokens_per_train_step", std::to_string(s.global_batch * m.seq));
  set("training.max_context_length", std::to_string(m.seq));
  set("training.mixed_precision_param", s.dtype == hw::Dtype::fp32 ? "\"float32\"" : "\"bfloat16\"");
  if (s.pp > 1) set("training.disable_cuda_graphs", "True");  // trainer.py _validate_cuda_graphs
  const bool shard = s.zero_stage >= 2;
  set("parallelism.data_parallel_replicate_degree", std::to_string(shard ? 1 : s.dp));
  set("parallelism.data_parallel_shard_degree", std::to_string(shard ? s.dp : 1));
  if (shard) set("parallelism.fsdp_reshard_after_forward", s.zero_stage == 3 ? "\"always\"" : "\"never\"");
  set("parallelism.tensor_parallel_degree", std::to_string(s.tp));
  set("parallelism.enable_sequence_parallel", s.tp > 1 ? "True" : "False");
  set("parallelism.context_parallel_degree", std::to_string(s.cp));
  set("parallelism.pipeline_parallel_degree", std::to_string(s.pp));
  set("parallelism.pipeline_parallel_schedule", "\"" + torchtitan_schedule_name(s) + "\"");
  set("parallelism.num_pp_microbatches", std::to_string(s.pp > 1 ? s.num_micro_batches() : 1));
  if (s.pp > 1) set("parallelism.module_fqns_per_model_part", decoder_fqn_parts(s, static_cast<int>(m.layers.size())));
  const auto ac = s.recompute == model::Recompute::full ? "FullAC.Config()"
                  : s.recompute == model::Recompute::none ? "None"
                                                          : "SelectiveAC.Config()";
  t += fmt::format("    config.activation_checkpoint = {}\n", ac);
  set("compile.enable", s.eager_elementwise ? "False" : "True");
  if (!s.eager_elementwise) set("compile.components", "[\"model\", \"loss\"]");
  set("compile.enable_async_tensor_parallel", s.tp_async ? "True" : "False");
  // replace() re-runs Trainer.Config.__post_init__ (num_pp_microbatches, CUDA graphs with PP) on the result.
  t += "    return dataclasses.replace(config)\n";
  return t;
}

}  // namespace strata::exporter::detail

namespace strata::exporter {
namespace {

struct PyFields {
  std::map<std::string, core::Json> values;  // "section.field" -> literal
  std::string ac = "SelectiveAC.Config()";   // Trainer.Config's default activation_checkpoint
  std::string origin;
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw core::InputError(fmt::format("{}: config.{}: {}", origin, key, problem));
  }
  std::int64_t num(const std::string& key, std::int64_t fallback, std::int64_t min) const {
    const auto it = values.find(key);
    if (it == values.end()) return fallback;
    if (!it->second.is_number_integer()) fail(key, "expected an integer");
    const auto v = it->second.get<std::int64_t>();
    if (v < min) fail(key, fmt::format("must be >= {}, got {}", min, v));
    return v;
  }
  std::string str(const std::string& key, std::string fallback) const {
    const auto it = values.find(key);
    if (it == values.end()) return fallback;
    if (!it->second.is_string()) fail(key, "expected a string");
    return it->second.get<std::string>();
  }
  bool flag(const std::string& key, bool fallback) const {
    const auto it = values.find(key);
    if (it == values.end()) return fallback;
    if (!it->second.is_boolean()) fail(key, "expected True or False");
    return it->second.get<bool>();
  }
};

PyFields read_py(std::string_view text, const std::string& origin) {
  static const std::regex field(R"(^\s*config\.([a-z_]+\.[a-z_0-9]+)\s*=\s*(.+?)\s*$)");
  static const std::regex ac(R"(^\s*config\.activation_checkpoint\s*=\s*(.+?)\s*$)");
  PyFields f;
  f.origin = origin;
  std::size_t start = 0;
  while (start < text.size()) {
    const auto end = std::min(text.find('\n', start), text.size());
    const std::string line(text.substr(start, end - start));
    start = end + 1;
    std::smatch mt;
    if (std::regex_match(line, mt, ac)) {
      f.ac = mt[1].str();
    } else if (std::regex_match(line, mt, field)) {
      // Python literals as JSON: True/False, strings in double quotes, ints, lists of strings.
      std::string lit = std::regex_replace(mt[2].str(), std::regex(R"(\bTrue\b)"), "true");
      lit = std::regex_replace(lit, std::regex(R"(\bFalse\b)"), "false");
      f.values[mt[1].str()] = core::parse_json_text(lit, fmt::format("{}: config.{}", origin, mt[1].str()));
    }
  }
  return f;
}

std::vector<int> split_of_fqns(const PyFields& f, const core::Json& parts) {
  const std::string key = "parallelism.module_fqns_per_model_part";
  if (!parts.is_array() || parts.empty()) f.fail(key, "expected a list of lists of module names");
  std::vector<int> split;
  int next_layer = 0;
  for (const auto& part : parts) {
    if (!part.is_array()) f.fail(key, "expected a list of lists of module names");
    int entries = 0;
    for (const auto& n : part) {
      const std::string name = n.is_string() ? n.get<std::string>() : "";
      if (name == "tok_embeddings" || name == "norm") ++entries;  // norm + lm_head: strata's one LM-head entry
      else if (name == "layers." + std::to_string(next_layer)) ++next_layer, ++entries;
      else if (name != "lm_head") f.fail(key, fmt::format("unknown or out-of-order module '{}'", name));
    }
    split.push_back(entries);
  }
  return split;
}

}  // namespace

Imported import_torchtitan_py(std::string_view text, const std::string& origin) {
  const PyFields f = read_py(text, origin);
  Imported im;
  im.engine = Engine::torchtitan;
  cost::Strategy& s = im.strategy;
  const auto replicate = f.num("parallelism.data_parallel_replicate_degree", 1, 1);
  const auto shard = f.num("parallelism.data_parallel_shard_degree", -1, -1);
  if (shard == 0) f.fail("parallelism.data_parallel_shard_degree", "must be -1 or >= 1");
  if (replicate > 1 && shard != 1) f.fail("parallelism.data_parallel_shard_degree", "HSDP is not modelled");
  s.dp = static_cast<int>(shard == -1 ? 0 : replicate * shard);
  s.tp = static_cast<int>(f.num("parallelism.tensor_parallel_degree", 1, 1));
  s.pp = static_cast<int>(f.num("parallelism.pipeline_parallel_degree", 1, 1));
  s.cp = static_cast<int>(f.num("parallelism.context_parallel_degree", 1, 1));
  const std::string reshard = f.str("parallelism.fsdp_reshard_after_forward", "default");
  s.zero_stage = shard == 1 && s.cp == 1 ? 0 : reshard == "never" ? 2 : 3;
  s.sequence_parallel = s.tp > 1 && f.flag("parallelism.enable_sequence_parallel", true);
  s.tp_async = s.tp > 1 && f.flag("compile.enable_async_tensor_parallel", false);
  s.eager_elementwise = !f.flag("compile.enable", false);
  const auto seq = f.num("training.max_context_length", 2048, 1);
  const auto micro_tokens = f.num("training.num_tokens_per_microbatch_per_dp_rank", 16384, 1);
  const auto step_tokens = f.num("training.num_tokens_per_train_step", -1, -1);
  if (micro_tokens % seq != 0) f.fail("training.num_tokens_per_microbatch_per_dp_rank", "not a multiple of max_context_length");
  if (step_tokens < 1 || step_tokens % seq != 0)
    f.fail("training.num_tokens_per_train_step", "needed as a multiple of max_context_length to cost the config");
  s.micro_batch = micro_tokens / seq;
  s.global_batch = step_tokens / seq;
  const std::string sched = core::to_lower(f.str("parallelism.pipeline_parallel_schedule", "1F1B"));
  s.schedule = sched == "gpipe" ? cost::Schedule::gpipe : sched == "interleaved1f1b" ? cost::Schedule::interleaved
                                                                                      : cost::Schedule::one_f_one_b;
  if (sched != "gpipe" && sched != "interleaved1f1b" && sched != "1f1b")
    f.fail("parallelism.pipeline_parallel_schedule", fmt::format("schedule '{}' is not modelled", sched));
  if (const auto it = f.values.find("parallelism.module_fqns_per_model_part"); s.pp > 1 && it != f.values.end()) {
    s.split = split_of_fqns(f, it->second);
    if (static_cast<int>(s.split.size()) % s.pp != 0) f.fail(it->first, "parts are not divisible by pp");
    s.virtual_stages = static_cast<int>(s.split.size()) / s.pp;
  } else if (s.schedule == cost::Schedule::interleaved) {
    s.virtual_stages = 2;
  }
  if (f.ac == "FullAC.Config()") s.recompute = model::Recompute::full;
  else if (f.ac == "None") s.recompute = model::Recompute::none;
  else if (f.ac == "SelectiveAC.Config()") s.recompute = model::Recompute::selective;
  else f.fail("activation_checkpoint", fmt::format("'{}' is not modelled", f.ac));
  s.recompute_early_stop = s.recompute == model::Recompute::full;  // non-reentrant checkpoint stops early
  const std::string param = f.str("training.mixed_precision_param", "bfloat16");
  if (param != "bfloat16" && param != "float32") f.fail("training.mixed_precision_param", "expected bfloat16 or float32");
  s.dtype = param == "float32" ? hw::Dtype::fp32 : hw::Dtype::bf16;
  return im;
}

ExportFile export_torchtitan_py(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  if (const auto p = detail::torchtitan_py_problem(m, s); !p.empty())
    throw core::InputError(fmt::format("export: torchtitan-py cannot express {}", p));
  return {"strata_plan.py", detail::torchtitan_py(m, c, s)};
}

}  // namespace strata::exporter
