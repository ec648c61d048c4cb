// sched/alloc_lp (private): the allocation LP every policy starts from — variables X_kc for each combination k
// and worker column c, the base constraints of thesis eqs. 5.1–5.3 (with the space-sharing and placement
// variants), and each job's throughput(m, X) and cost-rate as linear terms.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "strata/sched/lp.hpp"
#include "strata/sched/policy.hpp"

namespace strata::sched::detail {

using Terms = std::vector<std::pair<int, double>>;

struct AllocLp {
  LinearProgram lp;
  Allocation shape;                   // combos and columns (x empty)
  std::vector<std::vector<int>> var;  // [combo][column] variable index, -1 = pinned to 0
  std::vector<Terms> tput;            // per job: Σ coef·x = throughput(m, X), steps/s
  std::vector<LpKey> job_key;         // per job: lp_key(name), when warm starts are on (else empty)
};

// Combinations and columns for `p` under `opt` (the shape of X).
Allocation allocation_shape(const Problem& p, const PolicyOptions& opt);
// Builds the LP with the base constraints: 0 <= X <= 1, Σ_{k∋m} Σ_c X_kc <= 1, Σ_k sf_k Σ_{c of type j} X_kc <= W_j.
AllocLp build_alloc_lp(const Problem& p, const PolicyOptions& opt);
// Keys rows[m] (one per job) by the job and `tag` (the row's role) when warm starts are on.
void key_job_rows(AllocLp& a, const std::vector<int>& rows, char tag);
// First solve of `lp` from the basis kept in slot `slot` of opt.warm (when set); with `save`, the optimal basis
// goes back to the slot for the next re-solve.
LpSolution solve_warm(IncrementalLp& lp, const PolicyOptions& opt, const std::string& slot, bool save);
// A later solve of `lp` after an objective change (a lexicographic second objective): from the basis kept in
// `slot` by the last re-solve's same step (dual simplex) when there is one, else the primal simplex from the
// current basis (still primal feasible); the optimal basis goes back to `slot`.
LpSolution solve_again(IncrementalLp& lp, const PolicyOptions& opt, const std::string& slot);
// One solve of `program`: cold without opt.warm, else warm-started from and saved to `slot`.
LpSolution solve_once(const LinearProgram& program, const PolicyOptions& opt, const std::string& slot);
// Reads X from a solution (clipped to [0, 1]).
Allocation read_allocation(const AllocLp& a, const LpSolution& s);
// Terms scaled by `f`.
Terms scaled(const Terms& t, double f);
// Appends `extra` to `t`.
Terms concat(Terms t, const Terms& extra);
// Price of a type in $/GPU-hour, or an InputError naming the policy.
double price_of(const WorkerType& t, PriceKind price, const std::string& policy);

// Re-solves `a.lp` after the primary objective: pins the primary variable `primary_var` at >= (1 − 1e-7)·its
// optimum (or <= for minimisation) and maximises Σ_m throughput(m, X)/reference_throughput(m) instead.
LpSolution secondary_max_normalized(const Problem& p, AllocLp& a, int primary_var, double primary_value,
                                    bool primary_is_lower_bound, Normalization normalization);

}  // namespace strata::sched::detail
