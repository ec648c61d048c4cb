// plan/search_internal (internal): the enumerated space and the helpers shared by search.cpp, baselines.cpp and
// explain.cpp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval.hpp"

namespace strata::plan::detail {

struct UnitVariant {
  int unit = 0;
  Variant var;
};
struct Config {
  int uv = 0;
  ScheduleChoice sc;
  double lb = 0;
  std::int64_t order = 0;
};
struct Space_ {
  std::vector<DegreeUnit> units;
  std::vector<UnitVariant> uvs;
  std::vector<Config> configs;
  std::vector<int> valid_dp;
  // Data-parallel degrees whose (tp, pp, cp) passed every rule but gbs % dp: the ones a different gbs would use
  // (the "closest gbs that works" of the error when no degree is valid).
  std::vector<int> gbs_blocked_dp;
};

struct Rejections {
  struct Entry {
    std::int64_t count = 0;
    std::string example;
  };
  std::map<std::string, Entry> by_reason;
  void add(const std::string& reason, std::int64_t n, const std::string& example);
  // Example built only for the first occurrence of a reason.
  void add(const std::string& reason, std::int64_t n, const std::function<std::string()>& example);
  std::vector<RejectReason> sorted() const;
};

// Runs f(0..n−1) on `threads` threads (index i on thread i mod threads); results go to pre-sized slots.
void parallel_for(int threads, std::int64_t n, const std::function<void(std::int64_t)>& f);
// Divisors of n in increasing order, O(sqrt(n)).
std::vector<std::int64_t> divisors(std::int64_t n);
std::vector<int> device_divisors(int n);  // divisors of a device count
// The (pp, cp) pairs for the n_rest = devices/tp left to pp·cp·dp (plan/context_parallel.cpp): every divisor pp
// with cp = 1, followed, when `with_cp` and the sequence is long, by cp = 2, 4, … (see there).
std::vector<std::pair<int, int>> pp_cp_degrees(const model::Model& m, int n_rest, bool with_cp);
// The divisors d of gbs/dp with d <= max_mbs, from the divisors of gbs (a divisor of gbs/dp divides gbs).
std::vector<std::int64_t> divisors_of_quotient(const std::vector<std::int64_t>& divisors_of_gbs, std::int64_t gbs,
                                               std::int64_t dp, std::int64_t max_mbs);
// The largest micro-batch whose activations alone can fit the cluster's largest GPU at this tp (a bound: larger
// ones never fit, whatever the rest of the strategy).
std::int64_t max_useful_micro_batch(const model::Model& m, const hw::Cluster& c, int tp, hw::Dtype dtype);
std::string tp_rule_violation(const model::Model& m, int tp);
bool candidate_less(const Candidate& a, const Candidate& b);
std::string short_cli(const cost::Strategy& s);  // CLI syntax without the placement list
Space_ enumerate_space(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt, Rejections& rej);

// The pool the search keeps (rank.cpp): the pruning threshold (the K-th best time, or for Objective::margin also
// the edge of the tolerance window) and the trim of the time-sorted pool to the K fastest plus the window.
double keep_threshold_s(const std::vector<Candidate>& top, std::size_t K, const PlanOptions& opt);
void trim_pool(std::vector<Candidate>& top, std::size_t K, const PlanOptions& opt);
// plan --engine (engine_filter.cpp): the options with the engine's stack traits (InputError when it cannot run the
// model / devices / dtype at all); the filter of the enumeration (a no-op without an engine); the error when it
// filtered every configuration, naming the most frequent features.
PlanOptions with_engine_traits(const model::Model& m, const hw::Cluster& c, PlanOptions opt);
struct EngineFilter {
  const PlanOptions& opt;
  const model::Model& m;
  const hw::Cluster& c;
  // Degree limits only (tp, pp, cp): the knobs below the degrees are filtered per configuration.
  std::optional<std::string> degrees(const cost::Dims& d) const;
  // The schedules of (unit, variant) the engine can run; the others counted in `rej` per feature.
  std::vector<ScheduleChoice> schedules(const DegreeUnit& u, const Variant& var, const std::vector<ScheduleChoice>& all,
                                        Rejections& rej) const;
};
[[noreturn]] void throw_engine_runs_nothing(const PlanOptions& opt, const Rejections& rej);

// --placement anneal: refine the placement of the top candidates (baselines.cpp).
void anneal_top(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt, std::vector<Candidate>& top,
                PlanResult& res);
// megatron, uniform, dp-only, zero3-only (baselines.cpp).
std::vector<Baseline> compute_baselines(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                                        const Space_& sp, const LayerIndex& li, PlanResult& res);
// Lines explaining the best plan (explain.cpp).
std::vector<std::string> explain(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                                 const LayerIndex& li, const Space_& sp, const PlanResult& res);

}  // namespace strata::plan::detail
