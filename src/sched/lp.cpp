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
void LinearProgram::set_variable_key(int var, LpKey key) {
  if (col_key_.size() < lo_.size()) col_key_.resize(lo_.size(), 0);
  col_key_.at(var) = key;
}
void LinearProgram::set_row_key(int row, LpKey key) {
  if (row_key_.size() < row_lo_.size()) row_key_.resize(row_lo_.size(), 0);
  row_key_.at(row) = key;
}

LpKey lp_key(std::string_view s) {
  LpKey h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h == 0 ? 1 : h;
}

LpKey lp_key(LpKey a, std::uint64_t b) {
  std::uint64_t z = a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return z == 0 ? 1 : z;
}
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
  std::vector<LpKey> col_key, row_key;
  bool warm = false;  // statuses set by start_from
  // CLP keeps its work areas and factorization after a solve (startFinishOptions 1); the next re-solve reuses the
  // factorization (option 2) when the basis and the matrix are unchanged since — bounds and objective changes keep
  // it valid; start_from and set_coefficient do not.
  bool factor_kept = false;
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
  model_->col_key = lp.col_key_;
  model_->row_key = lp.row_key_;
  model_->col_key.resize(n, 0);
  model_->row_key.resize(m, 0);
  model_->clp.setLogLevel(0);
  model_->clp.loadProblem(matrix, lo.data(), hi.data(), lp.obj_.data(), rlo.data(), rhi.data());
  model_->clp.setOptimizationDirection(lp.maximize_ ? -1.0 : 1.0);
}

IncrementalLp::~IncrementalLp() { delete model_; }

void IncrementalLp::set_row_bounds(int row, double lo, double hi) {
  model_->clp.setRowBounds(row, coin_bound(lo), coin_bound(hi));
}
void IncrementalLp::set_coefficient(int row, int var, double coef) {
  model_->clp.modifyCoefficient(row, var, coef, /*keepZero=*/true);
  model_->clp.setWhatsChanged(0);  // CLP does not notice a matrix change: rebuild the kept work areas
  model_->factor_kept = false;
}
void IncrementalLp::set_objective(int var, double coef) { model_->clp.setObjectiveCoefficient(var, coef); }

void IncrementalLp::start_from(const LpBasis& b) {
  if (b.cols.empty() && b.rows.empty()) return;
  ClpSimplex& clp = model_->clp;
  clp.createStatus();  // slack basis: rows basic, variables at a bound
  for (int i = 0; i < model_->n; ++i) {
    if (model_->col_key[i] == 0) continue;
    auto it = b.cols.find(model_->col_key[i]);
    if (it != b.cols.end()) clp.setColumnStatus(i, static_cast<ClpSimplex::Status>(it->second));
  }
  for (int r = 0; r < static_cast<int>(model_->row_key.size()); ++r) {
    if (model_->row_key[r] == 0) continue;
    auto it = b.rows.find(model_->row_key[r]);
    if (it != b.rows.end()) clp.setRowStatus(r, static_cast<ClpSimplex::Status>(it->second));
  }
  model_->warm = true;
  model_->factor_kept = false;
}

LpBasis IncrementalLp::basis() const {
  LpBasis b;
  const ClpSimplex& clp = model_->clp;
  if (clp.statusArray() == nullptr) return b;
  b.cols.reserve(model_->n);
  b.rows.reserve(model_->row_key.size());
  for (int i = 0; i < model_->n; ++i)
    if (model_->col_key[i] != 0) b.cols[model_->col_key[i]] = static_cast<unsigned char>(clp.getColumnStatus(i));
  for (int r = 0; r < static_cast<int>(model_->row_key.size()); ++r)
    if (model_->row_key[r] != 0) b.rows[model_->row_key[r]] = static_cast<unsigned char>(clp.getRowStatus(r));
  return b;
}

LpSolution IncrementalLp::solve(bool primal) {
  const int keep = 1 | (model_->factor_kept ? 2 : 0);
  if (model_->warm) model_->clp.dual(0, keep);  // from the carried-over basis
  else if (!solved_once_) model_->clp.initialSolve();
  else if (primal) model_->clp.primal(1, keep);
  else model_->clp.dual(0, keep);
  model_->factor_kept = solved_once_ || model_->warm;  // initialSolve frees its factorization
  // A basis left by an infeasible re-solve can stall the dual; fall back to a fresh primal solve.
  if (!model_->clp.isProvenOptimal() && !model_->clp.isProvenPrimalInfeasible()) {
    model_->clp.initialSolve();
    model_->factor_kept = false;
  }
  solved_once_ = true;
  model_->warm = false;
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
