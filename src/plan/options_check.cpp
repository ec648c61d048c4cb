// plan/options_check: the checks on plan options that `strata plan` and the Python API's strata.plan share, run
// before the search so that a typo costs no search time (messages name the CLI flags).
#include "strata/core/error.hpp"
#include "strata/plan/search.hpp"

namespace strata::plan {

void check_plan_options(const PlanOptions& opt, const model::Model& m, bool skip_global_batch) {
  if (!skip_global_batch && opt.global_batch < 1) throw core::InputError("plan: --gbs: must be >= 1 (global batch size in samples)");
  if (opt.top_k < 1) throw core::InputError("plan: --top: must be >= 1");
  if (opt.threads < 1 || opt.threads > 256) throw core::InputError("plan: --threads: must be in 1..256");
  if (opt.max_tp < 0 || opt.max_pp < 0)
    throw core::InputError("plan: --max-tp/--max-pp: must be >= 0 (0 = no limit)");
  if (!skip_global_batch) check_global_batch(m, opt.global_batch);
}

}  // namespace strata::plan
