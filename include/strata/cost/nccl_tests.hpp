// cost/nccl_tests: measured network input — the text that NVIDIA's nccl-tests print (all_reduce_perf,
// all_gather_perf, reduce_scatter_perf, sendrecv_perf, broadcast_perf, alltoall_perf), parsed into collective
// timings and fitted to α + β·bytes per (collective, group size) (docs/cost-model.md §Measured network).
//
// Format read (nccl-tests README "Performance"): '#' header lines with "nThread T nGpus G", one "#  Rank  r ..."
// line per rank, optionally "# Collective test starting: <name>", a column header "#  size  count  type  redop
// root  time  algbw  busbw  #wrong  time ..." ('size' in bytes, 'time' in µs, the first group out-of-place), then
// one row per size. 'size' is the full buffer (the gathered output / the reduce-scattered input / the message),
// as strata's collectives take it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/cost/comm.hpp"
#include "strata/cost/profile.hpp"

namespace strata::cost {

struct NcclTestsRun {
  std::string test;                      // "all_reduce_perf", ... ("" when the output does not name it)
  Collective op = Collective::allreduce;
  int ranks = 0;                         // group size: "Rank" lines, else nThread × nGpus
  std::vector<ProfileCollective> rows;   // out-of-place time per size (seconds, bytes)
};

// The collective of an nccl-tests binary name ("all_gather_perf" or "all_gather"); nullopt when unknown.
std::optional<Collective> nccl_test_collective(std::string_view test_name);

// Parses one run's output. `op_hint` names the test when the text does not ("all_reduce_perf", ...). InputError
// "<origin>:<line>: <problem>" on a malformed row, a non-positive size or time, rows with #wrong > 0, no rows, an
// unknown or missing test name, or a rank count that cannot be read.
NcclTestsRun parse_nccl_tests(std::string_view text, const std::string& origin, std::string_view op_hint = {});

// α–β fit of one run (least squares, α, β ≥ 0; cost/profile's fit). sendrecv_perf is a p2p between pairs: its
// group size is 2 whatever the number of ranks.
CollectiveFit fit_nccl_tests(const NcclTestsRun& run);

}  // namespace strata::cost
