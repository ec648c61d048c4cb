// export/deepspeed: a strategy as a DeepSpeed JSON config and back (keys and rules: ../shared/engines/
// deepspeed_config.json at edaa7221). Batch identity: train_batch_size = micro × grad_accum × dp, with dp the
// data-parallel size (pipeline and tensor ranks excluded). The pipeline degree is `pipeline.stages` (merged over
// the engine's defaults); tp > 1 is refused (it needs an mpu in the training script); the layer partition is code
// (PipelineModule), so only strata's default split is expressible.
#include <fmt/format.h>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/constants.hpp"

namespace strata::exporter::detail {

std::string deepspeed_problem(const model::Model& m, const cost::Strategy& s) {
  if (s.recompute_early_stop)
    return "earlystop=on (DeepSpeed's activation checkpointing re-runs each checkpointed block's whole forward)";
  if (s.schedule == cost::Schedule::interleaved)
    return "the interleaved schedule (DeepSpeed's pipeline engine holds one stage per rank)";
  if (s.schedule == cost::Schedule::gpipe) return "the gpipe schedule (DeepSpeed's pipeline engine runs 1F1B)";
  if (s.schedule != cost::Schedule::one_f_one_b)
    return fmt::format("the asynchronous {} schedule (DeepSpeed's schedules are synchronous)", cost::to_string(s.schedule));
  // DeepSpeed's PipelineEngine asserts ZeRO stage < 2 (runtime/pipe/engine.py).
  if (s.pp > 1 && s.zero_stage >= 2) return "ZeRO stage 2/3 with pipeline parallelism (DeepSpeed pipelines take ZeRO 0-1)";
  // Without an mpu, DeepSpeedConfig checks train_batch_size = micro × grad_accum × world (runtime/config.py:716-724,
  // :937), and a PipelineModule's default topology is dp = world / pp (runtime/pipe/topology.py): neither sees tp.
  // Building the tp groups is the user's model code (an mpu object), which a config file cannot carry: refused.
  if (s.tp > 1)
    return "tp > 1 (DeepSpeed's batch check and pipeline topology count dp without tp unless the training script "
           "passes an mpu; the ds_config cannot carry one; rule deepspeed_tp_needs_mpu)";
  if (s.cp > 1) return "context parallelism (DeepSpeed's sequence parallelism is Ulysses, not ring attention)";
  if (s.recompute == model::Recompute::selective)
    return "selective recompute (DeepSpeed's activation checkpointing recomputes whole layers)";
  if (!s.recompute_layers.empty()) return "per-stage rlayers (DeepSpeed checkpoints every layer of a stage or none)";
  if (s.sequence_parallel) return "Megatron sequence parallelism (DeepSpeed's sequence parallelism is Ulysses)";
  if (s.dtype == hw::Dtype::tf32 || s.dtype == hw::Dtype::fp8 || s.dtype == hw::Dtype::mxfp8 || s.dtype == hw::Dtype::fp4)
    return fmt::format("the {} compute dtype (DeepSpeed configs: bf16, fp16 or fp32)", hw::to_string(s.dtype));
  if (const auto why = memory_knob_problem(s, "DeepSpeed"); !why.empty()) return why;
  if (s.pp > 1 && s.split != cost::default_split(m, s.pp))
    return "a custom layer split (DeepSpeed partitions layers in code: PipelineModule(partition_method=...))";
  return "";
}

void deepspeed_closest(const model::Model& m, cost::Strategy& s) {
  (void)m;
  s.schedule = cost::Schedule::one_f_one_b;
  s.virtual_stages = 1;
  s.dp *= s.tp * s.cp;  // the tensor- and context-parallel ranks become data-parallel replicas
  s.tp = 1;
  s.cp = 1;
  s.tp_async = false;
  if (s.pp > 1 && s.zero_stage >= 2) s.zero_stage = 1;
  if (s.recompute == model::Recompute::selective) s.recompute = model::Recompute::full;  // never less recompute
  s.recompute_early_stop = false;  // deepspeed.checkpointing re-runs the whole forward
  s.recompute_layers.clear();
  s.sequence_parallel = false;
  if (s.dtype == hw::Dtype::tf32) s.dtype = hw::Dtype::fp32;
  if (s.dtype == hw::Dtype::fp8 || s.dtype == hw::Dtype::mxfp8 || s.dtype == hw::Dtype::fp4) s.dtype = hw::Dtype::bf16;
  s.fp8_separate_casts = false;
  s.split.clear();
  clear_memory_knobs(s);
}

std::string deepspeed_json(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  (void)m;
  (void)c;
  core::OrderedJson j;
  j["train_batch_size"] = s.global_batch;
  j["train_micro_batch_size_per_gpu"] = s.micro_batch;
  j["gradient_accumulation_steps"] = s.num_micro_batches();
  core::OrderedJson z;
  z["stage"] = s.zero_stage;
  if (s.zero_stage > 0) {
    // The cost model's DP bucket (data/cost_constants.json dp_bucket_bytes), in elements of the gradient dtype.
    const auto bucket = static_cast<std::int64_t>(cost::builtin_constants().dp_bucket_bytes / hw::dtype_bytes(s.dtype));
    z["overlap_comm"] = true;
    z["contiguous_gradients"] = true;
    z["reduce_bucket_size"] = bucket;
    z["allgather_bucket_size"] = bucket;
  }
  j["zero_optimization"] = z;
  if (s.dtype == hw::Dtype::bf16) j["bf16"] = {{"enabled", true}};
  if (s.dtype == hw::Dtype::fp16) j["fp16"] = {{"enabled", true}};
  if (s.pp > 1) {
    core::OrderedJson p;
    p["stages"] = s.pp;
    p["activation_checkpoint_interval"] = s.recompute == model::Recompute::full ? 1 : 0;
    j["pipeline"] = p;
  }
  if (s.recompute == model::Recompute::full) {
    core::OrderedJson a;
    a["partition_activations"] = false;
    a["contiguous_memory_optimization"] = false;
    a["cpu_checkpointing"] = false;
    j["activation_checkpointing"] = a;
  }
  return j.dump(2) + "\n";
}

}  // namespace strata::exporter::detail

namespace strata::exporter {
namespace {

std::int64_t int_at(const core::Json& obj, const std::string& key, const std::string& where, std::int64_t fallback,
                    std::int64_t min) {
  if (!obj.is_object() || !obj.contains(key)) return fallback;
  const auto& v = obj.at(key);
  if (!v.is_number_integer()) throw core::InputError(fmt::format("{}: {}: expected an integer", where, key));
  const auto x = v.get<std::int64_t>();
  if (x < min) throw core::InputError(fmt::format("{}: {}: must be >= {}, got {}", where, key, min, x));
  return x;
}

bool enabled(const core::Json& j, const std::string& key) {
  if (!j.contains(key) || !j.at(key).is_object() || !j.at(key).contains("enabled")) return false;
  return j.at(key).at("enabled").is_boolean() && j.at(key).at("enabled").get<bool>();
}

}  // namespace

Imported import_deepspeed_json(std::string_view text, const std::string& origin) {
  const core::Json j = core::parse_json_text(text, origin);
  if (!j.is_object()) throw core::InputError(fmt::format("{}: expected a JSON object (DeepSpeed config)", origin));
  Imported im;
  im.engine = Engine::deepspeed;
  cost::Strategy& s = im.strategy;
  const std::int64_t tb = int_at(j, "train_batch_size", origin, 0, 1);
  const std::int64_t mb = int_at(j, "train_micro_batch_size_per_gpu", origin, 0, 1);
  const std::int64_t ga = int_at(j, "gradient_accumulation_steps", origin, 0, 1);
  if (tb == 0) throw core::InputError(fmt::format("{}: train_batch_size: needed to cost the config", origin));
  if (mb == 0 && ga == 0) throw core::InputError(fmt::format("{}: train_micro_batch_size_per_gpu: needed", origin));
  s.global_batch = tb;
  if (mb > 0 && ga > 0) {
    // The batch identity (config.py:937): tb = mb · ga · dp.
    if (tb % (mb * ga) != 0)
      throw core::InputError(fmt::format("{}: train_batch_size: {} is not micro {} × grad_accum {} × dp", origin, tb, mb, ga));
    s.micro_batch = mb;
    s.dp = static_cast<int>(tb / (mb * ga));
  } else {
    s.micro_batch = mb > 0 ? mb : 0;
    s.dp = 0;  // derived from the world size
    if (mb == 0) throw core::InputError(fmt::format("{}: train_micro_batch_size_per_gpu: needed with grad_accum only", origin));
  }
  const core::Json zero = j.value("zero_optimization", core::Json::object());
  if (zero.is_boolean()) s.zero_stage = zero.get<bool>() ? 1 : 0;  // deprecated bool form (zero/config.py:62)
  else s.zero_stage = static_cast<int>(int_at(zero, "stage", origin + ": zero_optimization", 0, 0));
  if (s.zero_stage > 3) throw core::InputError(fmt::format("{}: zero_optimization.stage: must be 0..3", origin));
  const core::Json tp = j.value("tensor_parallel", core::Json::object());
  s.tp = static_cast<int>(int_at(tp, "autotp_size", origin + ": tensor_parallel", 0, 0));
  if (s.tp == 0) {
    const core::Json inner = tp.is_object() ? tp.value("tp", core::Json::object()) : core::Json::object();
    s.tp = static_cast<int>(int_at(inner, "tp_size", origin + ": tensor_parallel.tp", 1, 1));
  }
  const core::Json pipe = j.value("pipeline", core::Json::object());
  s.pp = pipe.is_object() && pipe.contains("stages") && pipe.at("stages").is_number_integer()
             ? static_cast<int>(int_at(pipe, "stages", origin + ": pipeline", 1, 1))
             : 1;
  const bool ckpt = j.contains("activation_checkpointing") ||
                    int_at(pipe, "activation_checkpoint_interval", origin + ": pipeline", 0, 0) > 0;
  s.recompute = ckpt ? model::Recompute::full : model::Recompute::none;
  if (enabled(j, "bf16") && enabled(j, "fp16")) throw core::InputError(fmt::format("{}: bf16 and fp16 both enabled", origin));
  s.dtype = enabled(j, "bf16") ? hw::Dtype::bf16 : enabled(j, "fp16") ? hw::Dtype::fp16 : hw::Dtype::fp32;
  return im;
}

}  // namespace strata::exporter
