// cli/engine_flag: `--engine NAME` (data/engines profiles) shared by plan, estimate, simulate, report and export,
// and the "launchable:" line that ends `strata plan` without --engine (docs/export.md).
#pragma once
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "strata/cost/engine.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/plan/search.hpp"

namespace strata::cli {

void add_engine_option(CLI::App* cmd, std::string* engine, const std::string& what);
// The profile named by the flag; nullopt when empty. InputError "<flag>: unknown engine 'x' (valid: ...)".
std::optional<cost::EngineProfile> engine_from_flag(const std::string& name, const std::string& flag);
// estimate / simulate / report --engine: `s` gets the engine's stack traits and `opt` its allocator headroom
// (unless --memory-headroom was given); InputError "<cmd>: --engine E cannot run <feature>" when it cannot.
// `given`: the keys the user's --strategy text wrote (cost::strategy_text_keys): they win over the engine's traits.
void apply_engine_flag(const cost::EngineProfile& p, const model::Model& m, const hw::Cluster& c, cost::Strategy& s,
                       cost::CostOptions* opt, const std::string& cmd, const std::set<std::string>& given = {});
// "launchable: megatron 1.00×, torchtitan-toml 0.93×, deepspeed none fits, strata-exec cannot (...)": per
// engine, the best plan it can run relative to the overall best `r`. A profile whose traits equal the search's
// and that can run the best plan costs nothing more; the others re-run the search restricted to the engine.
std::string launchable_line(const model::Model& m, const hw::Cluster& c, const plan::PlanOptions& opt,
                            const plan::PlanResult& r);

}  // namespace strata::cli
