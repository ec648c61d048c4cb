// fuzz_strategy: parse_strategy and strategy_from_json on arbitrary bytes must either succeed or throw
// InputError (never crash, never another exception); a parsed strategy is completed against a small model and
// cluster, which again may only throw InputError.
#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  static const model::Model m = model::zoo_model("small-gpt");
  static const hw::Cluster c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto complete_and_estimate = [&](const cost::Strategy& s) {
    const auto full = cost::complete_strategy(s, m, c);
    if (full.global_batch <= 4096) (void)cost::estimate(m, c, full);
  };
  try {
    complete_and_estimate(cost::parse_strategy(text));
  } catch (const core::InputError&) {
  }
  try {
    complete_and_estimate(cost::strategy_from_json(core::parse_json_text(text, "fuzz.json"), "fuzz.json"));
  } catch (const core::InputError&) {
  }
  return 0;
}
