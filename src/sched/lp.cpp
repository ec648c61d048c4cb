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

int LinearProgram::add_constraint(const std::vector<std::pair<int, double>>& terms, double lo, double hi) {
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
  return row;
}

void LinearProgram::set_objective(int var, double coef) { obj_.at(var) = coef; }
void LinearProgram::set_upper(int var, double hi) { hi_.at(var) = hi; }

namespace {

// Reads CLP's status and solution.
LpSolution clp_solution(const ClpSimplex& model, int n) {
  LpSolution out;
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

}  // namespace

struct IncrementalLp::Model {
  ClpSimplex clp;
  int n = 0;
};

IncrementalLp::IncrementalLp(const LinearProgram& lp) : model_(new Model) {
  if (lp.any_integer_) {
    delete model_;
    throw std::logic_error("IncrementalLp: integer variables need CBC (LinearProgram::solve)");
  }
  const int n = lp.num_variables(), m = lp.num_constraints();
  CoinPackedMatrix matrix(false, lp.t_row_.data(), lp.t_col_.data(), lp.t_val_.data(),
                          static_cast<CoinBigIndex>(lp.t_val_.size()));
  matrix.setDimensions(m, n);
  std::vector<double> lo(n), hi(n), rlo(m), rhi(m);
  for (int i = 0; i < n; ++i) lo[i] = coin_bound(lp.lo_[i]), hi[i] = coin_bound(lp.hi_[i]);
  for (int r = 0; r < m; ++r) rlo[r] = coin_bound(lp.row_lo_[r]), rhi[r] = coin_bound(lp.row_hi_[r]);
  model_->n = n;
  model_->clp.setLogLevel(0);
  model_->clp.loadProblem(matrix, lo.data(), hi.data(), lp.obj_.data(), rlo.data(), rhi.data());
  model_->clp.setOptimizationDirection(lp.maximize_ ? -1.0 : 1.0);
}

IncrementalLp::~IncrementalLp() { delete model_; }

void IncrementalLp::set_row_bounds(int row, double lo, double hi) {
  model_->clp.setRowBounds(row, coin_bound(lo), coin_bound(hi));
}
void IncrementalLp::set_coefficient(int row, int var, double coef) { model_->clp.modifyCoefficient(row, var, coef, /*keepZero=*/true); }
void IncrementalLp::set_objective(int var, double coef) { model_->clp.setObjectiveCoefficient(var, coef); }

LpSolution IncrementalLp::solve(bool primal) {
  if (!solved_once_) model_->clp.initialSolve();
  else if (primal) model_->clp.primal(1);
  else model_->clp.dual(0);
  // A basis left by an infeasible re-solve can stall the dual; fall back to a fresh primal solve.
  if (!model_->clp.isProvenOptimal() && !model_->clp.isProvenPrimalInfeasible()) model_->clp.initialSolve();
  solved_once_ = true;
  return clp_solution(model_->clp, model_->n);
}

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
    return clp_solution(model, n);
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
