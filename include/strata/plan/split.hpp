// plan/split: the exact layer→stage split of a pipeline (AMP §3.5, done faster). Pure algorithm on abstract,
// integer inputs (times in picoseconds, so every sum and every tie is exact and the result is bit-for-bit
// deterministic): contiguous layers per stage, heterogeneous layers AND heterogeneous stages (layer i costs
// time[class(j)][i] on stage j), per-stage memory feasibility, and a cut cost e_j(b) that depends on the stage
// pair and on the cut position. Objective (AMP eq. 5 generalised):
//
//     weight_max · max(t_j [, e_j if cuts_in_max]) + weight_sum · (Σ_j t_j + Σ_j e_j)
//
// gpipe/1f1b: weight_max = m−1, weight_sum = 1, cuts_in_max = false (AMP eq. 5);
// pipedream/2bw: weight_max = m, weight_sum = 0, cuts_in_max = true (steady state m·max(max t, max e)).
// Algorithm and optimality argument: docs/planner.md §Layer split.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace strata::plan {

inline constexpr std::int64_t kInfinitePs = INT64_MAX / 4;
// The objective weight_max·max + weight_sum·sum in ps: 128-bit, because weight_max is m − 1 and m may be ~1e9
// micro-batches (gbs 1e9), which overflows 64 bits at second-scale stage times; still exact.
__extension__ typedef __int128 SplitObjective;

struct SplitProblem {
  int layers = 0;                                  // L
  // time_prefix[k][i] = Σ_{l<i} time of layer l on a stage of class k (size L+1, non-decreasing, ps).
  std::vector<std::vector<std::int64_t>> time_prefix;
  std::vector<int> stage_class;                    // size p: class of stage j (stages of one class share times)
  // min_start[j][b] (size p × (L+1)): the smallest a < b such that layers [a, b) fit stage j's memory; b when
  // not even layer b−1 alone fits. Must be non-decreasing in b (a sub-range of a fitting range fits).
  std::vector<std::vector<int>> min_start;
  // cut[j][b] (size (p−1) × (L+1)): e_j when stage j ends before layer b (b in 1..L−1), in ps.
  std::vector<std::vector<std::int64_t>> cut;
  std::int64_t weight_max = 0;
  std::int64_t weight_sum = 1;
  bool cuts_in_max = false;
  int stages() const { return static_cast<int>(stage_class.size()); }
};

struct SplitResult {
  bool feasible = false;
  std::vector<int> sizes;        // layers per stage (size p), lexicographically smallest among the optima
  SplitObjective objective = 0;  // ps, weights applied
  std::int64_t max_term = 0;     // max t_j (and e_j when cuts_in_max)
  std::int64_t sum_term = 0;     // Σ t_j + Σ e_j
  int bounds_tried = 0;          // how many candidate bounds the sweep solved (for --explain / the docs)
};

// Exact optimum; ties broken by the lexicographically smallest `sizes`. O(p·L) per candidate bound, bounds swept
// in increasing order from the min-max bottleneck and stopped by the lower bound weight_max·B + weight_sum·F(∞).
SplitResult solve_split(const SplitProblem& p);

// Memo of solve_split by the problem's content (the planner meets one problem under several configurations, e.g.
// ZeRO 0/1/2 when memory does not bind them apart). Thread-safe; the memoised overload returns exactly what
// solve_split returned for an identical problem (bounds_tried included).
struct SplitMemo {
  // A full memo is emptied, not grown (the planner's repeats come close together: ZeRO 0/1/2 of one variant have
  // the same lower bound, so they are evaluated one after another).
  static constexpr std::size_t kMaxResults = 4;
  std::mutex mu;
  struct Hash {
    std::size_t operator()(const std::vector<std::int64_t>& key) const;
  };
  std::unordered_map<std::vector<std::int64_t>, SplitResult, Hash> results;  // key: the problem, run-length coded
};
SplitResult solve_split(const SplitProblem& p, SplitMemo& memo);

// The pieces of solve_split, for tests: F(bound) = min weight_sum·(Σt + Σe) over splits with every t_j (and e_j
// when cuts_in_max) ≤ bound (kInfinitePs when none), and the feasibility test the binary search for B_min uses
// instead (1 feasible, 0 not, −1 when it does not apply and solve_split falls back to F(bound) < kInfinitePs).
std::int64_t bound_objective(const SplitProblem& p, std::int64_t bound);
int bound_feasible(const SplitProblem& p, std::int64_t bound);

// Objective of a given split (sizes) under the problem, or nullopt-like infeasible result (feasible = false).
SplitResult evaluate_split(const SplitProblem& p, const std::vector<int>& sizes);

// Exhaustive enumeration of all C(L−1, p−1) contiguous splits (tests and tiny problems only).
SplitResult brute_force_split(const SplitProblem& p);

// min_start row for one stage from a monotone predicate fits(a, b) ("layers [a, b) fit"), by two pointers: O(L)
// predicate calls.
std::vector<int> min_start_from_predicate(int layers, const std::function<bool(int, int)>& fits);
// The same into `row` (its storage reused: the planner builds one problem per configuration).
void min_start_from_predicate(int layers, const std::function<bool(int, int)>& fits, std::vector<int>& row);
// min_start row for linear memory: Σ_{[a,b)} static + mult·Σ_{[a,b)} act ≤ capacity (all bytes, integers).
std::vector<int> min_start_linear(const std::vector<std::int64_t>& static_bytes,
                                  const std::vector<std::int64_t>& act_bytes, std::int64_t mult,
                                  std::int64_t capacity);

// Seconds ↔ picoseconds used by the split (rounded to nearest; 1 ps resolution).
std::int64_t to_ps(double seconds);
double from_ps(std::int64_t ps);
double from_ps(SplitObjective ps);

}  // namespace strata::plan
