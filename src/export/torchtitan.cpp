// export/torchtitan: a strategy as a torchtitan job TOML (the TOML-era schema, snapshot toml_last 238fa995 in
// ../shared/engines/torchtitan_config.json) and back. Degrees: dp_replicate·dp_shard·tp·pp = world; ZeRO-3 is
// FSDP2 (dp_shard = dp, reshard after forward), ZeRO-2 the same without resharding, ZeRO-0 DDP (dp_replicate).
// The split is `module_fqns_per_model_part` (torchtitan's llama module names), pp·v parts, part i on rank i mod pp.
#include <fmt/format.h>

#include <algorithm>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/export/toml.hpp"

namespace strata::exporter::detail {
namespace {

// torchtitan's llama3 flavors with the zoo's shapes; other models keep their strata name (register a flavor).
std::string flavor_of(const model::Model& m) {
  if (m.name == "llama3-8b") return "8B";
  if (m.name == "llama3-70b") return "70B";
  if (m.name == "llama3-405b") return "405B";
  return m.name;
}

// The module names of chain entry i (torchtitan's llama: tok_embeddings, layers.N, norm + output).
std::vector<std::string> fqns_of_entry(int i, int chain) {
  if (i == 0) return {"tok_embeddings"};
  if (i == chain - 1) return {"norm", "output"};
  return {fmt::format("layers.{}", i - 1)};
}

std::string fqn_parts(const cost::Strategy& s, int chain) {
  std::string out = "[\n";
  int entry = 0;
  for (int part : s.split) {
    std::vector<std::string> names;
    for (int k = 0; k < part; ++k)
      for (const auto& n : fqns_of_entry(entry++, chain)) names.push_back("\"" + n + "\"");
    out += "  [" + core::join(names, ", ") + "],\n";
  }
  return out + "]";
}

}  // namespace

// torchtitan's pipeline_parallel_schedule names (both config formats).
std::string torchtitan_schedule_name(const cost::Strategy& s) {
  switch (s.schedule) {
    case cost::Schedule::gpipe: return "GPipe";
    case cost::Schedule::interleaved: return "Interleaved1F1B";
    default: return "1F1B";
  }
}

// What torchtitan (238fa995 and b5bcd76c alike) refuses or runs differently at start-up; docs/export.md §torchtitan,
// data/engines/rules.json. Its FSDP mesh is dp_shard·cp, so cp > 1 always enables FSDP (parallel_dims.py
// fsdp_enabled) and shards parameters over the cp ranks: only strata's ZeRO-2/3 (sharded over dp·cp) is that.
std::string torchtitan_runtime_problem(const cost::Strategy& s) {
  if (s.cp > 1 && s.zero_stage < 2)
    return "context parallelism without ZeRO-2/3 (torchtitan's cp always enables FSDP over dp_shard·cp, rule "
           "torchtitan_cp_fsdp)";
  const bool fsdp = s.zero_stage >= 2 || s.cp > 1;
  if (!fsdp && s.dp > 1 && (s.tp > 1 || s.pp > 1))
    return "ZeRO-0 with dp > 1 and tp or pp > 1 (torchtitan's DDP raises 'DDP has not supported > 1D parallelism', "
           "llama3/infra/parallelize.py; rule torchtitan_ddp_1d)";
  if (!fsdp && (s.tp > 1 || s.pp > 1) && s.dtype != hw::Dtype::fp32)
    return fmt::format("{} with tp or pp > 1 and no FSDP (torchtitan disables mixed precision there and trains in "
                       "fp32, distributed/utils.py maybe_enable_amp; rule torchtitan_amp_needs_fsdp)",
                       hw::to_string(s.dtype));
  return "";
}

std::string torchtitan_problem(const model::Model& m, const cost::Strategy& s) {
  std::string why;
  if (!transformer_shape(m, &why)) return "model: " + why + " (torchtitan's TOML trains registered decoder models)";
  if (s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw)
    return fmt::format("the asynchronous {} schedule (torchtitan's schedules are synchronous)", cost::to_string(s.schedule));
  if (s.schedule == cost::Schedule::interleaved && s.virtual_stages < 2)
    return "the interleaved schedule with v = 1 (Interleaved1F1B needs >= 2 stages per rank)";
  if (s.eager_elementwise && s.tp_async)
    return "elementwise=eager with overlap=async (torchtitan's async TP runs under torch.compile, which fuses them)";
  if (s.zero_stage == 1) return "ZeRO-1 (torchtitan shards with FSDP2: ZeRO-3, or ZeRO-2 without resharding)";
  if (s.zero_stage > 1 && s.dp_cp() == 1) return "a ZeRO stage with dp·cp = 1 (nothing to shard over)";
  if (const auto p = torchtitan_runtime_problem(s); !p.empty()) return p;
  if (s.tp > 1 && !s.sequence_parallel)
    return "tp without sequence parallelism (torchtitan's tensor-parallel plan always shards the sequence)";
  if (s.tp == 1 && s.sequence_parallel) return "sequence parallelism with tp = 1";
  if (!s.recompute_layers.empty()) return "per-stage rlayers (activation_checkpoint.mode applies to every layer)";
  if (s.dtype == hw::Dtype::fp8 && !s.fp8_separate_casts)
    return "fp8 with fused casts (torchtitan's float8 is torchao's, a separate amax and cast kernel per GEMM operand: "
           "fp8cast=separate)";
  if (s.recompute == model::Recompute::full && !s.recompute_early_stop)
    return "full recompute without early stop (torchtitan's full activation checkpointing is PyTorch's "
           "non-reentrant checkpoint, which stops the re-run early: earlystop=on)";
  if (const auto why = memory_knob_problem(s, "torchtitan"); !why.empty()) return why;
  if (s.dtype == hw::Dtype::fp16 || s.dtype == hw::Dtype::tf32 || s.dtype == hw::Dtype::fp4)
    return fmt::format("the {} compute dtype (torchtitan: bfloat16 or float32, float8 and mx (MXFP8) converters; no "
                       "NVFP4 converter at 238fa995)", hw::to_string(s.dtype));
  return "";
}

void torchtitan_closest(const model::Model& m, cost::Strategy& s) {
  (void)m;
  if (s.tp_async) s.eager_elementwise = false;  // async TP is compiled
  if (s.schedule == cost::Schedule::pipedream || s.schedule == cost::Schedule::two_bw ||
      (s.schedule == cost::Schedule::interleaved && s.virtual_stages < 2)) {
    s.schedule = cost::Schedule::one_f_one_b;
    s.virtual_stages = 1;
  }
  if (s.zero_stage == 1) s.zero_stage = s.dp_cp() > 1 ? 2 : 0;  // ZeRO-2 shards at least what ZeRO-1 does
  if (s.zero_stage > 1 && s.dp_cp() == 1) s.zero_stage = 0;
  // DDP cannot combine with tp/pp, and cp always shards: ZeRO-2 (FSDP without resharding) holds no more than
  // ZeRO-0. With dp·cp = 1 nothing can shard, and without FSDP torchtitan trains in fp32: cost that.
  if (s.zero_stage == 0 && (s.cp > 1 || (s.dp > 1 && (s.tp > 1 || s.pp > 1)))) s.zero_stage = 2;
  if (s.zero_stage == 0 && s.cp == 1 && (s.tp > 1 || s.pp > 1)) s.dtype = hw::Dtype::fp32;
  s.sequence_parallel = s.tp > 1;
  s.recompute_layers.clear();
  s.recompute_early_stop = s.recompute == model::Recompute::full;
  s.fp8_separate_casts = s.dtype == hw::Dtype::fp8;
  if (s.dtype == hw::Dtype::fp16) s.dtype = hw::Dtype::bf16;
  if (s.dtype == hw::Dtype::tf32) s.dtype = hw::Dtype::fp32;
  if (s.dtype == hw::Dtype::fp4) s.dtype = hw::Dtype::mxfp8;  // its nearest block-scaled format (MX converter)
  clear_memory_knobs(s);
}

std::string torchtitan_toml(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  const bool fp8 = s.dtype == hw::Dtype::fp8;
  std::string t = fmt::format("# strata export: torchtitan job (TOML-era schema) for {} on {} ({} GPUs)\n# strategy: {}\n",
                              m.name, c.name, c.num_devices(), cost::to_cli_string(s));
  t += fmt::format("[job]\ndescription = \"strata plan for {} on {}\"\n\n", m.name, c.name);
  if (m.name.rfind("llama3-", 0) != 0)
    t += fmt::format("# '{}' is not a torchtitan llama3 flavor: register a flavor with this shape under that name\n", m.name);
  t += fmt::format("[model]\nname = \"llama3\"\nflavor = \"{}\"\n", flavor_of(m));
  if (fp8) t += "converters = [\"quantize.linear.float8\"]\n";
  // MXFP8 through torchao's MX converter (torchtitan/config/job_config.py:768-784 @238fa995); the output projection
  // stays bf16 by the converter's default filter_fqns = ["output"].
  if (s.dtype == hw::Dtype::mxfp8)
    t += "converters = [\"quantize.linear.mx\"]\n\n[quantize.linear.mx]\nrecipe_name = \"mxfp8_cublas\"\n";
  // pp = 1: one micro-batch per step, gradient accumulation gives m; pp > 1: the pipeline splits the local batch.
  const std::int64_t local = s.pp > 1 ? s.global_batch / s.dp : s.micro_batch;
  t += fmt::format("\n[training]\nlocal_batch_size = {}\nglobal_batch_size = {}\nseq_len = {}\n", local, s.global_batch, m.seq);
  t += fmt::format("mixed_precision_param = \"{}\"\n", s.dtype == hw::Dtype::fp32 ? "float32" : "bfloat16");
  const bool shard = s.zero_stage >= 2;
  t += fmt::format("\n[parallelism]\ndata_parallel_replicate_degree = {}\ndata_parallel_shard_degree = {}\n",
                   shard ? 1 : s.dp, shard ? s.dp : 1);
  if (shard) t += fmt::format("fsdp_reshard_after_forward = \"{}\"\n", s.zero_stage == 3 ? "always" : "never");
  t += fmt::format("tensor_parallel_degree = {}\npipeline_parallel_degree = {}\n", s.tp, s.pp);
  if (s.cp > 1) t += fmt::format("context_parallel_degree = {}\n", s.cp);  // FSDP mesh dp_shard·cp
  if (s.tp_async) t += "enable_async_tensor_parallel = true\n";  // overlap=async: the chunked collective matmul
  // (pp = 1: kept for the round trip)
  t += fmt::format("pipeline_parallel_schedule = \"{}\"\n", torchtitan_schedule_name(s));
  if (s.pp > 1) {
    t += fmt::format("pipeline_parallel_microbatch_size = {}\n", s.micro_batch);
    t += "module_fqns_per_model_part = " + fqn_parts(s, static_cast<int>(m.layers.size())) + "\n";
  }
  // recompute=op is torchtitan's own per-op policy (mode selective, option op); strata's selective is written the
  // same way, the nearest torchtitan policy (under flash attention both keep the attention output).
  const bool op = s.recompute == model::Recompute::op;
  t += fmt::format("\n[activation_checkpoint]\nmode = \"{}\"\n",
                   op ? "selective" : std::string(model::to_string(s.recompute)));
  if (op || s.recompute == model::Recompute::selective) t += "selective_ac_option = \"op\"\n";
  if (fp8) t += "\n[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n";
  // Fused element-wise kernels (the cost model's default) are torchtitan's torch.compile; its async TP is a
  // compile pass too (micro-pipelined matmul + collective). elementwise=eager: torchtitan's default, no compile.
  if (!s.eager_elementwise) t += "\n[compile]\nenable = true\n";
  return t;
}

}  // namespace strata::exporter::detail
