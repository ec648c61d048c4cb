// plan/context_parallel: which context-parallel degrees the planner enumerates (docs/planner.md §Space).
//
// Context parallelism pays a K/V exchange per layer that only long attention hides (cost/context_parallel.hpp),
// and it exists to fit long sequences: Megatron-core / NeMo use it from 8k–16k tokens on, with at least a few
// thousand tokens per rank (NeMo's long-context recipes: 16k tokens with cp 2 … 1M with cp 32; Llama 3 405B at
// 8k with cp 2). So the planner tries cp = 2, 4, 8, … (powers of two, as those recipes) that divide the devices
// left after tp and pp, split the sequence into 2·cp equal chunks (Megatron's load-balanced causal split) and
// leave each rank at least kMinTokensPerCpRank tokens; shorter sequences keep cp = 1 and the old space.
#include <cstdint>
#include <utility>
#include <vector>

#include "search_internal.hpp"

namespace strata::plan::detail {

namespace {
constexpr std::int64_t kMinTokensPerCpRank = 4096;
}  // namespace

std::vector<std::pair<int, int>> pp_cp_degrees(const model::Model& m, int n_rest, bool with_cp) {
  std::vector<std::pair<int, int>> out;
  for (int pp : device_divisors(n_rest)) {
    out.emplace_back(pp, 1);
    if (!with_cp) continue;
    for (int cp = 2; n_rest / pp % cp == 0; cp *= 2) {
      if (m.seq % (2 * static_cast<std::int64_t>(cp)) != 0 || m.seq / cp < kMinTokensPerCpRank) break;
      out.emplace_back(pp, cp);
    }
  }
  return out;
}

}  // namespace strata::plan::detail
