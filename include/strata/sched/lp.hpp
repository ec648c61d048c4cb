// sched/lp: the one LP/MILP building layer of the scheduler. Policies add variables (bounds, objective
// coefficient, optional integrality) and linear constraints (lo <= Σ a_i x_i <= hi), then solve: pure LPs go to
// COIN-OR CLP (ClpSimplex), problems with integer variables to CBC (CbcModel over OsiClpSolverInterface).
#pragma once
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::sched {

inline constexpr double kLpInf = std::numeric_limits<double>::infinity();

enum class LpStatus { kOptimal, kInfeasible, kUnbounded, kFailed };

struct LpSolution {
  LpStatus status = LpStatus::kFailed;
  double objective = 0;
  std::vector<double> values;  // one per variable, in the order they were added
  bool ok() const { return status == LpStatus::kOptimal; }
};

// A variable's or row's identity across similar programs: a hash of what it stands for (a job's name, a GPU type,
// the row's role); 0 = none. Integers, not strings: building and looking up string keys cost more than the warm
// re-solve itself on 2,048-job traces.
using LpKey = std::uint64_t;
LpKey lp_key(std::string_view s);          // FNV-1a, never 0
LpKey lp_key(LpKey a, std::uint64_t b);    // combines two keys (splitmix64 finaliser), never 0

// The simplex basis of an earlier solve, by variable and row key: the simulator's consecutive re-solves differ by
// a few jobs, so the last basis, mapped by job identity, is a warm start for the next LP (issue 39: whole-trace
// simulations re-solve ~1,000 times). Values are CLP status codes.
struct LpBasis {
  std::unordered_map<LpKey, unsigned char> cols, rows;
};
// Bases kept between solves, one slot per LP kind (e.g. "makespan", "waterfill").
struct WarmStarts {
  std::map<std::string, LpBasis> slots;
};

class LinearProgram {
 public:
  // Adds a variable lo <= x <= hi with objective coefficient `objective`; returns its index.
  int add_variable(double lo, double hi, double objective = 0, bool integer = false);
  // Adds lo <= Σ coef·x[var] <= hi (use ±kLpInf for a one-sided row). Zero coefficients are dropped;
  // repeated variables are summed.
  // Returns the row's index (for IncrementalLp::set_row_bounds).
  int add_constraint(const std::vector<std::pair<int, double>>& terms, double lo, double hi);
  void set_objective(int var, double coef);
  double objective_coefficient(int var) const { return obj_.at(var); }
  void set_maximize(bool maximize) { maximize_ = maximize; }
  // Upper bound of a variable already added (used to pin variables, e.g. infeasible job/type cells to 0).
  void set_upper(int var, double hi);
  // Keys naming a variable / row across similar programs (warm starts); unkeyed ones start at their defaults.
  void set_variable_key(int var, LpKey key);
  void set_row_key(int row, LpKey key);

  int num_variables() const { return static_cast<int>(lo_.size()); }
  int num_constraints() const { return static_cast<int>(row_lo_.size()); }

  // Solves with CLP (or CBC when any variable is integer). Deterministic: same program → same solution.
  LpSolution solve() const;

 private:
  friend class IncrementalLp;
  std::vector<double> lo_, hi_, obj_;
  std::vector<char> integer_;
  std::vector<int> t_row_, t_col_;
  std::vector<double> t_val_;
  std::vector<double> row_lo_, row_hi_;
  std::vector<LpKey> col_key_, row_key_;  // 0 = unkeyed
  bool maximize_ = false;
  bool any_integer_ = false;
};

// A pure LP loaded once into CLP and re-solved after small changes (row bounds, coefficients, objective) from
// the previous optimal basis — the incremental re-solve of binary searches and water-filling iterations: after a
// bound change the old basis stays dual feasible, so CLP's dual simplex needs few pivots instead of a cold start.
class IncrementalLp {
 public:
  explicit IncrementalLp(const LinearProgram& lp);  // logic_error for a program with integer variables
  ~IncrementalLp();
  IncrementalLp(const IncrementalLp&) = delete;
  IncrementalLp& operator=(const IncrementalLp&) = delete;

  void set_row_bounds(int row, double lo, double hi);
  void set_coefficient(int row, int var, double coef);  // matrix element (0 removes it)
  void set_objective(int var, double coef);
  // The next solve starts from `b` (statuses of keyed variables/rows; the rest: slack basis defaults) with the
  // dual simplex — before the first solve, or to replace the basis of an earlier one (a lexicographic second
  // objective that starts better from the last re-solve's second basis). CLP repairs a basis with too few or too
  // many basic entries (jobs that left or arrived).
  void start_from(const LpBasis& b);
  // The current basis by key (after a solve), for the next similar program.
  LpBasis basis() const;
  // First call: CLP's initial solve; later: dual simplex from the last basis (after bound changes), or with
  // `primal` the primal simplex (after objective changes, where the old basis stays primal feasible).
  LpSolution solve(bool primal = false);

 private:
  struct Model;
  Model* model_;
  bool solved_once_ = false;
};

}  // namespace strata::sched
