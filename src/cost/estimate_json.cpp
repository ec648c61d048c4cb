// cost/estimate_json: the JSON document of one estimate as `strata estimate --json` prints it (also the Python
// API's Estimate.to_dict()), so both read one function.
#include "strata/cost/estimate.hpp"

namespace strata::cost {

nlohmann::ordered_json estimate_report_json(const model::Model& m, const hw::Cluster& c, const Strategy& s,
                                            const Estimate& e) {
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["seq"] = m.seq;
  j["cluster"] = c.name;
  j["strategy"] = to_json(s);
  const auto ej = to_json(e);
  for (const auto& [k, v] : ej.items()) j[k] = v;
  return j;
}

}  // namespace strata::cost
