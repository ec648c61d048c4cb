// plan/sbp_search: AutoDDL's strategy search (seed_004 §4.5–4.6) over per-layer SBP matmul layouts — cost tables
// per layer and per boundary, then exhaustive enumeration, coordinate descent with random restarts, or
// Metropolis–Hastings. Deterministic: one seeded mt19937_64, strict improvements only. See sbp_search.hpp.
#include "strata/plan/sbp_search.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <random>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/core/units.hpp"

namespace strata::plan {
namespace {

using core::kInf;

// Everything an assignment's cost is a sum of: per layer (weight sync, memory) and per distinct boundary
// (boxing, × its multiplicity × 2 for the backward × micro-batches).
struct Tables {
  int layers = 0, layouts = 0;
  std::vector<cost::MatmulLayout> cand;
  std::vector<double> w_time, w_bytes, mem;  // [layer·C + c], × the layer's repeats
  struct Boundary {
    int a = 0, b = -1;  // b = −1: the network output
    double k = 0;       // multiplicity × 2 (backward) × micro-batches
    // [ca·C + cb] (or [ca] for the output); NaN until first needed (filled lazily: the heuristics visit a small
    // part of a large mesh's C² pairs).
    mutable std::vector<double> time, bytes;
  };
  std::vector<Boundary> bounds;
  double fixed_mem = 0, limit = kInf;
  const SbpProblem* problem = nullptr;
  const cost::SbpComm* comm = nullptr;
};

// Prices one boundary entry (AutoDDL §4.3 boxing, forward + mirrored backward, every micro-batch).
void fill(const Tables& t, const Tables::Boundary& b, int ca, int cb, std::size_t i) {
  const SbpProblem& p = *t.problem;
  const auto& A = p.layers[static_cast<std::size_t>(b.a)];
  const auto& la = t.cand[static_cast<std::size_t>(ca)];
  const auto path = b.b < 0 ? cost::output_boxing(la, p.rows, A.out, p.act_bytes, *t.comm)
                            : cost::boundary_boxing(la, t.cand[static_cast<std::size_t>(cb)], p.rows, A.out,
                                                    p.layers[static_cast<std::size_t>(b.b)].in, p.act_bytes, A.heads,
                                                    *t.comm);
  b.time[i] = path.feasible ? b.k * path.time_s : kInf;
  b.bytes[i] = path.feasible ? b.k * path.moved_bytes : kInf;
}

double layer_memory(const SbpProblem& p, const SbpLayer& l, const cost::MatmulLayout& x) {
  // Weights + gradients + optimizer states of the local W block (k/p2 × n/p1, AutoDDL §4.5.2), and one
  // micro-batch's stored activations: the local input (rows/p0 × k/p2) and the split output (rows·n/p).
  const double states = l.in * l.out / (x.p(1) * x.p(2)) * p.state_bytes;
  const double acts = (p.rows * l.in / (x.p(0) * x.p(2)) + p.rows * l.out / x.devices()) * p.act_bytes;
  return states + acts;
}

Tables build_tables(const SbpProblem& p, const cost::SbpComm& comm) {
  Tables t;
  t.layers = static_cast<int>(p.layers.size());
  t.cand = sbp_candidate_layouts(p, comm);
  const int C = t.layouts = static_cast<int>(t.cand.size());
  std::vector<double> repeats(p.layers.size(), 0.0);
  for (int l : p.chain) repeats[static_cast<std::size_t>(l)] += 1;
  t.w_time.assign(static_cast<std::size_t>(t.layers * C), 0);
  t.w_bytes = t.mem = t.w_time;
  for (int l = 0; l < t.layers; ++l)
    for (int c = 0; c < C; ++c) {
      const auto& L = p.layers[static_cast<std::size_t>(l)];
      const auto w = cost::weight_sync(t.cand[static_cast<std::size_t>(c)], L.in, L.out, p.grad_bytes, comm);
      const std::size_t i = static_cast<std::size_t>(l * C + c);
      t.w_time[i] = repeats[static_cast<std::size_t>(l)] * w.time_s;
      t.w_bytes[i] = repeats[static_cast<std::size_t>(l)] * w.moved_bytes;
      t.mem[i] = repeats[static_cast<std::size_t>(l)] * layer_memory(p, L, t.cand[static_cast<std::size_t>(c)]);
    }
  // Distinct boundaries with their multiplicities, in first-occurrence order.
  std::map<std::pair<int, int>, double> mult;
  std::vector<std::pair<int, int>> order;
  for (std::size_t i = 0; i < p.chain.size(); ++i) {
    const std::pair<int, int> key{p.chain[i], i + 1 < p.chain.size() ? p.chain[i + 1] : -1};
    if (mult[key]++ == 0) order.push_back(key);
  }
  const double per_iter = 2.0 * p.micro_batches;  // forward + mirrored backward, every micro-batch
  for (const auto& key : order) {
    Tables::Boundary b;
    b.a = key.first;
    b.b = key.second;
    b.k = mult[key] * per_iter;
    const std::size_t n = static_cast<std::size_t>(C) * static_cast<std::size_t>(key.second < 0 ? 1 : C);
    b.time.assign(n, std::numeric_limits<double>::quiet_NaN());
    b.bytes = b.time;
    t.bounds.push_back(std::move(b));
  }
  t.problem = &p;
  t.comm = &comm;
  t.fixed_mem = p.fixed_memory_bytes;
  t.limit = p.memory_limit_bytes;
  return t;
}

struct Score {
  double primary = kInf, secondary = kInf;
  bool operator<(const Score& o) const {
    return primary < o.primary || (primary == o.primary && secondary < o.secondary);
  }
};

SbpCost cost_of(const Tables& t, const std::vector<int>& x) {
  SbpCost c;
  double mem = t.fixed_mem;
  for (int l = 0; l < t.layers; ++l) {
    const std::size_t i = static_cast<std::size_t>(l * t.layouts + x[static_cast<std::size_t>(l)]);
    c.weight_time_s += t.w_time[i];
    c.weight_bytes += t.w_bytes[i];
    mem += t.mem[i];
  }
  for (const auto& b : t.bounds) {
    const int ca = x[static_cast<std::size_t>(b.a)], cb = b.b < 0 ? 0 : x[static_cast<std::size_t>(b.b)];
    const std::size_t i = static_cast<std::size_t>(b.b < 0 ? ca : ca * t.layouts + cb);
    if (std::isnan(b.time[i])) fill(t, b, ca, cb, i);
    c.activation_time_s += b.time[i];
    c.activation_bytes += b.bytes[i];
  }
  c.memory_bytes = mem;
  c.fits = mem <= t.limit && std::isfinite(c.activation_time_s);
  return c;
}

Score score_of(const Tables& t, const std::vector<int>& x, SbpObjective o) {
  const SbpCost c = cost_of(t, x);
  if (!c.fits) return {};
  return o == SbpObjective::time ? Score{c.comm_time_s(), c.comm_bytes()} : Score{c.comm_bytes(), c.comm_time_s()};
}

struct Best {
  Score score;
  std::vector<int> x;
  std::int64_t evaluated = 0;
  void offer(const Score& s, const std::vector<int>& y) {
    if (s < score) score = s, x = y;
  }
};

void run_exhaustive(const Tables& t, SbpObjective o, Best& best) {
  std::vector<int> x(static_cast<std::size_t>(t.layers), 0);
  while (true) {
    best.offer(score_of(t, x, o), x);
    ++best.evaluated;
    int l = t.layers - 1;  // odometer, last layer fastest
    while (l >= 0 && ++x[static_cast<std::size_t>(l)] == t.layouts) x[static_cast<std::size_t>(l--)] = 0;
    if (l < 0) break;
  }
}

std::vector<int> random_start(const Tables& t, std::mt19937_64& rng) {
  std::vector<int> x(static_cast<std::size_t>(t.layers));
  for (auto& v : x) v = static_cast<int>(rng() % static_cast<std::uint64_t>(t.layouts));
  return x;
}

// AutoDDL §4.6: per layer in turn, the layout minimising the total with the others fixed, until a fixed point;
// then restart from a new random strategy.
void run_coordinate_descent(const Tables& t, const SbpSearchOptions& o, Best& best) {
  std::mt19937_64 rng(o.seed);
  for (int r = 0; r < std::max(1, o.restarts); ++r) {
    std::vector<int> x = random_start(t, rng);
    Score cur = score_of(t, x, o.objective);
    ++best.evaluated;
    for (int sweep = 0; sweep < 1000; ++sweep) {
      bool changed = false;
      for (int l = 0; l < t.layers; ++l) {
        int& v = x[static_cast<std::size_t>(l)];
        const int keep = v;
        int arg = keep;
        for (int c = 0; c < t.layouts; ++c) {
          if (c == keep) continue;
          v = c;
          const Score s = score_of(t, x, o.objective);
          ++best.evaluated;
          if (s < cur) cur = s, arg = c;
        }
        v = arg;
        changed = changed || arg != keep;
      }
      if (!changed) break;
    }
    best.offer(cur, x);
  }
}

// AutoDDL §4.6: P(S) ∝ exp(−β·Cost(S)); propose one random layer's layout; accept with min(1, P(new)/P(old)).
// β = 1/(T·best cost so far), so T is a relative temperature.
void run_metropolis(const Tables& t, const SbpSearchOptions& o, Best& best) {
  std::mt19937_64 rng(o.seed);
  std::vector<int> x = random_start(t, rng);
  Score cur = score_of(t, x, o.objective);
  ++best.evaluated;
  best.offer(cur, x);
  for (int step = 0; step < o.mh_steps; ++step) {
    const std::size_t l = static_cast<std::size_t>(rng() % static_cast<std::uint64_t>(t.layers));
    const int c = static_cast<int>(rng() % static_cast<std::uint64_t>(t.layouts));
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    if (c == x[l]) continue;
    const int keep = x[l];
    x[l] = c;
    const Score s = score_of(t, x, o.objective);
    ++best.evaluated;
    bool accept = !(cur.primary < s.primary);  // improvements (and moves out of infeasibility) always
    if (!accept && std::isfinite(s.primary)) {
      const double scale = std::max(1e-300, o.mh_temperature * best.score.primary);
      accept = u < std::exp(-(s.primary - cur.primary) / scale);
    }
    if (accept) {
      cur = s;
      best.offer(s, x);
    } else {
      x[l] = keep;
    }
  }
}

}  // namespace

std::string_view to_string(SbpAlgorithm a) {
  switch (a) {
    case SbpAlgorithm::automatic: return "auto";
    case SbpAlgorithm::exhaustive: return "exhaustive";
    case SbpAlgorithm::coordinate_descent: return "cd";
    case SbpAlgorithm::metropolis: return "mh";
  }
  return "auto";
}

SbpAlgorithm parse_sbp_algorithm(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "auto") return SbpAlgorithm::automatic;
  if (t == "exhaustive") return SbpAlgorithm::exhaustive;
  if (t == "cd" || t == "coordinate-descent") return SbpAlgorithm::coordinate_descent;
  if (t == "mh" || t == "metropolis") return SbpAlgorithm::metropolis;
  throw core::InputError(fmt::format("{}: unknown search algorithm '{}' (valid: auto, exhaustive, cd, mh)", where,
                                     text));
}

std::string_view to_string(SbpObjective o) { return o == SbpObjective::time ? "time" : "bytes"; }

SbpObjective parse_sbp_objective(std::string_view text, const std::string& where) {
  const auto t = core::to_lower(text);
  if (t == "time") return SbpObjective::time;
  if (t == "bytes") return SbpObjective::bytes;
  throw core::InputError(fmt::format("{}: unknown objective '{}' (valid: time, bytes)", where, text));
}

std::vector<cost::MatmulLayout> sbp_candidate_layouts(const SbpProblem& p, const cost::SbpComm& comm) {
  std::vector<cost::MatmulLayout> out;
  for (const auto& l : cost::enumerate_layouts(comm.nodes, comm.gpus_per_node))
    if (p.max_p0 <= 0 || l.p(0) <= p.max_p0) out.push_back(l);
  return out;
}

SbpCost evaluate_sbp(const SbpProblem& p, const cost::SbpComm& comm, const std::vector<cost::MatmulLayout>& choice) {
  if (choice.size() != p.layers.size())
    throw std::invalid_argument("evaluate_sbp: one layout per problem layer expected");
  // The same sums as the search tables, walked along the chain.
  SbpCost c;
  double mem = p.fixed_memory_bytes;
  std::vector<double> repeats(p.layers.size(), 0.0);
  for (int l : p.chain) repeats[static_cast<std::size_t>(l)] += 1;
  for (std::size_t l = 0; l < p.layers.size(); ++l) {
    const auto w = cost::weight_sync(choice[l], p.layers[l].in, p.layers[l].out, p.grad_bytes, comm);
    c.weight_time_s += repeats[l] * w.time_s;
    c.weight_bytes += repeats[l] * w.moved_bytes;
    mem += repeats[l] * layer_memory(p, p.layers[l], choice[l]);
  }
  bool feasible = true;
  for (std::size_t i = 0; i < p.chain.size(); ++i) {
    const auto a = static_cast<std::size_t>(p.chain[i]);
    const auto& A = p.layers[a];
    const auto b = static_cast<std::size_t>(i + 1 < p.chain.size() ? p.chain[i + 1] : p.chain[i]);
    const auto path = i + 1 < p.chain.size()
                          ? cost::boundary_boxing(choice[a], choice[b], p.rows, A.out, p.layers[b].in, p.act_bytes,
                                                  A.heads, comm)
                          : cost::output_boxing(choice[a], p.rows, A.out, p.act_bytes, comm);
    feasible = feasible && path.feasible;
    c.activation_time_s += 2.0 * p.micro_batches * path.time_s;
    c.activation_bytes += 2.0 * p.micro_batches * path.moved_bytes;
  }
  c.memory_bytes = mem;
  c.fits = feasible && mem <= p.memory_limit_bytes;
  return c;
}

SbpSearchResult search_sbp(const SbpProblem& p, const cost::SbpComm& comm, const SbpSearchOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (p.layers.empty() || p.chain.empty()) throw core::InputError("sbp: the problem has no matmul layers");
  const auto layouts = sbp_candidate_layouts(p, comm).size();
  if (layouts > 1200)
    throw core::InputError(fmt::format(
        "sbp: --cluster: {} nodes x {} GPUs give {} layouts per layer (limit 1200: the boundary tables grow with its "
        "square); cap the weight replication with --max-p0 or use a node count with fewer divisors",
        comm.nodes, comm.gpus_per_node, layouts));
  const Tables t = build_tables(p, comm);
  SbpSearchResult r;
  r.space_size = std::pow(static_cast<double>(t.layouts), t.layers);
  r.algorithm = o.algorithm;
  if (r.algorithm == SbpAlgorithm::automatic)
    r.algorithm = r.space_size <= o.max_exhaustive ? SbpAlgorithm::exhaustive : SbpAlgorithm::coordinate_descent;
  if (r.algorithm == SbpAlgorithm::exhaustive && r.space_size > 1e9)
    throw core::InputError(fmt::format(
        "sbp: --search exhaustive: {} layouts ^ {} layers = {:.3g} strategies (limit 1e9); use --search cd or mh",
        t.layouts, t.layers, r.space_size));
  Best best;
  switch (r.algorithm) {
    case SbpAlgorithm::exhaustive: run_exhaustive(t, o.objective, best); break;
    case SbpAlgorithm::metropolis: run_metropolis(t, o, best); break;
    default: run_coordinate_descent(t, o, best); break;
  }
  r.evaluated = best.evaluated;
  r.found = std::isfinite(best.score.primary);
  if (r.found) {
    for (int v : best.x) r.choice.push_back(t.cand[static_cast<std::size_t>(v)]);
    r.cost = cost_of(t, best.x);
  }
  r.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace strata::plan
