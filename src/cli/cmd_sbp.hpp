// cli/cmd_sbp: the flags of `strata sbp` (AutoDDL's SBP search), shared with `strata plan --space sbp`, which
// forwards to run_sbp (cmd_sbp.cpp, docs/sbp.md).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace strata::cli {

struct SbpArgs {
  std::string model, mlp, cluster, dtype = "bf16", json_file, memory_headroom;
  std::string search = "auto", objective = "time";
  bool memory_headroom_given = false;
  std::int64_t gbs = 0, mbs = 0;  // mbs 0 = one sample per device
  std::optional<std::int64_t> seq;
  double rows = 32768;            // --mlp: rows of the (one) micro-batch
  std::int64_t seed = 1;
  int restarts = 256, mh_steps = 20000, max_p0 = 0;
  std::string flag = "sbp";       // names the command in error messages ("plan" when forwarded)
};

void run_sbp(const SbpArgs& a);

}  // namespace strata::cli
