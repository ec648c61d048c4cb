// cli/cmd_export: `strata export --plan plan.json --to ENGINE` (Megatron-LM / torchtitan / DeepSpeed / torchrun /
// Slurm) and the hooks behind `strata plan --export/--compare-to` and `strata estimate --from/--from-file`. The
// logic lives in the export module (docs/export.md); this file parses flags and prints.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "commands.hpp"
#include "engine_flag.hpp"
#include "export_hooks.hpp"
#include "plan_source.hpp"
#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/export/export.hpp"

namespace strata::cli {
namespace {

struct ExportArgs {
  std::string plan, to, out = "-", model, cluster, engine;
  bool closest = false;
};

void write_export_file(const exporter::ExportFile& f, const std::string& out) {
  if (out == "-") {
    fmt::print("{}", f.text);
    return;
  }
  std::error_code ec;
  std::filesystem::create_directory(out, ec);  // one level: check_output_dir refused a missing parent up front
  const std::string path = (std::filesystem::path(out) / f.name).string();
  std::ofstream file(path, std::ios::binary);
  if (!file) throw core::InputError(fmt::format("export: --out: cannot write '{}'", path));
  file << f.text;
  if (!file) throw core::InputError(fmt::format("export: --out: error writing '{}'", path));
  if (f.name.size() > 3 && f.name.substr(f.name.size() - 3) == ".sh")
    std::filesystem::permissions(path, std::filesystem::perms::owner_exec, std::filesystem::perm_options::add, ec);
  fmt::print("wrote {}\n", path);
}

void run_export(const ExportArgs& a) {
  // Model, cluster and seq: the flags, else the plan file's (embedded definitions first: plan_source.hpp).
  const PlanContext ctx = resolve_plan_context(a.plan, {"export", a.model, a.cluster, std::nullopt});
  const core::Json plan = core::load_json_file(a.plan);
  const model::Model& m = ctx.model;
  const hw::Cluster& c = ctx.cluster;
  check_output_dir(a.out, "export: --out");
  const auto s = cost::complete_strategy(cost::load_strategy_file(a.plan), m, c);
  // --engine, else the engine the plan was searched for (plan --engine), names the profile; --to defaults to it.
  std::string engine = a.engine;
  if (engine.empty() && plan.is_object() && plan.contains("engine") && plan.at("engine").is_string())
    engine = plan.at("engine").get<std::string>();
  const auto profile = engine_from_flag(engine, a.engine.empty() ? "export: --plan " + a.plan + ": engine" : "export: --engine");
  std::string to = a.to;
  if (to.empty() && !profile) throw core::InputError("export: --to: required (or give --engine)");
  if (to.empty()) to = std::string(exporter::to_string(exporter::target_of(*profile, "export: --engine")));
  export_strategy_cli(to, m, c, s, a.out, a.closest, profile ? &*profile : nullptr);
}

}  // namespace

void export_strategy_cli(const std::string& engine, const model::Model& m, const hw::Cluster& c,
                         const cost::Strategy& s, const std::string& out, bool closest,
                         const cost::EngineProfile* profile) {
  // The current torchtitan (profile "torchtitan") reads a Python config, not TOML (docs/export.md §torchtitan).
  const bool torchtitan_py = engine == "torchtitan-py" || (engine == "torchtitan" && profile && profile->name == "torchtitan");
  if (torchtitan_py) {
    const auto& p = profile ? *profile : cost::engine_profile("torchtitan");
    std::FILE* note = out == "-" ? stderr : stdout;
    cost::Strategy w = s;
    if (const auto why = cost::engine_cannot_run(p, m, c, s)) {
      if (!closest) throw core::InputError(fmt::format("export: torchtitan cannot express {}", *why));
      w = exporter::closest_fitting(p, m, c, s);
      fmt::print(note, "torchtitan cannot express {}; writing the fastest plan it can run that fits\n", *why);
    }
    try {
      write_export_file(exporter::export_torchtitan_py(m, c, w), out);
    } catch (const core::InputError& err) {
      if (!closest) throw;
      fmt::print(note, "{}; writing the closest plan torchtitan can run\n", err.what());
      write_export_file(
          exporter::export_torchtitan_py(m, c, exporter::closest_expressible(exporter::Engine::torchtitan, m, c, w)),
          out);
    }
    return;
  }
  const auto e = exporter::parse_engine(engine, "export: --to");
  const auto& p = profile ? *profile : cost::engine_profile(exporter::default_profile(e));
  const bool launcher = e == exporter::Engine::torchrun || e == exporter::Engine::slurm;
  if (exporter::target_of(p, "export: --engine") != e && !(launcher && p.name == "megatron"))
    throw core::InputError(fmt::format("export: --to {}: engine {} is exported with --to {}", engine, p.name, p.export_target));
  const std::string feature = exporter::unexpressible_feature(e, p, m, c, s);
  if (feature.empty() || !closest) {
    write_export_file(exporter::export_strategy(e, p, m, c, s), out);  // throws naming the feature when unexpressible
    return;
  }
  // The fastest plan the engine can run that fits (never a config predicted not to fit; none: exit 2).
  const auto near = exporter::closest_fitting(p, m, c, s);
  const auto before = cost::estimate(m, c, s), after = cost::estimate(m, c, near);
  // The comparison goes to stderr when the config itself goes to stdout.
  std::FILE* note = out == "-" ? stderr : stdout;
  fmt::print(note, "{} cannot express {}; writing the fastest plan it can run that fits:\n", p.name, feature);
  fmt::print(note, "  plan     {}  predicted {}/iter{}\n", cost::to_cli_string(s), core::format_seconds(before.iteration_time_s),
             before.fits ? "" : " (does not fit)");
  fmt::print(note, "  closest  {}  predicted {}/iter{} ({:+.1f}%)\n", cost::to_cli_string(near),
             core::format_seconds(after.iteration_time_s), after.fits ? "" : " (DOES NOT FIT)",
             100.0 * (after.iteration_time_s / before.iteration_time_s - 1.0));
  std::fflush(note);
  write_export_file(exporter::export_strategy(e, p, m, c, near), out);
}

void compare_to_config(const std::string& file, const model::Model& m, const hw::Cluster& c, double best_time_s) {
  const auto im = exporter::import_file(file, c);
  const auto s = cost::complete_strategy(im.strategy, m, c);
  const auto e = cost::estimate(m, c, s);
  fmt::print("\nYour config ({}, {}): {}\n", exporter::to_string(im.engine), file, cost::to_cli_string(s));
  fmt::print("  predicted {}/iter, {:.1f} TFLOP/s/GPU, peak memory {}{}\n", core::format_seconds(e.iteration_time_s),
             e.tflops_per_gpu, core::format_bytes(e.peak_memory_bytes), e.fits ? "" : " (DOES NOT FIT: " + e.not_fit_reason + ")");
  fmt::print("  strata's best plan {}/iter: {:.2f}x faster than your config\n", core::format_seconds(best_time_s),
             e.iteration_time_s / best_time_s);
}

void estimate_imported(const std::vector<std::string>& from, const std::string& from_file, const std::string& model_name,
                       const std::string& cluster, std::int64_t seq) {
  if (from.empty() == from_file.empty()) throw core::InputError("estimate: give exactly one of --from and --from-file");
  const auto catalog = hw::builtin_catalog();
  const auto c = hw::resolve_cluster(cluster, catalog);
  exporter::Imported im;
  if (!from.empty()) {
    const auto e = exporter::parse_engine(from.at(0), "estimate: --from");
    const std::string text = from.size() > 1 ? from.at(1) : "";
    if (e == exporter::Engine::megatron) im = exporter::import_megatron_args(text, "--from megatron");
    else if (e == exporter::Engine::torchtitan) im = exporter::import_torchtitan_toml(text, "--from torchtitan");
    else if (e == exporter::Engine::deepspeed) im = exporter::import_deepspeed_json(text, "--from deepspeed");
    else im = exporter::import_launch_script(text, "--from " + from.at(0), c);
  } else {
    im = exporter::import_file(from_file, c);
  }
  model::Model m;
  if (!model_name.empty()) {
    m = model::resolve_model(model_name);
  } else {
    if (!im.shape || im.shape->vocab < 1 || im.shape->seq < 1)
      throw core::InputError("estimate: --model: required (the config carries no complete model shape; Megatron "
                             "needs --num-layers, --hidden-size, --num-attention-heads, --seq-length, --vocab-size)");
    m = model::build_transformer(*im.shape, "imported config");
  }
  if (seq > 0) m = model::with_seq(m, seq);
  const auto s = cost::complete_strategy(im.strategy, m, c);
  const auto e = cost::estimate(m, c, s);
  fmt::print("imported {} config: model {} (seq {}) on {} ({} devices)\n", exporter::to_string(im.engine), m.name, m.seq,
             c.name, c.num_devices());
  fmt::print("strategy {}\n\n", cost::to_cli_string(s));
  fmt::print("iteration time   {}\n", core::format_seconds(e.iteration_time_s));
  fmt::print("throughput       {:.4g} samples/s, {:.4g} tokens/s\n", e.samples_per_s, e.tokens_per_s);
  fmt::print("FLOP/s           {} per GPU (PTD-P count, a recomputed forward included; MFU {:.1f}% on model FLOPs)\n",
             core::format_flops(e.tflops_per_gpu * 1e12), 100.0 * e.mfu);
  fmt::print("peak memory      {} per device, {}\n", core::format_bytes(e.peak_memory_bytes),
             e.fits ? "fits" : "DOES NOT FIT: " + e.not_fit_reason);
}

void register_export_command(CLI::App& app) {
  auto a = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand(
      "export",
      "Write a plan as the configuration of a training engine: megatron (pretrain_gpt.py arguments), torchtitan\n"
      "(job TOML; torchtitan-py: the current Python config), deepspeed (ds_config JSON), torchrun or slurm (launch script whose node table realises the\n"
      "placement). What the engine cannot express is an error naming the feature (exit 2); --closest writes the\n"
      "nearest expressible plan and prints both predicted times. Mapping: docs/export.md.\n"
      "Example: strata plan --model gpt3-175b --cluster dgx-a100:16 --gbs 1536 --json plan.json\n"
      "         strata export --plan plan.json --to megatron");
  cmd->add_option("--plan", a->plan, "Plan file from `strata plan --json` (or a strategy JSON with --model/--cluster)")
      ->required();
  cmd->add_option("--to", a->to, "megatron | torchtitan (TOML, 238fa995 era) | torchtitan-py (current Python config) | "
                  "deepspeed | torchrun | slurm (default: the --engine's)");
  add_engine_option(cmd, &a->engine,
                    "the profile whose rules the export must satisfy (default: the plan file's \"engine\", else the "
                    "--to target's: megatron, torchtitan-toml, deepspeed)");
  cmd->add_option("--out", a->out, "Directory to write the file into, or - for stdout (default)");
  cmd->add_option("--model", a->model, "Model (default: the plan file's)");
  cmd->add_option("--cluster", a->cluster, "Cluster (default: the plan file's)");
  cmd->add_flag("--closest", a->closest,
                "When the engine cannot express the plan, write the fastest plan it can run that fits (exit 2 when "
                "none fits)");
  cmd->callback([a] { run_export(*a); });
}

}  // namespace strata::cli
