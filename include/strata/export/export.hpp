// export/export: a strata strategy as the configuration of the engines people run — Megatron-LM's
// pretrain_gpt.py arguments, a torchtitan job TOML (TOML-era schema), a DeepSpeed JSON config, a torchrun or
// Slurm launch script whose host order realises the placement — and the reverse: those configurations read back
// into a strategy (and the model shape they imply). What an engine cannot express is named, never dropped.
// Flag and key names, and the engines' own consistency rules, are facts from ../shared/engines (docs/export.md).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/cost/engine.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::exporter {  // ("export" is a C++ keyword)

enum class Engine { megatron, torchtitan, deepspeed, torchrun, slurm };
std::string_view to_string(Engine e);
Engine parse_engine(std::string_view text, const std::string& where);  // InputError lists the valid names

// The engine profile (data/engines, cost/engine.hpp) a target's writer follows: megatron (also for the torchrun
// and slurm launchers of pretrain_gpt.py), torchtitan-toml, deepspeed.
std::string_view default_profile(Engine e);
// The target that writes a profile's configuration (torchtitan for both torchtitan profiles); InputError naming
// `where` for profiles without one (pytorch, strata-exec).
Engine target_of(const cost::EngineProfile& p, const std::string& where);

// The first feature of the (complete) strategy `s` for model `m` that `e` cannot express; "" when none. First the
// profile's cost::engine_cannot_run (what the planner's --engine filter uses), then the writer's own checks.
std::string unexpressible_feature(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
std::string unexpressible_feature(Engine e, const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                                  const cost::Strategy& s);

// The nearest strategy `e` can express: only the unexpressible fields change (docs/export.md says how), the
// result is completed (cost::complete_strategy). InputError when the model itself is not expressible.
// The model and the dtype are never changed: a model feature or a dtype the engine cannot run is an InputError.
cost::Strategy closest_expressible(Engine e, const model::Model& m, const hw::Cluster& c, cost::Strategy s);
// `export --closest`: the fastest strategy profile `p` can run that fits (plan::plan restricted to `p`, costed with
// its traits, same gbs and dtype). InputError naming the reason when the engine cannot run the model or none fits.
cost::Strategy closest_fitting(const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                               const cost::Strategy& s, const cost::CostOptions& cost_opt = {});

struct ExportFile {
  std::string name;  // suggested file name: megatron_args.sh, torchtitan.toml, ds_config.json, launch_*.sh
  std::string text;
};
// The engine's configuration of the complete strategy `s`. InputError "export: <engine> cannot express
// <feature>" when unexpressible_feature is not empty.
ExportFile export_strategy(Engine e, const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
ExportFile export_strategy(Engine e, const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c,
                           const cost::Strategy& s);

// The CUDA_DEVICE_MAX_CONNECTIONS a Megatron-LM launch of `s` must set: nullopt = leave it unset (Megatron-FSDP,
// ZeRO-2/3, forbids 1), 1 where tp or cp > 1 without FSDP (Megatron validate_args, docs/export.md §Launch).
std::optional<int> cuda_device_max_connections(const cost::Strategy& s);

// An engine configuration read back. The strategy is not completed: fields the config leaves to the world size
// (Megatron's dp) are 0, as in cost::parse_strategy; complete it on the target cluster.
struct Imported {
  Engine engine = Engine::megatron;
  cost::Strategy strategy;
  std::optional<model::TransformerConfig> shape;  // the model shape, when the config carries one (Megatron)
};
// Megatron-LM command line (a whole `torchrun ... pretrain_gpt.py ARGS` line or just the ARGS). Flags that do not
// change the strategy (learning rate, data paths...) are skipped; strategy-changing flags strata cannot model
// (expert parallelism, offloading...) are an InputError naming the flag.
Imported import_megatron_args(std::string_view args, const std::string& origin);
Imported import_torchtitan_toml(std::string_view text, const std::string& origin);
Imported import_deepspeed_json(std::string_view text, const std::string& origin);
// The current torchtitan configuration format (b5bcd76c and later: a Python module whose strata_plan() returns a
// Trainer.Config; `export --to torchtitan-py`). InputError naming the feature when `s` is not expressible there.
ExportFile export_torchtitan_py(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s);
// Reads such a module back (its `config.<section>.<field> = <literal>` lines; Trainer.Config defaults otherwise).
Imported import_torchtitan_py(std::string_view text, const std::string& origin);
// A launch script written by export (torchrun or slurm): its Megatron arguments and, through its node table,
// the placement on cluster `c`.
Imported import_launch_script(std::string_view text, const std::string& origin, const hw::Cluster& c);
// Reads a file and picks the reader by content: a launch script, a torchtitan TOML, a DeepSpeed JSON, else a
// Megatron argument list.
Imported import_file(const std::string& path, const hw::Cluster& c);

// The decoder-only transformer shape of `m` (build_transformer(shape) rebuilds a model with the same costs);
// nullopt with `problem` set when `m` is not one (BERT, T5, vision, CNN, non-uniform blocks...).
std::optional<model::TransformerConfig> transformer_shape(const model::Model& m, std::string* problem = nullptr);

}  // namespace strata::exporter
