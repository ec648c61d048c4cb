// plan/rank: how the top plans are ordered — memory margin, the margin objective (the safest plan within 2 % of
// the fastest first) and the search's candidate pool for it (docs/planner.md §Ranking).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "search_internal.hpp"
#include "strata/core/error.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {

std::string_view to_string(Objective o) { return o == Objective::fastest ? "fastest" : "margin"; }

Objective parse_objective(std::string_view text, const std::string& where) {
  if (text == "margin") return Objective::margin;
  if (text == "fastest") return Objective::fastest;
  throw core::InputError(fmt::format("{}: unknown objective '{}' (valid: margin, fastest)", where, text));
}

double memory_margin(const cost::Estimate& e) {
  double margin = 1.0;
  for (const auto& st : e.stages)
    if (st.memory_usable_bytes > 0) margin = std::min(margin, 1.0 - st.memory_bytes / st.memory_usable_bytes);
  return e.stages.empty() ? 0.0 : margin;
}

void rank_by_objective(std::vector<Candidate>& top, const PlanOptions& opt) {
  std::sort(top.begin(), top.end(), detail::candidate_less);
  if (opt.objective == Objective::fastest || top.empty()) return;
  const double window_s = top.front().estimate.iteration_time_s * (1.0 + opt.margin_tolerance);
  const auto near_end = std::partition_point(top.begin(), top.end(), [window_s](const Candidate& c) {
    return c.estimate.iteration_time_s <= window_s;
  });
  // Margins rounded to 0.1 % so that noise-level differences fall back to time.
  const auto key = [](const Candidate& c) { return std::round(memory_margin(c.estimate) * 1000.0); };
  std::stable_sort(top.begin(), near_end, [&key](const Candidate& a, const Candidate& b) {
    const double ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : detail::candidate_less(a, b);
  });
}

namespace detail {

// The pool: the K fastest and, for Objective::margin, every plan within the tolerance of the
// fastest (the final order picks among them by margin), at most kMarginPool of those. `top` is sorted by time.
constexpr std::size_t kMarginPool = 1024;
double keep_threshold_s(const std::vector<Candidate>& top, std::size_t K, const PlanOptions& opt) {
  const double kth = top[K - 1].estimate.iteration_time_s;
  if (opt.objective == Objective::fastest) return kth;
  return std::max(kth, top.front().estimate.iteration_time_s * (1.0 + opt.margin_tolerance));
}
void trim_pool(std::vector<Candidate>& top, std::size_t K, const PlanOptions& opt) {
  if (top.size() <= K) return;
  std::size_t keep = K;
  if (opt.objective == Objective::margin) {
    const double window_s = top.front().estimate.iteration_time_s * (1.0 + opt.margin_tolerance);
    while (keep < top.size() && keep < kMarginPool && top[keep].estimate.iteration_time_s <= window_s) ++keep;
  }
  top.resize(keep);
}

}  // namespace detail
}  // namespace strata::plan
