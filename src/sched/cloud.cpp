// sched/cloud: price-trace reading and the price / preemption look-ups the simulator uses (thesis ch. 6).
#include "strata/sched/cloud.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::sched {
namespace {

PricePoint read_point(const core::Json& row, const core::JsonWhere& at) {
  if (!row.is_array() || row.size() != 3)
    core::fail(at, "expected [t_s, on_demand, spot] ($ per GPU-hour)");
  for (const auto& v : row)
    if (!v.is_number() || !(v.get<double>() >= 0)) core::fail(at, "every entry must be a number >= 0");
  return PricePoint{row[0].get<double>(), row[1].get<double>(), row[2].get<double>()};
}

}  // namespace

PriceTrace price_trace_from_json(const core::Json& j, const std::string& origin) {
  const core::JsonWhere root{origin, ""};
  core::expect_object(j, root);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "types" && it.key() != "preemptions" && it.key() != "comment")
      core::fail(root.field(it.key()), "unknown field (valid: types, preemptions, comment)");
  PriceTrace out;
  const auto& types = core::require_field(j, "types", root);
  core::expect_object(types, root.field("types"));
  for (auto it = types.begin(); it != types.end(); ++it) {
    const auto at = root.field("types").field(it.key());
    core::expect_array(it.value(), at);
    if (it.value().empty()) core::fail(at, "needs at least one [t_s, on_demand, spot] row");
    std::vector<PricePoint> pts;
    for (std::size_t i = 0; i < it.value().size(); ++i) {
      pts.push_back(read_point(it.value()[i], at.index(i)));
      if (i == 0 && pts[0].t_s != 0) core::fail(at.index(0), "the first row must start at t_s = 0");
      if (i > 0 && pts[i].t_s <= pts[i - 1].t_s) core::fail(at.index(i), "t_s must increase strictly");
    }
    out.types.push_back(core::to_lower(it.key()));
    out.points.push_back(std::move(pts));
  }
  if (j.contains("preemptions")) {
    const auto& pre = j.at("preemptions");
    core::expect_array(pre, root.field("preemptions"));
    for (std::size_t i = 0; i < pre.size(); ++i) {
      const auto at = root.field("preemptions").index(i);
      Preemption p{core::get_nonnegative_number(pre[i], "t_s", at), core::to_lower(core::get_string(pre[i], "type", at))};
      if (std::find(out.types.begin(), out.types.end(), p.type) == out.types.end())
        core::fail(at.field("type"), fmt::format("unknown instance type '{}' (types: {})", p.type, core::join(out.types)));
      out.preemptions.push_back(std::move(p));
    }
    std::stable_sort(out.preemptions.begin(), out.preemptions.end(),
                     [](const Preemption& a, const Preemption& b) { return a.t_s < b.t_s; });
  }
  return out;
}

PriceTrace load_price_trace(const std::string& path) { return price_trace_from_json(core::load_json_file(path), path); }

bool apply_prices(const PriceTrace& trace, double t_s, std::vector<WorkerType>& types) {
  bool changed = false;
  for (std::size_t k = 0; k < trace.types.size(); ++k) {
    const auto& pts = trace.points[k];
    // The last point at or before t_s (piecewise-constant prices).
    auto it = std::upper_bound(pts.begin(), pts.end(), t_s, [](double t, const PricePoint& p) { return t < p.t_s; });
    const PricePoint& now = *(it == pts.begin() ? it : it - 1);
    for (auto& w : types) {
      if (w.name != trace.types[k]) continue;
      changed = changed || w.price_on_demand != now.on_demand || w.price_spot != now.spot;
      w.price_on_demand = now.on_demand;
      w.price_spot = now.spot;
    }
  }
  return changed;
}

double preemption_in(const PriceTrace& trace, const std::string& type, double from_s, double to_s) {
  for (const auto& p : trace.preemptions)
    if (p.type == type && p.t_s >= from_s && p.t_s < to_s) return p.t_s;
  return -1;
}

}  // namespace strata::sched
