// sched/allocate_json: the JSON document of one policy solve as `strata allocate --json` prints it (also the
// Python API's Allocation.to_dict()): X per job and GPU type, effective and normalised throughputs, the
// space-sharing pairs, the objective and the cost rate.
#include "strata/core/json.hpp"
#include "strata/sched/policy.hpp"

namespace strata::sched {

core::OrderedJson allocation_report_json(const Problem& p, const Policy& policy, const Allocation& x,
                                         const PolicyOptions& opt) {
  const auto frac = job_type_fractions(p, x);
  const auto eff = effective_throughputs(p, x);
  const auto norm = normalized_throughputs(p, x, opt.normalization);
  core::OrderedJson j, alloc, e, n;
  j["policy"] = policy_name(policy);
  for (int m = 0; m < p.num_jobs(); ++m) {
    core::OrderedJson row;
    for (int t = 0; t < p.num_types(); ++t) row[p.types[t].name] = frac[m][t];
    alloc[p.jobs[m].name] = row;
    e[p.jobs[m].name] = eff[m];
    n[p.jobs[m].name] = norm[m];
  }
  j["allocation"] = alloc;
  j["effective_throughput"] = e;
  j["normalized_throughput"] = n;
  if (opt.space_sharing) {
    core::OrderedJson pairs = core::OrderedJson::array();
    for (std::size_t k = 0; k < x.combos.size(); ++k) {
      if (x.combos[k].pair < 0) continue;
      core::OrderedJson row;
      for (std::size_t c = 0; c < x.columns.size(); ++c)
        row[p.types[x.columns[c].type].name] = row.value(p.types[x.columns[c].type].name, 0.0) + x.x[k][c];
      pairs.push_back({{"jobs", {p.jobs[x.combos[k].jobs[0]].name, p.jobs[x.combos[k].jobs[1]].name}},
                       {"allocation", row}});
    }
    j["pairs"] = pairs;
  }
  j["objective"] = {{"name", x.objective_name}, {"value", x.objective}};
  j["cost_usd_per_hour"] = cost_per_hour(p, x, opt.price);
  j["lp_solves"] = x.lp_solves;
  if (!x.note.empty()) j["note"] = x.note;
  return j;
}

}  // namespace strata::sched
