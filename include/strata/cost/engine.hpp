// cost/engine: training-engine profiles as data (data/engines/<name>.json, one per engine and pinned version:
// Megatron-LM, torchtitan TOML era and current, DeepSpeed, plain PyTorch, strata's executor) — what each engine
// can express, the stack traits the cost model must use for it, its launch rules and the rules its own validators
// enforce, each fact cited (engine file + commit) in the file. One predicate says what an engine cannot run; the
// planner (plan --engine) and the exporter (export::unexpressible_feature) both call it. docs/export.md.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cost {

// One rule of an engine, as data. kind "never": no strategy matching `when` may be given to the engine (the
// predicate refuses it); "require" / "forbid": the exported file `file` ("config" or "launch") must / must not
// match the regular expression `pattern` when `when` holds ({tp}, {pp}, {cp}, {dp}, {mbs}, {gbs} substituted).
// `when` is a list of atoms, all of which must hold; an atom is "a|b" (either), "!x" (not), "name op N" with name
// dp, tp, pp, cp, zero, mbs, v, devices and op one of > >= < <= = !=, "dtype=X" / "dtype!=X", or a flag: sp,
// async, full, selective, gpu_without_bf16 (a GPU type of the cluster has no native bf16).
struct EngineRule {
  std::string id, kind, file, pattern;
  std::vector<std::string> when;
  std::string fact;    // what the engine does (one line, ours)
  std::string source;  // engine file:line @ commit
};

struct EngineAttention {       // one row of the attention-kernel table
  std::string gpus;            // "bf16" = GPU types with native bf16 (FlashAttention-capable), "other", "any"
  std::vector<hw::Dtype> dtypes;
  model::AttentionKernel kernel = model::AttentionKernel::flash;
};

struct EngineProfile {
  std::string name;           // profile name: megatron, torchtitan-toml, torchtitan, deepspeed, pytorch, strata-exec
  std::string engine;         // what it is, one line
  std::string repo, commit;   // pinned version ("" for strata's own executor)
  std::string export_target;  // strata export --to value writing its config; "" = none
  // (a) what it can express
  std::string devices = "gpu";          // "gpu" or "cpu" (strata's executor: local CPU processes)
  int max_devices = 0;                  // 0 = no limit
  int max_tp = 0, max_pp = 0, max_cp = 0;  // 0 = no limit, 1 = not supported
  int cp_seq_multiple = 0;              // cp > 1 needs seq % (cp · this) == 0 (0 = no rule)
  std::vector<int> zero_stages;         // ZeRO/FSDP forms it has (0..3)
  std::string sequence_parallel = "optional";  // optional | with_tp (always when tp > 1) | never
  std::vector<Schedule> schedules;
  std::vector<model::Recompute> recompute;
  std::string rlayers = "none";         // per-stage recomputed layer counts: none | uniform_full (Megatron)
  bool async_tp = false, oases_overlap = false;
  bool uneven_split = true;             // any layer split (false: its own even partition only)
  bool per_stage = false;               // per-stage (heterogeneous-degree) strategies
  std::vector<hw::Dtype> dtypes;        // compute dtypes; a GPU must also run the dtype natively
  std::vector<std::string> model_features;  // what a model may use (model_features() below)
  // Non-empty: the model must have one of these registered shapes, "name:layers:hidden:heads:kv_heads:ffn:vocab".
  std::vector<std::string> flavors;
  // Whether strata's writer for export_target writes context parallelism yet (data "writer": {"cp": ...}); the
  // engine's own cp support is max_cp. A plan for the engine uses cp > 1 only when both allow it.
  bool writer_cp = true;
  // (b) stack traits the cost model uses for it (apply_engine_traits)
  std::vector<EngineAttention> attention;
  std::vector<bool> eager_elementwise_allowed, early_stop_allowed, fp8_separate_allowed;
  bool eager_elementwise = false, recompute_early_stop = false, fp8_separate_casts = false;  // the costed form
  std::string loss = "fp32";        // "fused" | "fp32": how the loss reads the logits (strategy key loss=)
  std::string optimizer = "fused";  // "fused" | "foreach" | "forloop" (strategy key optim=)
  std::string grads = "persistent";  // "persistent" | "ondemand" | "ddp" (strategy key grads=; optional in the file)
  double allocator_headroom_fraction = 0.05;  // share of device memory the engine's allocator needs kept free
  // (c) launch rules and validator rules
  std::vector<std::string> launch;  // environment, rank layout, batch identity: one line each
  std::vector<EngineRule> rules;
  std::vector<std::string> pending;  // rule ids strata's writer does not satisfy yet (docs/export.md)
};

// Names of the built-in profiles, in the order of the "launchable" line.
const std::vector<std::string>& engine_names();
// The built-in profile (parsed once). InputError "<where>: unknown engine 'x' (valid: ...)".
const EngineProfile& engine_profile(std::string_view name, const std::string& where = "--engine");
EngineProfile engine_profile_from_json(const nlohmann::json& j, const std::string& origin);
nlohmann::ordered_json to_json(const EngineProfile& p);

// What a model uses, as the profile feature names: decoder (a uniform decoder-only transformer chain), and
// learned_positions | rope | alibi, layernorm | rmsnorm | no_norm, gelu | swiglu | relu, mha | gqa, moe, tied |
// untied, bias | no_bias.
std::vector<std::string> model_features(const model::Model& m);

// Why `p` cannot run model `m` on cluster `c` (devices, native dtype per GPU type, model features and flavor):
// the strategy-independent part of engine_cannot_run. nullopt when it can.
std::optional<std::string> engine_cannot_run_on(const EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                                hw::Dtype dtype);
// The strategy-dependent part: degrees, ZeRO, schedules, recompute, sp, overlap, dtype, stack traits, split and
// the "never" rules. `m` gives the sequence length and the default split.
std::optional<std::string> engine_cannot_run_strategy(const EngineProfile& p, const model::Model& m,
                                                      const hw::Cluster& c, const Strategy& s);
// The one predicate: the first feature of (m, c, s) engine `p` cannot run, named; nullopt when it can.
std::optional<std::string> engine_cannot_run(const EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                             const Strategy& s);
// Sets the stack traits of `p` on `s`: element-wise form, recompute early stop (when recompute=full), fp8 cast
// form (when dtype=fp8), loss path, AdamW step, gradient buffer and the attention kernel per GPU type × dtype
// (left unset where it is each GPU's default). `given`: the strategy keys the user wrote (strategy_text_keys,
// Python keywords) — an explicit key always wins over the engine's trait (torch.compile on --engine pytorch:
// elementwise=fused); engine_cannot_run then refuses it, naming key and engine, where the engine cannot run it.
void apply_engine_traits(const EngineProfile& p, const hw::Cluster& c, Strategy& s,
                         const std::set<std::string>& given = {});

// Whether `when` holds for (c, s) (the atoms above); InputError naming `origin` on an unknown atom.
bool rule_applies(const std::vector<std::string>& when, const hw::Cluster& c, const Strategy& s,
                  const std::string& origin = "rule");
// The rule's pattern with {tp}, {pp}, {cp}, {dp}, {mbs}, {gbs} replaced by the strategy's values.
std::string rule_pattern(const EngineRule& r, const Strategy& s);

}  // namespace strata::cost
