// fuzz_profile: profile_from_json (the `--profile` file of estimate/plan) on arbitrary bytes must either succeed or
// throw InputError (never crash, never another exception); a parsed profile then drives an estimate of tiny-gpt on
// four CPU ranks sharing two cores (measured layer rows, collective fits and the host-CPU bound), which must not
// crash either.
#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/profile.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  static const model::Model m = model::zoo_model("tiny-gpt");
  static const hw::Cluster c = hw::cluster_from_json(
      core::Json::parse(R"({"nodes": [{"gpu": "cpu", "gpus": 4, "intra_link": "loopback", "nics": 1,
                             "nic_link": "loopback", "cpu_cores": 2, "count": 1}]})"),
      "fuzz-host.json", hw::builtin_catalog());
  static const cost::Strategy dp = cost::complete_strategy(cost::parse_strategy("dp=4,gbs=8,dtype=fp32"), m, c);
  static const cost::Strategy tp = cost::complete_strategy(cost::parse_strategy("dp=2,tp=2,gbs=8,dtype=fp32"), m, c);
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const cost::Profile p = cost::profile_from_json(core::parse_json_text(text, "fuzz.json"), "fuzz.json");
    cost::CostOptions o;
    o.profile = &p;
    (void)cost::estimate(m, c, dp, o);
    (void)cost::estimate(m, c, tp, o);
  } catch (const core::InputError&) {
  }
  return 0;
}
