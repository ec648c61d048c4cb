// export/export: the engine names, the expressibility check and nearest expressible strategy per engine, the
// writer dispatch, and picking a reader for a file by its content.
#include "strata/export/export.hpp"

#include <fmt/format.h>

#include "internal.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"

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

std::string unexpressible_feature(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  if (auto p = detail::per_stage_problem(c, s); !p.empty()) return p;  // before the uniform fields are read
  // Oases' schedule (docs/cost-model.md §Communication) has no engine flag; the chunked collective matmul
  // (overlap=async) is Megatron's --tp-comm-overlap and torchtitan's async TP, and has no DeepSpeed form.
  if (s.tp_overlap) return "overlap=on (Oases' two-sub-batch overlapped TP)";
  if (s.tp_async && e == Engine::deepspeed) return "overlap=async (DeepSpeed has no chunked TP collective matmul)";
  if (s.recompute == model::Recompute::oases) return "recompute=oases (Oases' cross-pass recompute)";
  if (s.recompute == model::Recompute::op && e != Engine::torchtitan)
    return "recompute=op (torchtitan's per-op checkpointing: only the torchtitan export writes it)";

  if (s.cp > 1) return "context parallelism (cp > 1: writing it into the engines' configs is not built yet)";
  switch (e) {
    case Engine::megatron: return detail::megatron_problem(m, s);
    case Engine::torchtitan: return detail::torchtitan_problem(m, s);
    case Engine::deepspeed: return detail::deepspeed_problem(m, s);
    case Engine::torchrun:
    case Engine::slurm: {
      const auto p = detail::megatron_problem(m, s);
      return p.empty() ? detail::launch_problem(c, s) : p;
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
  s.tp_overlap = false;                                                          // blocking TP
  if (e == Engine::deepspeed) s.tp_async = false;
  if (s.recompute == model::Recompute::oases) s.recompute = model::Recompute::full;  // the nearest recompute
  if (s.recompute == model::Recompute::op && e != Engine::torchtitan) s.recompute = model::Recompute::full;

  if (s.cp > 1) {  // the nearest plan without context parallelism: its ranks become data-parallel replicas
    s.dp *= s.cp;
    s.cp = 1;
  }
  switch (e) {
    case Engine::megatron: detail::megatron_closest(m, s); break;
    case Engine::torchtitan: detail::torchtitan_closest(m, s); break;
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

ExportFile export_strategy(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s) {
  if (const auto p = unexpressible_feature(e, m, c, s); !p.empty())
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
