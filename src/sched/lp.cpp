// sched/lp: LinearProgram → COIN-OR. CLP's dual simplex for LPs, CBC branch-and-bound for MILPs; all logging off.
#include "strata/sched/lp.hpp"

#include <coin/CbcModel.hpp>
#include <coin/ClpSimplex.hpp>
#include <coin/CoinPackedMatrix.hpp>
#include <coin/OsiClpSolverInterface.hpp>

#include <cmath>
#include <stdexcept>

namespace strata::sched {
namespace {

double coin_bound(double x) {
  if (x == kLpInf) return COIN_DBL_MAX;
  if (x == -kLpInf) return -COIN_DBL_MAX;
  return x;
}

}  // namespace

int LinearProgram::add_variable(double lo, double hi, double objective, bool integer) {
  lo_.push_back(lo);
  hi_.push_back(hi);
  obj_.push_back(objective);
  integer_.push_back(integer ? 1 : 0);
  any_integer_ = any_integer_ || integer;
  return static_cast<int>(lo_.size()) - 1;
}

void LinearProgram::add_constraint(const std::vector<std::pair<int, double>>& terms, double lo, double hi) {
  const int row = static_cast<int>(row_lo_.size());
  for (const auto& [var, coef] : terms) {
    if (var < 0 || var >= num_variables()) throw std::logic_error("LinearProgram: constraint on unknown variable");
    if (coef == 0) continue;
    t_row_.push_back(row);
    t_col_.push_back(var);
    t_val_.push_back(coef);
  }
  row_lo_.push_back(lo);
  row_hi_.push_back(hi);
}

void LinearProgram::set_objective(int var, double coef) { obj_.at(var) = coef; }
void LinearProgram::set_upper(int var, double hi) { hi_.at(var) = hi; }

LpSolution LinearProgram::solve() const {
  const int n = num_variables(), m = num_constraints();
  // Row-ordered triplets; duplicates are summed by CoinPackedMatrix's constructor.
  CoinPackedMatrix matrix(false, t_row_.data(), t_col_.data(), t_val_.data(),
                          static_cast<CoinBigIndex>(t_val_.size()));
  matrix.setDimensions(m, n);
  std::vector<double> lo(n), hi(n), rlo(m), rhi(m);
  for (int i = 0; i < n; ++i) lo[i] = coin_bound(lo_[i]), hi[i] = coin_bound(hi_[i]);
  for (int r = 0; r < m; ++r) rlo[r] = coin_bound(row_lo_[r]), rhi[r] = coin_bound(row_hi_[r]);

  LpSolution out;
  if (!any_integer_) {
    ClpSimplex model;
    model.setLogLevel(0);
    model.loadProblem(matrix, lo.data(), hi.data(), obj_.data(), rlo.data(), rhi.data());
    model.setOptimizationDirection(maximize_ ? -1.0 : 1.0);
    model.initialSolve();
    if (model.isProvenOptimal()) {
      out.status = LpStatus::kOptimal;
      out.objective = model.objectiveValue();
      out.values.assign(model.primalColumnSolution(), model.primalColumnSolution() + n);
    } else if (model.isProvenPrimalInfeasible()) {
      out.status = LpStatus::kInfeasible;
    } else if (model.isProvenDualInfeasible()) {
      out.status = LpStatus::kUnbounded;
    }
    return out;
  }
  OsiClpSolverInterface si;
  si.messageHandler()->setLogLevel(0);
  si.loadProblem(matrix, lo.data(), hi.data(), obj_.data(), rlo.data(), rhi.data());
  si.setObjSense(maximize_ ? -1.0 : 1.0);
  for (int i = 0; i < n; ++i)
    if (integer_[i]) si.setInteger(i);
  CbcModel model(si);
  model.setLogLevel(0);
  model.messageHandler()->setLogLevel(0);
  model.branchAndBound();
  if (model.isProvenOptimal() && model.bestSolution() != nullptr) {
    out.status = LpStatus::kOptimal;
    out.objective = model.getObjValue();
    out.values.assign(model.bestSolution(), model.bestSolution() + n);
    for (int i = 0; i < n; ++i)
      if (integer_[i]) out.values[i] = std::round(out.values[i]);
  } else if (model.isProvenInfeasible()) {
    out.status = LpStatus::kInfeasible;
  }
  return out;
}

}  // namespace strata::sched
