// sim/schedule: per-device op orders of the five pipeline schedules (see schedule.hpp for the sources).
#include "strata/sim/schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace strata::sim {
namespace {

using cost::Schedule;

Op fwd(std::int64_t i, int c = 0) { return Op{OpKind::forward, i, c}; }
Op bwd(std::int64_t i, int c = 0) { return Op{OpKind::backward, i, c}; }
Op opt(std::int64_t window) { return Op{OpKind::optimizer, window, 0}; }

// One batch of GPipe starting at micro-batch `base`.
void gpipe(std::vector<Op>& out, std::int64_t base, std::int64_t m) {
  for (std::int64_t i = 0; i < m; ++i) out.push_back(fwd(base + i));
  for (std::int64_t i = m - 1; i >= 0; --i) out.push_back(bwd(base + i));
}

// 1F1B over `n` micro-batches starting at `base` with `warmup` forwards first (Megatron's non-interleaved order).
// `after_bwd(i)` may append ops (optimizer steps of the asynchronous schedules) after backward i.
template <class AfterBwd>
void one_f_one_b(std::vector<Op>& out, std::int64_t base, std::int64_t n, std::int64_t warmup, AfterBwd after_bwd) {
  warmup = std::min(warmup, n);
  for (std::int64_t i = 0; i < warmup; ++i) out.push_back(fwd(base + i));
  for (std::int64_t i = 0; i < n - warmup; ++i) {
    out.push_back(fwd(base + warmup + i));
    out.push_back(bwd(base + i));
    after_bwd(base + i);
  }
  for (std::int64_t i = n - warmup; i < n; ++i) {
    out.push_back(bwd(base + i));
    after_bwd(base + i);
  }
}

// Megatron interleaved 1F1B for one batch (notes_003 §3.3 [EXT]).
void interleaved(std::vector<Op>& out, std::int64_t base, int p, int rank, std::int64_t m, int v) {
  const std::int64_t total = m * v, pv = static_cast<std::int64_t>(p) * v;
  std::int64_t warmup = (m == p) ? total : std::min<std::int64_t>(total, 2LL * (p - rank - 1) + (v - 1LL) * p);
  auto micro = [&](std::int64_t k) { return base + (k / pv) * p + k % p; };
  auto fchunk = [&](std::int64_t k) { return static_cast<int>((k % pv) / p); };
  auto bchunk = [&](std::int64_t k) { return v - 1 - fchunk(k); };
  for (std::int64_t k = 0; k < warmup; ++k) out.push_back(fwd(micro(k), fchunk(k)));
  for (std::int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(fwd(micro(warmup + k), fchunk(warmup + k)));
    out.push_back(bwd(micro(k), bchunk(k)));
  }
  for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(bwd(micro(k), bchunk(k)));
}

}  // namespace

std::int64_t two_bw_version(std::int64_t k, std::int64_t m) { return std::max<std::int64_t>(k / m - 1, 0); }

std::vector<Op> schedule_order(Schedule s, int p, int rank, std::int64_t m, int v, int iterations) {
  if (p < 1 || rank < 0 || rank >= p || m < 1 || v < 1 || iterations < 1)
    throw std::invalid_argument("schedule_order: bad arguments");
  std::vector<Op> out;
  const std::int64_t warmup = p - rank - 1;
  auto none = [](std::int64_t) {};
  switch (s) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b:
    case Schedule::interleaved:
      if (s == Schedule::interleaved && m % p != 0)
        throw std::invalid_argument("interleaved schedule needs m % p == 0");
      for (int it = 0; it < iterations; ++it) {
        const std::int64_t base = it * m;
        if (s == Schedule::gpipe) gpipe(out, base, m);
        else if (s == Schedule::one_f_one_b) one_f_one_b(out, base, m, warmup, none);
        else interleaved(out, base, p, rank, m, v);
        out.push_back(opt(it));
      }
      break;
    case Schedule::pipedream:
      one_f_one_b(out, 0, m * iterations, warmup, [&](std::int64_t i) { out.push_back(opt(i)); });
      break;
    case Schedule::two_bw:
      one_f_one_b(out, 0, m * iterations, warmup, [&](std::int64_t i) {
        if ((i + 1) % m == 0) out.push_back(opt(i / m));
      });
      break;
  }
  return out;
}

}  // namespace strata::sim
