// cli/export_hooks: the export/import pieces that `strata plan` (--export, --compare-to) and `strata estimate`
// (--from, --from-file) call; defined in cmd_export.cpp so those commands keep only a small hook.
#pragma once
#include <string>
#include <vector>

#include "strata/cost/engine.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace strata::cli {

// Writes the engine config of `s` to stdout ("-") or into directory `out`; with `closest`, an unexpressible
// strategy is replaced by the nearest expressible one and both predicted times are printed.
// `profile` (plan --engine / export --engine) names the engine profile whose rules apply; nullptr = the target's
// default (exporter::default_profile).
void export_strategy_cli(const std::string& engine, const model::Model& m, const hw::Cluster& c,
                         const cost::Strategy& s, const std::string& out, bool closest,
                         const cost::EngineProfile* profile = nullptr);
// Prints the user's engine config (file) costed as a baseline next to the plan's best time, with the speedup.
void compare_to_config(const std::string& file, const model::Model& m, const hw::Cluster& c, double best_time_s);
// `strata estimate --from ENGINE "ARGS"` / `--from-file FILE`: model may be empty when the config has a shape.
void estimate_imported(const std::vector<std::string>& from, const std::string& from_file, const std::string& model,
                       const std::string& cluster, std::int64_t seq);

}  // namespace strata::cli
