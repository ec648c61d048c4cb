// sim/schedule: the exact per-device order of forward/backward passes (and optimizer steps) of each pipeline
// schedule, as the reference systems run them:
//   GPipe        all forwards, then all backwards (last micro-batch first, GPipe Fig. 2c); flush per batch.
//   1F1B         PipeDream-Flush / Megatron non-interleaved: rank r runs min(p−r−1, m) warm-up forwards, then
//                alternates one forward / one backward, then drains (notes_003 §3.3, Megatron schedules.py).
//   interleaved  Megatron virtual pipeline: warm-up (p−r−1)·2 + (v−1)·p virtual micro-batches (all m·v when
//                m == p); virtual micro-batch k runs chunk (k mod p·v) div p forward (reversed for backward) on
//                micro-batch (k div p·v)·p + k mod p.
//   pipedream    asynchronous 1F1B (NOAM = p in flight at the input stage), no flush, weight update after
//                every micro-batch's backward (weight stashing), continuous over all iterations.
//   2bw          asynchronous 1F1B as pipedream, gradients accumulated over m micro-batches, one update per m
//                (double-buffered weights; version of micro-batch k (1-based) = max(⌊(k−1)/m⌋ − 1, 0)).
#pragma once
#include <cstdint>
#include <vector>

#include "strata/cost/strategy.hpp"

namespace strata::sim {

enum class OpKind : std::uint8_t { forward, backward, optimizer };

struct Op {
  OpKind kind = OpKind::forward;
  std::int64_t micro = 0;  // global micro-batch index (0-based, counting across iterations); window for optimizer
  int chunk = 0;           // local chunk index on the device (0..v−1); global chunk = chunk·p + rank
};

// The compute-stream order of pipeline rank `rank` over `iterations` batches of m micro-batches each. Flush
// schedules end every batch with an optimizer op; pipedream has one after every backward, 2bw one after the
// backward of every m-th micro-batch. Throws std::invalid_argument when interleaving gets m % p != 0.
std::vector<Op> schedule_order(cost::Schedule s, int p, int rank, std::int64_t m, int v, int iterations);

// 2BW's weight version of micro-batch k (0-based here: max(⌊k/m⌋ − 1, 0), i.e. notes_003 §2.1 with k+1).
std::int64_t two_bw_version(std::int64_t k, std::int64_t m);

}  // namespace strata::sim
