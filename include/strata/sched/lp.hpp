// sched/lp: the one LP/MILP building layer of the scheduler. Policies add variables (bounds, objective
// coefficient, optional integrality) and linear constraints (lo <= Σ a_i x_i <= hi), then solve: pure LPs go to
// COIN-OR CLP (ClpSimplex), problems with integer variables to CBC (CbcModel over OsiClpSolverInterface).
#pragma once
#include <limits>
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
  // First call: CLP's initial solve; later: dual simplex from the last basis (after bound changes), or with
  // `primal` the primal simplex (after objective changes, where the old basis stays primal feasible).
  LpSolution solve(bool primal = false);

 private:
  struct Model;
  Model* model_;
  bool solved_once_ = false;
};

}  // namespace strata::sched
