// cli/simulate_per_stage: `strata simulate` of per-stage strategies (simulate_per_stage.hpp; docs/simulator.md
// §Per-stage widths).
#include "simulate_per_stage.hpp"

#include <fmt/format.h>

#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/layerwise.hpp"
#include "strata/plan/placement.hpp"
#include "strata/sim/replicated.hpp"

namespace strata::cli {
namespace {

void check_flags(const PerStageSimFlags& f) {
  auto refuse = [](const char* flag, const char* why) {
    throw core::InputError(fmt::format("simulate: {}: {} (per-stage strategies are replayed stage by stage, "
                                       "docs/simulator.md §Per-stage widths)", flag, why));
  };
  if (f.trace) refuse("--trace", "no per-device timeline for stages of different widths yet");
  if (f.full) refuse("--full", "every replica of every stage is always played out");
  if (f.iterations) refuse("--iterations", "one flushed iteration, or the steady state of 4000 micro-batches");
  if (f.overlap_slowdown) refuse("--overlap-slowdown", "the DP sync is the cost model's exposed part, not overlapped");
}

void print_json(const cost::Strategy& s, const cost::Estimate& e, const sim::PerStageSimulation& r) {
  nlohmann::ordered_json j;
  j["strategy"] = cost::to_json(s);
  j["schedule"] = std::string(cost::to_string(s.schedule));
  j["iteration_time_s"] = r.iteration_time_s;
  j["analytical_iteration_time_s"] = r.estimate_iteration_time_s;
  j["simulated_iteration_time_s"] = r.iteration_time_s;  // the names of the first per-stage output (issue 14)
  j["estimate_iteration_time_s"] = r.estimate_iteration_time_s;
  if (r.result.period_s > 0) j["simulated_period_s"] = r.result.period_s;
  j["micro_batches"] = r.micro_batches;
  j["micro_batches_played"] = r.input.micro_batches;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (std::size_t i = 0; i < r.input.stages.size(); ++i) {
    nlohmann::ordered_json st;
    st["gpu"] = e.stages[i].gpu;
    st["dp"] = s.stages[i].dp;
    st["tp"] = s.stages[i].tp;
    st["layers"] = s.stages[i].layers;
    st["devices"] = e.stages[i].devices;
    if (i < r.result.stage_busy_s.size()) st["busy_s"] = r.result.stage_busy_s[i];
    if (i < r.result.stage_max_in_flight.size()) st["max_in_flight"] = r.result.stage_max_in_flight[i];
    st["analytical_memory_bytes"] = e.stages[i].memory_bytes;
    st["fits"] = e.stages[i].fits;
    stages.push_back(std::move(st));
  }
  j["stages"] = std::move(stages);
  j["fits"] = e.fits;
  fmt::print("{}\n", core::dump_json(j));
}

void print_human(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s, const cost::Estimate& e,
                 const sim::PerStageSimulation& r) {
  fmt::print("model {} (seq {}) on {} ({} devices, {} used)\nstrategy {}\n\n", m.name, m.seq, c.name,
             c.num_devices(), cost::devices_used(s), cost::to_cli_string(s));
  const bool flush = r.result.period_s == 0;
  if (flush)
    fmt::print("per-stage {}: one flushed iteration of {} micro-batches, micro-batch k on replica k mod dp_i\n",
               cost::to_string(s.schedule), r.micro_batches);
  else
    fmt::print("per-stage {} (1F1B-RR): {} micro-batches replayed; period {} per micro-batch\n",
               cost::to_string(s.schedule), r.input.micro_batches, core::format_seconds(r.result.period_s));
  fmt::print("simulated iteration   {}\n", core::format_seconds(r.iteration_time_s));
  const double est = r.estimate_iteration_time_s;
  fmt::print("analytical estimate   {}  (simulated {:+.1f}%)\n", core::format_seconds(est),
             rounded_percent(est > 0 ? 100.0 * (r.iteration_time_s / est - 1) : 0.0));
  fmt::print("analytical memory     {}\n\n", e.fits ? "every stage fits" : "DOES NOT FIT: " + e.not_fit_reason);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < r.input.stages.size(); ++i) {
    const auto& st = s.stages[i];
    const double busy = i < r.result.stage_busy_s.size() ? r.result.stage_busy_s[i] : 0.0;
    rows.push_back({std::to_string(i), e.stages[i].gpu, std::to_string(st.dp), std::to_string(st.tp),
                    std::to_string(st.layers), plan::device_ranges(e.stages[i].devices),
                    flush ? core::format_seconds(busy) : "-",
                    flush && r.iteration_time_s > 0 ? fmt::format("{:.1f}%", 100.0 * (1 - busy / r.iteration_time_s))
                                                    : "-",
                    core::format_bytes(e.stages[i].memory_bytes)});
  }
  fmt::print("{}", core::render_table({"stage", "gpu", "dp", "tp", "layers", "devices", "busy/replica", "idle",
                                       "memory (analytical)"},
                                      rows));
  fmt::print("\nModel: docs/simulator.md §Per-stage widths.\n");
}

}  // namespace

bool simulate_per_stage(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                        const cost::CostOptions& opt, const PerStageSimFlags& flags) {
  if (cost::is_uniform(s) || cost::is_layerwise(s, c)) return false;
  check_flags(flags);
  const cost::Estimate e = cost::estimate(m, c, s, opt);
  const auto r = sim::simulate_per_stage(s, e);
  if (flags.json) print_json(s, e, r);
  else print_human(m, c, s, e, r);
  return true;
}

}  // namespace strata::cli
