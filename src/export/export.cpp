// export/export: the engine names, the expressibility check (the engine profile's predicate, cost/engine.hpp, then
// the writers' own), the nearest expressible and the fastest fitting strategy per engine, the writer dispatch, and
// picking a reader for a file by its content.
#include "strata/export/export.hpp"

#include <fmt/format.h>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/engine.hpp"
#include "strata/plan/search.hpp"

namespace strata::exporter {

std::string_view to_string(Engine e) {
  switch (e) {
    case Engine::megatron: return "megatron";
    case Engine::torchtitan: return "torchtitan";
    case Engine::deepspeed: return "deepspeed";
    case Engine::torchrun: return "torchrun";
    case Engine::slurm: return "slurm";
  }
  return "?";
}

Engine parse_engine(std::string_view text, const std::string& where) {
  for (Engine e : {Engine::megatron, Engine::torchtitan, Engine::deepspeed, Engine::torchrun, Engine::slurm})
    if (text == to_string(e)) return e;
  throw core::InputError(
      fmt::format("{}: unknown engine '{}' (valid: megatron, torchtitan, deepspeed, torchrun, slurm)", where, text));
}

std::string_view default_profile(Engine e) {
  switch (e) {
    case Engine::torchtitan: return "torchtitan-toml";  // the writer's format (the TOML-era schema)
    case Engine::deepspeed: return "deepspeed";
    default: return "megatron";  // megatron, and the torchrun/slurm launchers of pretrain_gpt.py
  }
}

Engine target_of(const cost::EngineProfile& p, const std::string& where) {
  if (p.export_target.empty())
    throw core::InputError(fmt::format("{}: engine {} has no configuration file to export ({}); plan for it with "
                                       "--engine {} and run the plan there",
                                       where, p.name, p.engine, p.name));
  return parse_engine(p.export_target, where);
}

std::string unexpressible_feature(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  return unexpressible_feature(e, cost::engine_profile(default_profile(e)), m, c, s);
}

std::string unexpressible_feature(Engine e, const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                  const cost::Strategy& s) {
  // The engine profile is the one source of truth the planner (plan --engine) shares (cost/engine.hpp); the
  // writers' own checks below name what a writer cannot write beyond it (they agree on every profile rule).
  if (auto ps = detail::per_stage_problem(c, s); !ps.empty()) return ps;  // before the uniform fields are read
  if (const auto why = cost::engine_cannot_run(p, m, c, s)) return *why;
  switch (e) {
    case Engine::megatron: return detail::megatron_problem(m, s);
    case Engine::torchtitan: return detail::torchtitan_problem(m, s);
    case Engine::deepspeed: return detail::deepspeed_problem(m, s);
    case Engine::torchrun:
    case Engine::slurm: {
      const auto prob = detail::megatron_problem(m, s);
      return prob.empty() ? detail::launch_problem(c, s) : prob;
    }
  }
  return "";
}

cost::Strategy closest_expressible(Engine e, const model::Model& m, const hw::Cluster& c, cost::Strategy s) {
  if (!cost::is_uniform(s) && !detail::per_stage_closest(m, c, s))
    throw core::InputError(fmt::format("export: {} cannot express {}, and there is no closest uniform plan to it "
                                       "(export the plan file's best uniform plan instead)",
                                       to_string(e), detail::per_stage_problem(c, s)));
  const int v_before = s.virtual_stages;
  const auto& profile = cost::engine_profile(default_profile(e));
  // Refused, never changed: the model, and a dtype a GPU type does not run natively (bf16 on V100/T4 would be
  // written as --bf16, which those GPUs cannot run). Dtype mappings the writers make (tf32 → fp32...) are printed.
  if (const auto why = cost::engine_cannot_run_on(profile, m, c, hw::Dtype::fp32))
    throw core::InputError(fmt::format("export: {} cannot express {}", to_string(e), *why));
  for (const auto& g : c.gpu_types)
    if (!g.supports(s.dtype))
      throw core::InputError(fmt::format("export: {} cannot express {} on {}, which has no native {} (plan with --dtype "
                                         "fp16 or fp32)", to_string(e), hw::to_string(s.dtype), g.name,
                                         hw::to_string(s.dtype)));
  s.tp_overlap = false;                                                          // blocking TP
  if (e == Engine::deepspeed) s.tp_async = false;
  if (s.recompute == model::Recompute::oases) s.recompute = model::Recompute::full;  // the nearest recompute
  if (s.recompute == model::Recompute::op && e != Engine::torchtitan) s.recompute = model::Recompute::full;

  if (s.cp > 1 && !profile.writer_cp) {  // the nearest plan without context parallelism: its ranks become replicas
    s.dp *= s.cp;
    s.cp = 1;
  }
  if (profile.max_tp == 1 && s.tp > 1) {  // DeepSpeed without an mpu: the tp ranks become data-parallel replicas
    s.dp *= s.tp;
    s.tp = 1;
    s.sequence_parallel = s.tp_async = false;
  }
  switch (e) {
    case Engine::megatron: detail::megatron_closest(m, s); break;
    case Engine::torchtitan:
      detail::torchtitan_closest(m, s);
      // DDP with TP/PP is refused and trains fp32 without FSDP (data/engines/torchtitan-toml.json): shard instead.
      if (s.zero_stage < 2 && s.dp > 1 && (s.tp > 1 || s.pp > 1)) s.zero_stage = 2;
      break;
    case Engine::deepspeed: detail::deepspeed_closest(m, s); break;
    case Engine::torchrun:
    case Engine::slurm:
      detail::megatron_closest(m, s);
      if (!detail::launch_problem(c, s).empty()) detail::launch_closest(s);
      break;
  }
  if (s.virtual_stages != v_before) s.split.clear();  // the split has pp·v entries
  s = cost::complete_strategy(s, m, c);
  if (const auto p = unexpressible_feature(e, m, c, s); !p.empty())
    throw core::InputError(fmt::format("export: {} cannot express {}", to_string(e), p));
  return s;
}

cost::Strategy closest_fitting(const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                               const cost::Strategy& s, const cost::CostOptions& cost_opt) {
  if (const auto why = cost::engine_cannot_run_on(p, m, c, s.dtype))
    throw core::InputError(fmt::format("export: {} cannot run {}", p.name, *why));
  plan::PlanOptions opt;
  opt.global_batch = s.global_batch;
  opt.dtype = s.dtype;
  opt.top_k = 1;
  opt.baselines = false;
  opt.cost = cost_opt;
  opt.engine = p;
  try {
    return plan::plan(m, c, opt).top.front().strategy;
  } catch (const core::InputError& e) {
    throw core::InputError(fmt::format("export --closest: no plan {} can run fits: {}", p.name, e.what()));
  }
}

ExportFile export_strategy(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  return export_strategy(e, cost::engine_profile(default_profile(e)), m, c, s);
}

ExportFile export_strategy(Engine e, const cost::EngineProfile& profile, const model::Model& m, const hw::Cluster& c,
                           const cost::Strategy& s) {
  if (const auto p = unexpressible_feature(e, profile, m, c, s); !p.empty())
    throw core::InputError(fmt::format("export: {} cannot express {} (--closest writes the nearest plan it can)",
                                       to_string(e), p));
  switch (e) {
    case Engine::megatron: return {"megatron_args.sh", detail::megatron_args_text(m, c, s)};
    case Engine::torchtitan: return {"torchtitan.toml", detail::torchtitan_toml(m, c, s)};
    case Engine::deepspeed: return {"ds_config.json", detail::deepspeed_json(m, c, s)};
    case Engine::torchrun: return {"launch_torchrun.sh", detail::launch_script(e, m, c, s)};
    case Engine::slurm: return {"launch_slurm.sh", detail::launch_script(e, m, c, s)};
  }
  return {};
}

Imported import_file(const std::string& path, const hw::Cluster& c) {
  const std::string text = core::read_text_file(path);
  if (text.find("local args=(") != std::string::npos) return import_launch_script(text, path, c);
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') return import_deepspeed_json(text, path);
  const bool toml = path.size() > 5 && path.substr(path.size() - 5) == ".toml";
  if (toml || text.find("\n[parallelism]") != std::string::npos || text.rfind("[", first) == first)
    return import_torchtitan_toml(text, path);
  return import_megatron_args(text, path);
}

}  // namespace strata::exporter
