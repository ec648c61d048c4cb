// plan/split: exact contiguous layer→stage split by a bound sweep over the max-stage term (docs/planner.md).
//
// For a bound B on every t_j (and e_j when cuts_in_max), F(B) = min weight_sum·(Σt + Σe) subject to t_j ≤ B and
// memory is a chain DP. Written as a suffix DP h[j][a] (layers [a, L) on stages j..p−1):
//     h[j][a] = −w·P_j[a] + min_{b ∈ [a+1, hi_j(a)]} ( w·(P_j[b] + e_j(b)) + h[j+1][b] )
// where hi_j(a) = the last end b with P_j[b] − P_j[a] ≤ B, min_start[j][b] ≤ a and enough layers left. hi_j is
// non-decreasing in a, so the window minimum is a monotone deque: O(L) per stage, O(p·L) per bound.
// The optimum is min_B weight_max·B + F(B) over the candidate values B (the O(p·L²) sums t_j(a, b)); F is
// non-increasing, so the sweep starts at the min-max bottleneck B_min (binary search) and visits candidate values
// in increasing order (the next one found in O(p·L) by two pointers, never sorted) until
// weight_max·B + F(∞) exceeds the best objective found.
#include "strata/plan/split.hpp"

#include <algorithm>
#include <cmath>
#include <deque>

namespace strata::plan {
namespace {

using i64 = std::int64_t;

i64 add_sat(i64 a, i64 b) { return (a >= kInfinitePs || b >= kInfinitePs) ? kInfinitePs : std::min(a + b, kInfinitePs); }

struct Workspace {
  std::vector<i64> h;        // p × (L+1), row-major: h[j·(L+1) + a]
  std::vector<i64> g;        // one stage's window values g(b), b in [1, L]
  std::vector<int> dq;       // deque storage (indices)
  std::vector<int> classes;  // the classes that some stage uses, in first-use order (next_candidate)
  std::vector<char> reach, reach_next;  // reachable(): stage starts reached by the previous stages
  bool exact_reach = false;             // no_saturation(p): reachable() decides feasibility
  bool trim = false;                    // well_formed(p): solve_bound skips starts beyond the forward reach
  std::vector<int> start_max;           // solve_bound with trim: R_j, the largest start stage j can have
  i64* row(int j, int L) { return h.data() + static_cast<std::size_t>(j) * (L + 1); }
  const i64* row(int j, int L) const { return h.data() + static_cast<std::size_t>(j) * (L + 1); }
};

const std::vector<i64>& prefix(const SplitProblem& p, int stage) { return p.time_prefix[p.stage_class[stage]]; }

i64 cut_cost(const SplitProblem& p, int stage, int b) { return p.cut.empty() ? 0 : p.cut[stage][b]; }

// Suffix DP for bound B; returns h[0][0] (kInfinitePs when infeasible). Fills ws.h. Stage j starts at a ≥ j
// (every earlier stage holds a layer), so h[j][a < j] is never read and stays infinite; the window values g(b)
// are computed once per stage. With ws.trim (a well-formed problem), stage j also starts at most at R_j, the end of
// the window of a = R_{j−1} (R_0 = 0; windows only grow with a): h[j][a > R_j] is never read (not by the DP, nor by
// reconstruct, whose ends stay within the windows), so it stays infinite and is not computed.
i64 solve_bound(const SplitProblem& p, i64 bound, Workspace& ws) {
  const int L = p.layers, P = p.stages();
  const i64 w = p.weight_sum;
  ws.h.assign(static_cast<std::size_t>(P) * (L + 1), kInfinitePs);
  ws.start_max.assign(static_cast<std::size_t>(P), L);
  if (ws.trim) {
    ws.start_max[0] = 0;
    for (int j = 0; j + 1 < P; ++j) {
      const i64* pre = prefix(p, j).data();
      const int* ms = p.min_start[j].data();
      const int last_end = L - (P - 1 - j);
      int hi = j;  // the DP's carried window end below, up to a = R_j
      for (int a = j; a <= std::min(ws.start_max[j], last_end - 1); ++a)
        while (hi + 1 <= last_end && pre[hi + 1] - pre[a] <= bound && ms[hi + 1] <= a) ++hi;
      if (hi < j + 1) return kInfinitePs;  // no stage j+1 start is reached: every h[j][·] is infinite
      ws.start_max[j + 1] = hi;
    }
  }
  // Last stage: layers [a, L).
  {
    const auto& pre = prefix(p, P - 1);
    i64* last = ws.row(P - 1, L);
    const int a_end = std::min(L - 1, ws.start_max[P - 1]);
    for (int a = std::max(p.min_start[P - 1][L], P - 1); a <= a_end; ++a) {
      const i64 t = pre[L] - pre[a];
      if (t <= bound) last[a] = w * t;
    }
  }
  ws.g.resize(static_cast<std::size_t>(L + 1));
  ws.dq.resize(static_cast<std::size_t>(L + 2));
  i64* gv = ws.g.data();
  int* dq = ws.dq.data();
  for (int j = P - 2; j >= 0; --j) {
    const i64* pre = prefix(p, j).data();
    const i64* next = ws.row(j + 1, L);
    i64* cur = ws.row(j, L);
    const int* ms = p.min_start[j].data();
    const i64* cut = p.cut.empty() ? nullptr : p.cut[j].data();
    const int last_end = L - (P - 1 - j);  // leave one layer for every later stage
    const int a_end = std::min(last_end - 1, ws.start_max[j]);
    const int b_end = std::min(last_end, ws.start_max[j + 1]);  // the windows of a <= a_end end there
    for (int b = j + 1; b <= b_end; ++b) {
      i64 v = kInfinitePs;
      if (next[b] < kInfinitePs) {
        const i64 e = cut ? cut[b] : 0;
        if (!(p.cuts_in_max && e > bound)) v = add_sat(w * (pre[b] + e), next[b]);
      }
      gv[b] = v;
    }
    int head = 0, tail = 0;  // dq[head, tail)
    int pushed = j;          // all b ≤ pushed are in (or were evicted from) the deque
    for (int a = j; a <= a_end; ++a) {
      // hi(a): extend while the range [a, b+1) stays within the bound, the memory and last_end.
      int hi = pushed;
      while (hi + 1 <= last_end && pre[hi + 1] - pre[a] <= bound && ms[hi + 1] <= a) ++hi;
      for (int b = pushed + 1; b <= hi; ++b) {
        const i64 gb = gv[b];
        while (tail > head && gv[dq[tail - 1]] >= gb) --tail;
        dq[tail++] = b;
      }
      pushed = std::max(pushed, hi);
      while (tail > head && dq[head] <= a) ++head;
      if (tail > head) {
        const i64 best = gv[dq[head]];
        if (best < kInfinitePs) cur[a] = best - w * pre[a];
      }
    }
  }
  return ws.h[0];
}

// Well-formed (SplitProblem's contract): prefix sums non-decreasing and min_start[j][b] <= b. Then a window end
// found from a fresh start (reconstruct) never passes the DP's carried one, which solve_bound's trim relies on.
bool well_formed(const SplitProblem& p) {
  for (const auto& pre : p.time_prefix) {
    if (static_cast<int>(pre.size()) != p.layers + 1) return false;
    for (int i = 0; i < p.layers; ++i)
      if (pre[i + 1] < pre[i]) return false;
  }
  for (const auto& ms : p.min_start) {
    if (static_cast<int>(ms.size()) != p.layers + 1) return false;
    for (int b = 0; b <= p.layers; ++b)
      if (ms[b] > b) return false;
  }
  return true;
}

// Whether solve_bound(p, bound) is finite, by forward reachability instead of the DP values: reach[a] says layers
// [0, a) fill stages 0..j−1. The windows (a, hi_j(a)] are those of solve_bound (the same carried pointer), so the
// answer is the same whenever no sum saturates at kInfinitePs (no_saturation below). O(p·L), cheaper per stage
// and stopping at the first stage that no start reaches; used where the binary search needs only feasibility.
bool reachable(const SplitProblem& p, i64 bound, Workspace& ws) {
  const int L = p.layers, P = p.stages();
  ws.reach.assign(static_cast<std::size_t>(L + 1), 0);
  ws.reach_next.assign(static_cast<std::size_t>(L + 1), 0);
  ws.reach[0] = 1;
  int last = 0;  // the last start reached for stage j (later a are unreached: the loop stops there)
  for (int j = 0; j + 1 < P; ++j) {
    const i64* pre = prefix(p, j).data();
    const int* ms = p.min_start[j].data();
    const i64* cut = p.cut.empty() ? nullptr : p.cut[j].data();
    const char* cur = ws.reach.data();
    char* nxt = ws.reach_next.data();
    std::fill(nxt, nxt + L + 1, 0);
    const int last_end = L - (P - 1 - j);
    int next_last = -1;       // the largest end marked (the next stage's last reached start)
    int hi = j, covered = j;  // ends b <= covered are already marked
    for (int a = j; a <= std::min(last, last_end - 1); ++a) {
      while (hi + 1 <= last_end && pre[hi + 1] - pre[a] <= bound && ms[hi + 1] <= a) ++hi;
      if (!cur[a]) continue;
      for (int b = std::max(covered, a) + 1; b <= hi; ++b) {
        const i64 e = cut ? cut[b] : 0;
        if (!(p.cuts_in_max && e > bound)) nxt[b] = 1, next_last = b;
      }
      covered = std::max(covered, hi);
    }
    if (next_last < 0) return false;
    last = next_last;
    ws.reach.swap(ws.reach_next);
  }
  const i64* pre = prefix(p, P - 1).data();
  for (int a = std::max(p.min_start[P - 1][L], P - 1); a <= std::min(L - 1, last); ++a)
    if (ws.reach[a] && pre[L] - pre[a] <= bound) return true;
  return false;
}

// True when no DP value of solve_bound can reach kInfinitePs: the prefix sums are non-decreasing from 0 and the
// cut costs non-negative, so every g(b) is at most w·(p+1)·(max P_k[L] + max e), below kInfinitePs. Then
// reachable() == (solve_bound() < kInfinitePs).
bool no_saturation(const SplitProblem& p) {
  if (p.weight_sum < 0) return false;
  i64 max_pre = 0, max_cut = 0;
  for (const auto& pre : p.time_prefix) {
    if (pre.empty() || pre[0] < 0) return false;
    for (std::size_t i = 1; i < pre.size(); ++i)
      if (pre[i] < pre[i - 1]) return false;  // then every value lies in [0, pre.back()]
    max_pre = std::max(max_pre, pre.back());
  }
  for (const auto& row : p.cut)
    for (i64 e : row) {
      if (e < 0) return false;
      max_cut = std::max(max_cut, e);
    }
  const SplitObjective worst = static_cast<SplitObjective>(std::max<i64>(1, p.weight_sum)) * (p.stages() + 1) *
                               (static_cast<SplitObjective>(max_pre) + max_cut);
  return worst < kInfinitePs;
}

// Lexicographically smallest split attaining h[0][0] under `bound` (ws.h filled by solve_bound).
std::vector<int> reconstruct(const SplitProblem& p, i64 bound, const Workspace& ws) {
  const int L = p.layers, P = p.stages();
  const i64 w = p.weight_sum;
  std::vector<int> sizes;
  sizes.reserve(static_cast<std::size_t>(P));
  int a = 0;
  for (int j = 0; j + 1 < P; ++j) {
    const auto& pre = prefix(p, j);
    const i64 target = ws.row(j, L)[a];
    const i64* next_row = ws.row(j + 1, L);
    const int last_end = L - (P - 1 - j);
    int chosen = -1;
    for (int b = a + 1; b <= last_end; ++b) {
      if (pre[b] - pre[a] > bound) break;
      if (p.min_start[j][b] > a) break;
      const i64 next = next_row[b];
      if (next >= kInfinitePs) continue;
      const i64 e = cut_cost(p, j, b);
      if (p.cuts_in_max && e > bound) continue;
      if (add_sat(w * (pre[b] - pre[a] + e), next) == target) {
        chosen = b;
        break;
      }
    }
    sizes.push_back(chosen - a);
    a = chosen;
  }
  sizes.push_back(L - a);
  return sizes;
}

// The classes used by some stage, each once (next_candidate scans each class's ranges once).
void used_classes(const SplitProblem& p, Workspace& ws) {
  ws.classes.clear();
  for (int k : p.stage_class)
    if (std::find(ws.classes.begin(), ws.classes.end(), k) == ws.classes.end()) ws.classes.push_back(k);
}

// Smallest candidate value of the max term strictly greater than `bound` (kInfinitePs when none).
i64 next_candidate(const SplitProblem& p, i64 bound, const Workspace& ws) {
  const int L = p.layers;
  i64 best = kInfinitePs;
  for (int k : ws.classes) {
    const i64* pre = p.time_prefix[k].data();
    int b = 0;
    for (int a = 0; a < L; ++a) {
      if (b <= a) b = a + 1;
      while (b <= L && pre[b] - pre[a] <= bound) ++b;
      if (b > L) break;  // no range from a (or later) exceeds the bound
      best = std::min(best, pre[b] - pre[a]);
    }
  }
  if (p.cuts_in_max)
    for (const auto& row : p.cut)
      for (int b = 1; b < L; ++b)
        if (row[b] > bound) best = std::min(best, row[b]);
  return best;
}

bool better(const SplitResult& a, const SplitResult& b) {
  if (!b.feasible) return a.feasible;
  if (!a.feasible) return false;
  if (a.objective != b.objective) return a.objective < b.objective;
  return a.sizes < b.sizes;
}

}  // namespace

std::int64_t to_ps(double seconds) { return static_cast<std::int64_t>(std::llround(seconds * 1e12)); }
double from_ps(std::int64_t ps) { return static_cast<double>(ps) * 1e-12; }
double from_ps(SplitObjective ps) { return static_cast<double>(ps) * 1e-12; }

SplitResult evaluate_split(const SplitProblem& p, const std::vector<int>& sizes) {
  SplitResult r;
  const int P = p.stages();
  if (static_cast<int>(sizes.size()) != P) return r;
  int a = 0;
  i64 mx = 0, sum = 0;
  for (int j = 0; j < P; ++j) {
    if (sizes[j] < 1) return r;
    const int b = a + sizes[j];
    if (b > p.layers || p.min_start[j][b] > a) return r;
    const auto& pre = prefix(p, j);
    const i64 t = pre[b] - pre[a];
    mx = std::max(mx, t);
    sum += t;
    if (j + 1 < P) {
      const i64 e = cut_cost(p, j, b);
      sum += e;
      if (p.cuts_in_max) mx = std::max(mx, e);
    }
    a = b;
  }
  if (a != p.layers) return r;
  r.feasible = true;
  r.sizes = sizes;
  r.max_term = mx;
  r.sum_term = sum;
  r.objective = static_cast<SplitObjective>(p.weight_max) * mx + static_cast<SplitObjective>(p.weight_sum) * sum;
  return r;
}

SplitResult solve_split(const SplitProblem& p) {
  SplitResult none;
  const int P = p.stages();
  if (P < 1 || p.layers < P) return none;
  Workspace ws;
  used_classes(p, ws);
  ws.exact_reach = no_saturation(p);
  ws.trim = well_formed(p);
  // Feasibility of a bound (the binary search needs no DP values).
  auto feasible = [&](i64 bound) {
    return ws.exact_reach ? reachable(p, bound, ws) : solve_bound(p, bound, ws) < kInfinitePs;
  };
  auto run = [&](i64 bound) -> SplitResult {
    if (solve_bound(p, bound, ws) >= kInfinitePs) return none;
    return evaluate_split(p, reconstruct(p, bound, ws));
  };
  if (p.weight_max == 0) {  // no max term: one DP without a bound
    SplitResult r = run(kInfinitePs - 1);
    r.bounds_tried = 1;
    return r;
  }
  // B_min: the min-max bottleneck, by binary search on the (integer) bound.
  i64 hi = 0;
  for (int j = 0; j < P; ++j) hi = std::max(hi, prefix(p, j)[p.layers]);
  if (p.cuts_in_max)
    for (const auto& row : p.cut)
      for (int b = 1; b < p.layers; ++b) hi = std::max(hi, row[b]);
  int tried = 1;
  if (!feasible(hi)) return none;  // memory makes every split infeasible
  // lo: infeasible. Every layer sits on some stage, so max ≥ the cheapest class's time of any single layer.
  i64 lo = -1;
  for (int i = 0; i < p.layers; ++i) {
    i64 cheapest = kInfinitePs;
    for (const auto& pre : p.time_prefix) cheapest = std::min(cheapest, pre[i + 1] - pre[i]);
    lo = std::max(lo, cheapest - 1);
  }
  // Binary search that only tests candidate values (feasibility changes only there): invariant lo infeasible,
  // hi feasible, B_min in (lo, hi].
  while (hi - lo > 1) {
    const i64 mid = lo + (hi - lo) / 2;
    const i64 c = next_candidate(p, mid - 1, ws);  // smallest candidate >= mid
    ++tried;
    if (c >= hi) {
      // No candidate in [mid, hi): B_min is hi unless one in (lo, mid) is feasible.
      if (feasible(mid - 1)) hi = mid - 1; else lo = hi - 1;
    } else if (feasible(c)) {
      hi = c;
    } else {
      lo = c;
    }
  }
  SplitResult best = run(hi);
  ++tried;
  // Lower bound of every later bound's value: weight_max·B + F(∞).
  i64 f_inf = 0;
  if (p.weight_sum != 0) {
    f_inf = solve_bound(p, kInfinitePs - 1, ws);
    ++tried;
  }
  for (i64 bound = next_candidate(p, hi, ws); bound < kInfinitePs; bound = next_candidate(p, bound, ws)) {
    if (static_cast<SplitObjective>(p.weight_max) * bound + f_inf > best.objective) break;
    ++tried;
    const i64 f = solve_bound(p, bound, ws);
    if (f >= kInfinitePs || static_cast<SplitObjective>(p.weight_max) * bound + f > best.objective) continue;
    SplitResult r = evaluate_split(p, reconstruct(p, bound, ws));
    if (better(r, best)) best = r;
  }
  best.bounds_tried = tried;
  return best;
}

namespace {
// Appends a row as its size and the run-length code of its successive differences, (difference, count) pairs:
// prefix sums of repeated layers, cut rows and min_start rows are a few runs each.
template <class Row>
void put_row(std::vector<i64>& out, const Row& row) {
  out.push_back(static_cast<i64>(row.size()));
  i64 prev = 0, run_diff = 0, run_len = 0;
  for (auto x : row) {
    const i64 d = static_cast<i64>(x) - prev;
    prev = static_cast<i64>(x);
    if (run_len > 0 && d == run_diff) {
      ++run_len;
      continue;
    }
    if (run_len > 0) out.insert(out.end(), {run_diff, run_len});
    run_diff = d;
    run_len = 1;
  }
  if (run_len > 0) out.insert(out.end(), {run_diff, run_len});
}
// Every field of the problem, every vector with its size, so equal keys mean equal problems (a row's runs end
// where their counts reach its size).
std::vector<i64> memo_key(const SplitProblem& p) {
  std::vector<i64> k;
  k.reserve(256);
  k.insert(k.end(), {p.layers, p.weight_max, p.weight_sum, p.cuts_in_max ? 1 : 0,
                     static_cast<i64>(p.time_prefix.size()), static_cast<i64>(p.min_start.size()),
                     static_cast<i64>(p.cut.size())});
  put_row(k, p.stage_class);
  for (const auto& r : p.time_prefix) put_row(k, r);
  for (const auto& r : p.min_start) put_row(k, r);
  for (const auto& r : p.cut) put_row(k, r);
  k.shrink_to_fit();
  return k;
}
}  // namespace

std::size_t SplitMemo::Hash::operator()(const std::vector<std::int64_t>& key) const {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a over the values
  for (i64 v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 1099511628211ull;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

std::int64_t bound_objective(const SplitProblem& p, std::int64_t bound) {
  if (p.stages() < 1 || p.layers < p.stages()) return kInfinitePs;
  Workspace ws;
  ws.trim = well_formed(p);
  return solve_bound(p, bound, ws);
}

int bound_feasible(const SplitProblem& p, std::int64_t bound) {
  if (p.stages() < 1 || p.layers < p.stages()) return 0;
  Workspace ws;
  if (!no_saturation(p)) return -1;
  return reachable(p, bound, ws) ? 1 : 0;
}

SplitResult solve_split(const SplitProblem& p, SplitMemo& memo) {
  std::vector<i64> key = memo_key(p);
  {
    std::lock_guard<std::mutex> lock(memo.mu);
    if (auto it = memo.results.find(key); it != memo.results.end()) return it->second;
  }
  SplitResult r = solve_split(p);
  std::lock_guard<std::mutex> lock(memo.mu);
  if (memo.results.size() >= SplitMemo::kMaxResults) memo.results.clear();  // bounded memory
  memo.results.emplace(std::move(key), r);
  return r;
}

SplitResult brute_force_split(const SplitProblem& p) {
  SplitResult best;
  const int P = p.stages();
  if (P < 1 || p.layers < P) return best;
  std::vector<int> sizes(P, 1);
  // Enumerate compositions of L into P positive parts in lexicographic order.
  std::function<void(int, int)> rec = [&](int j, int left) {
    if (j == P - 1) {
      sizes[j] = left;
      SplitResult r = evaluate_split(p, sizes);
      if (better(r, best)) best = r;
      return;
    }
    for (int s = 1; s <= left - (P - 1 - j); ++s) {
      sizes[j] = s;
      rec(j + 1, left - s);
    }
  };
  rec(0, p.layers);
  return best;
}

void min_start_from_predicate(int layers, const std::function<bool(int, int)>& fits, std::vector<int>& ms) {
  // Two pointers: the smallest fitting start of b+1 is never below that of b (a sub-range of a fitting range fits).
  ms.assign(layers + 1, 0);
  int a = 0;
  for (int b = 1; b <= layers; ++b) {
    while (a < b && !fits(a, b)) ++a;
    ms[b] = a;  // a == b: not even layer b−1 alone fits
  }
}

std::vector<int> min_start_from_predicate(int layers, const std::function<bool(int, int)>& fits) {
  std::vector<int> ms;
  min_start_from_predicate(layers, fits, ms);
  return ms;
}

std::vector<int> min_start_linear(const std::vector<std::int64_t>& static_bytes,
                                  const std::vector<std::int64_t>& act_bytes, std::int64_t mult,
                                  std::int64_t capacity) {
  const int L = static_cast<int>(static_bytes.size());
  std::vector<i64> pre(L + 1, 0);
  for (int i = 0; i < L; ++i) pre[i + 1] = pre[i] + static_bytes[i] + mult * act_bytes[i];
  return min_start_from_predicate(L, [&](int a, int b) { return pre[b] - pre[a] <= capacity; });
}

}  // namespace strata::plan
