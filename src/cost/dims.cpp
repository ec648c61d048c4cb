// cost/dims: completion and validation of the parallel degrees (include/strata/cost/dims.hpp).
#include "strata/cost/dims.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "strategy_text.hpp"

namespace strata::cost {

using detail::rule_error;

void complete_dims(Dims& d, int total_devices, const std::string& cluster) {
  if (d.cp < 1) rule_error("cp >= 1", fmt::format("cp = {}", d.cp));
  // Context parallelism takes its cp ranks out of every data-parallel replica's place: the degree rules below
  // count dp·cp where they count devices (dp·cp·tp·pp = devices).
  if (total_devices % d.cp != 0)
    rule_error("dp·cp·tp·pp = devices", fmt::format("cp = {} does not divide the {} devices of {}", d.cp,
                                                     total_devices, cluster));
  const int devices = total_devices / d.cp;
  if (devices <= 0) rule_error("cluster has devices", "the cluster has no devices");
  // Defaults: tp 1, pp 1 unless dp is given (then pp takes the rest), dp takes the rest.
  if (d.tp == 0) d.tp = 1;
  if (d.pp == 0 && d.dp != 0) {
    if (devices % (static_cast<std::int64_t>(d.dp) * d.tp) != 0)
      rule_error("dp·tp·pp = devices", fmt::format("dp·tp = {}·{} does not divide the {} devices of {}", d.dp,
                                                    d.tp, devices, cluster));
    d.pp = static_cast<int>(devices / (static_cast<std::int64_t>(d.dp) * d.tp));
  }
  if (d.pp == 0) d.pp = 1;
  if (d.dp == 0) {
    if (devices % (static_cast<std::int64_t>(d.tp) * d.pp) != 0)
      rule_error("dp·tp·pp = devices", fmt::format("tp·pp = {}·{} does not divide the {} devices of {}", d.tp,
                                                    d.pp, devices, cluster));
    d.dp = static_cast<int>(devices / (static_cast<std::int64_t>(d.tp) * d.pp));
  }
  if (d.dp < 1 || d.tp < 1 || d.pp < 1) rule_error("degrees >= 1", "dp, tp and pp must be >= 1");
  if (static_cast<std::int64_t>(d.dp) * d.tp * d.pp != devices)
    rule_error("dp·tp·pp = devices", fmt::format("dp·tp·pp = {}·{}·{} = {} but cluster {} has {} devices", d.dp, d.tp,
                                                  d.pp, static_cast<std::int64_t>(d.dp) * d.tp * d.pp, cluster,
                                                  devices));
}

}  // namespace strata::cost
