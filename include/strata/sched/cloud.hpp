// sched/cloud: the cloud chapter's inputs (thesis ch. 6, notes_003 §5) — time-varying on-demand and spot prices per
// instance (GPU) type and spot preemption events, read from a price-trace file (docs/scheduler.md "Price traces").
// The simulator applies the prices in force at each round, re-solves the policy when they change (so the cost
// policies switch instance types as prices move) and makes preempted spot jobs lose the round's progress and pay
// the checkpoint/restart cost.
#pragma once
#include <string>
#include <vector>

#include "strata/core/json.hpp"
#include "strata/sched/problem.hpp"

namespace strata::sched {

struct PricePoint {
  double t_s = 0;          // in force from this time on (until the next point)
  double on_demand = -1;   // $ per GPU-hour
  double spot = -1;        // $ per GPU-hour
};

struct Preemption {
  double t_s = 0;
  std::string type;        // every spot instance of this type is reclaimed at t_s
};

struct PriceTrace {
  std::vector<std::string> types;                // instance type names (lower case)
  std::vector<std::vector<PricePoint>> points;   // per type, strictly increasing t_s, the first at t_s = 0
  std::vector<Preemption> preemptions;           // sorted by time
};

// {"types": {"v100": [[0, 2.48, 0.74], [86400, 2.48, 1.10]], ...}, "preemptions": [{"t_s": 7200, "type": "v100"}]}
// Each row: [t_s, on_demand, spot] in $/GPU-hour. InputError naming `origin` and the field otherwise.
PriceTrace price_trace_from_json(const core::Json& j, const std::string& origin);
PriceTrace load_price_trace(const std::string& path);

// Writes the prices in force at `t_s` into the matching worker types (by name; types the trace does not name keep
// theirs). Returns true when any price differs from what `types` held.
bool apply_prices(const PriceTrace& trace, double t_s, std::vector<WorkerType>& types);

// Time of the first preemption of `type` in [from_s, to_s), or -1.
double preemption_in(const PriceTrace& trace, const std::string& type, double from_s, double to_s);

}  // namespace strata::sched
