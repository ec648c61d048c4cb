// cli/simulate_per_stage: `strata simulate` of per-stage PipeDream strategies (simulate_per_stage.hpp;
// docs/simulator.md §Per-stage widths).
#include "simulate_per_stage.hpp"

#include <fmt/format.h>

#include "io.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"
#include "strata/sim/replicated.hpp"

namespace strata::cli {

bool simulate_per_stage(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                        const cost::CostOptions& opt, bool json, bool trace_requested) {
  if (cost::is_uniform(s) || s.schedule != cost::Schedule::pipedream) return false;
  if (trace_requested)
    throw core::InputError("simulate: --trace: per-stage strategies are replayed by sim::simulate_replicated, which "
                           "records no timeline yet");
  const cost::Estimate e = cost::estimate(m, c, s, opt);
  auto in = sim::replicated_from_estimate(s, e);
  const std::int64_t M = in.micro_batches;
  in.micro_batches = std::max<std::int64_t>(M, 4000);  // long enough to reach the periodic steady state
  const auto r = sim::simulate_replicated(in);
  const double simulated = r.period_s * static_cast<double>(M);
  if (json) {
    nlohmann::ordered_json j;
    j["strategy"] = cost::to_json(s);
    j["simulated_period_s"] = r.period_s;
    j["simulated_iteration_time_s"] = simulated;
    j["estimate_iteration_time_s"] = e.pipeline_time_s;
    j["micro_batches_played"] = in.micro_batches;
    fmt::print("{}\n", core::dump_json(j));
    return true;
  }
  fmt::print("model {} (seq {}) on {} ({} devices)\nstrategy {}\n\n", m.name, m.seq, c.name, c.num_devices(),
             cost::to_cli_string(s));
  fmt::print("per-stage PipeDream (1F1B-RR, weight stashing): {} micro-batches replayed on stages of widths",
             in.micro_batches);
  for (const auto& st : in.stages) fmt::print(" {}", st.replicas);
  fmt::print("\nsimulated period      {} per micro-batch, {} per iteration of {} micro-batches\n",
             core::format_seconds(r.period_s), core::format_seconds(simulated), M);
  fmt::print("analytical estimate   {}  (simulated {:+.1f}%)\n", core::format_seconds(e.pipeline_time_s),
             rounded_percent(e.pipeline_time_s > 0 ? 100.0 * (simulated / e.pipeline_time_s - 1) : 0.0));
  fmt::print("\nModel: docs/simulator.md §Per-stage widths.\n");
  return true;
}

}  // namespace strata::cli
