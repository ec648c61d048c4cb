// fuzz/fuzz_model: libFuzzer target for the model loader — bytes are parsed as a model JSON file
// (core::parse_json_text → model::model_from_json) and, when accepted, every layer's numbers are computed. The
// only allowed failure is core::InputError; anything else (crash, sanitizer report, other exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const strata::model::Model m =
        strata::model::model_from_json(strata::core::parse_json_text(text, "fuzz.json"), "fuzz.json");
    (void)strata::model::total_params(m);
    (void)strata::model::train_flops_per_token(m);
    strata::model::LayerQuery q;
    q.micro_batch = 2;
    q.tp = 2;
    q.sequence_parallel = true;
    q.recompute = strata::model::Recompute::selective;
    if (strata::model::tensor_parallel_problem(m, 2).empty())
      for (const auto& l : m.layers) (void)strata::model::layer_cost(l, q);
  } catch (const strata::core::InputError&) {
    // bad input is expected
  }
  return 0;
}
