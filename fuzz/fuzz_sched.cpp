// fuzz/fuzz_sched: libFuzzer target for the scheduler's parsers. Bytes → parse_json_text → problem_from_json
// (throughputs file) and the same bytes as a --cluster and a --generate spec. A small valid problem is then solved
// with max-min fairness and evaluated. Only InputError is an accepted outcome for bad input; anything else crashes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/sched/policy.hpp"
#include "strata/sched/simulate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto j = strata::core::parse_json_text(text, "fuzz.json");
    const auto p = strata::sched::problem_from_json(j, "fuzz.json");
    int gpus = 0;
    for (const auto& t : p.types) gpus += t.count;
    if (p.num_jobs() <= 16 && p.num_types() <= 4 && gpus <= 64) {
      const auto a = strata::sched::allocate(p, strata::sched::parse_policy("max-min-fairness"));
      (void)strata::sched::normalized_throughputs(p, a);
    }
  } catch (const strata::core::InputError&) {
  }
  try {
    (void)strata::sched::parse_cluster_spec(text);
  } catch (const strata::core::InputError&) {
  }
  try {
    (void)strata::sched::parse_generate_spec(text);
  } catch (const strata::core::InputError&) {
  }
  return 0;
}
