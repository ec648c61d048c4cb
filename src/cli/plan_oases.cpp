// cli/plan_oases: `strata plan --oases-blocks` (see plan_oases.hpp).
#include "plan_oases.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/plan/oases_tp.hpp"

namespace strata::cli {

void run_oases_blocks(const model::Model& m, const hw::Cluster& c, std::int64_t gbs, hw::Dtype dtype,
                      const cost::CostOptions& cost, std::FILE* out) {
  plan::OasesTpOptions opt;
  opt.global_batch = gbs;
  opt.dtype = dtype;
  opt.cost = cost;
  const plan::OasesAblation a = plan::oases_ablation(m, c, opt);
  const double tokens = static_cast<double>(gbs) * static_cast<double>(m.seq);
  fmt::print(out, "Oases per-block tensor parallelism: model {} (seq {}) on {} ({} devices), gbs {}; no pipeline, "
                  "dp = N/tp, overlap=on, recompute=oases; time = Σ layers + resharding (no DP sync / optimizer, as "
                  "Oases' planner)\n\n", m.name, m.seq, c.name, c.num_devices(), gbs);
  std::vector<std::vector<std::string>> rows;
  for (const auto& u : a.planned.uniform)
    rows.push_back({fmt::format("[{}]*all", u.tp), u.fits ? "yes" : "no", core::format_seconds(u.time_s),
                    fmt::format("{:.1f}k", tokens / u.time_s / 1e3), core::format_bytes(u.memory_bytes)});
  if (a.planned.found)
    rows.push_back({"plan " + plan::tp_runs(a.planned.block_tp), "yes", core::format_seconds(a.planned.time_s),
                    fmt::format("{:.1f}k", tokens / a.planned.time_s / 1e3), core::format_bytes(a.planned.memory_bytes)});
  fmt::print(out, "{}", core::render_table({"tp per block", "fits", "time/iter", "tokens/s", "memory"}, rows));
  fmt::print(out, "usable memory per device: {}\n", core::format_bytes(a.planned.memory_limit_bytes));
  if (!a.planned.note.empty()) fmt::print(out, "note: {}\n", a.planned.note);
  if (!a.planned.found) return;
  const auto line = [&](const char* what, const plan::OasesTpPlan::Uniform& u) {
    if (u.tp == 0) {
      fmt::print(out, "  {}: does not fit\n", what);
      return;
    }
    fmt::print(out, "  {}: tp={} {} ({:.2f}x the plan's time)\n", what, u.tp, core::format_seconds(u.time_s),
               u.time_s / a.planned.time_s);
  };
  fmt::print(out, "\nOases Table 3 ablation under the cost model:\n");
  line("Megatron TP (blocking, full recompute)", a.megatron);
  line("Megatron TP without recompute", a.megatron_no_recompute);
  line("Oases without planner (best uniform tp)", a.uniform);
  fmt::print(out, "  Oases with planner: {} {}\n", plan::tp_runs(a.planned.block_tp),
             core::format_seconds(a.planned.time_s));
}

}  // namespace strata::cli
