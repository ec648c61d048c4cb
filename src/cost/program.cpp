// cost/program: builds the pipeline program (per-stage op lists; see program.hpp for the orders and sources) and
// replays it on a dependency-only backend (validity check, critical path).
#include "strata/cost/program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace strata::cost {

std::string_view to_string(ProgramOpKind k) {
  switch (k) {
    case ProgramOpKind::zero3_gather: return "zero3-gather";
    case ProgramOpKind::recv_activation: return "recv-activation";
    case ProgramOpKind::forward: return "forward";
    case ProgramOpKind::send_activation: return "send-activation";
    case ProgramOpKind::recv_gradient: return "recv-gradient";
    case ProgramOpKind::backward: return "backward";
    case ProgramOpKind::send_gradient: return "send-gradient";
    case ProgramOpKind::grad_sync: return "grad-sync";
    case ProgramOpKind::optimizer: return "optimizer";
    case ProgramOpKind::param_gather: return "param-gather";
  }
  return "?";
}

ProgramOpKind parse_program_op_kind(std::string_view text, const core::JsonWhere& where) {
  for (int k = 0; k <= static_cast<int>(ProgramOpKind::param_gather); ++k)
    if (to_string(static_cast<ProgramOpKind>(k)) == text) return static_cast<ProgramOpKind>(k);
  core::fail(where, fmt::format("unknown program op '{}'", text));
}

nlohmann::ordered_json to_json(const ProgramOp& op) {
  nlohmann::ordered_json j;
  j["op"] = std::string(to_string(op.kind));
  if (op.micro >= 0) j["micro"] = op.micro;
  if (op.chunk >= 0) j["chunk"] = op.chunk;
  if (op.peer_stage >= 0) j["peer"] = op.peer_stage;
  j["iteration"] = op.iteration;
  if (op.weight_version >= 0) j["version"] = op.weight_version;
  if (op.window >= 0) j["window"] = op.window;
  if (op.opens_window) j["opens"] = true;
  if (op.closes_window) j["closes"] = true;
  return j;
}

ProgramOp program_op_from_json(const nlohmann::json& j, const core::JsonWhere& where) {
  core::expect_object(j, where);
  ProgramOp op;
  op.kind = parse_program_op_kind(core::get_string(j, "op", where), where.field("op"));
  op.micro = core::has_field(j, "micro") ? core::get_int(j, "micro", where) : -1;
  op.chunk = core::has_field(j, "chunk") ? static_cast<int>(core::get_int(j, "chunk", where)) : -1;
  op.peer_stage = core::has_field(j, "peer") ? static_cast<int>(core::get_int(j, "peer", where)) : -1;
  op.iteration = core::get_int(j, "iteration", where);
  op.weight_version = core::has_field(j, "version") ? core::get_int(j, "version", where) : -1;
  op.window = core::has_field(j, "window") ? core::get_int(j, "window", where) : -1;
  op.opens_window = core::opt_bool(j, "opens", where).value_or(false);
  op.closes_window = core::opt_bool(j, "closes", where).value_or(false);
  return op;
}

nlohmann::ordered_json to_json(const PipelineProgram& prog) {
  const auto& sh = prog.shape;
  nlohmann::ordered_json j;
  j["shape"] = {{"schedule", std::string(to_string(sh.schedule))}, {"p", sh.p}, {"v", sh.v}, {"m", sh.m},
                {"iterations", sh.iterations}, {"first_iteration", sh.first_iteration}, {"zero", sh.zero_stage}};
  auto stages = nlohmann::ordered_json::array();
  for (const auto& st : prog.stages) {
    auto ops = nlohmann::ordered_json::array();
    for (const auto& op : st.ops) ops.push_back(to_json(op));
    stages.push_back({{"stage", st.stage}, {"max_weight_versions", st.max_weight_versions},
                      {"max_in_flight", st.max_in_flight}, {"ops", std::move(ops)}});
  }
  j["stages"] = std::move(stages);
  return j;
}

std::int64_t two_bw_version(std::int64_t k, std::int64_t m) { return std::max<std::int64_t>(k / m - 1, 0); }

ProgramShape program_shape(const Strategy& s, int iterations, std::int64_t first_iteration) {
  require_uniform(s, "building the pipeline program of");
  ProgramShape sh;
  sh.schedule = s.schedule;
  sh.p = s.pp;
  sh.v = s.virtual_stages;
  sh.m = s.num_micro_batches();
  sh.iterations = iterations;
  sh.first_iteration = first_iteration;
  sh.zero_stage = s.zero_stage;
  return sh;
}

namespace {

using K = ProgramOpKind;


// The compute order of one stage: forwards, backwards (micro-batches counted from 0) and optimizer steps.
struct Step {
  K kind;
  std::int64_t micro;  // local micro-batch index (0 .. m·iterations−1); optimizer: the iteration or micro-batch
  int chunk;
};

void gpipe_order(std::vector<Step>& out, std::int64_t base, std::int64_t m) {
  for (std::int64_t i = 0; i < m; ++i) out.push_back({K::forward, base + i, 0});
  // Backwards in reverse: the last micro-batch's forward ends last on the last stage, so its backward starts first
  // (GPipe Fig. 2c); every stage follows the same order, so no stage waits on one that is behind.
  for (std::int64_t i = m - 1; i >= 0; --i) out.push_back({K::backward, base + i, 0});
}

// 1F1B over n micro-batches from `base`, `warmup` forwards first; `after_bwd(i)` may append optimizer steps.
template <class AfterBwd>
void one_f_one_b_order(std::vector<Step>& out, std::int64_t base, std::int64_t n, std::int64_t warmup,
                       AfterBwd after_bwd) {
  warmup = std::min(warmup, n);
  for (std::int64_t i = 0; i < warmup; ++i) out.push_back({K::forward, base + i, 0});
  for (std::int64_t i = 0; i < n - warmup; ++i) {
    out.push_back({K::forward, base + warmup + i, 0});
    out.push_back({K::backward, base + i, 0});
    after_bwd(base + i);
  }
  for (std::int64_t i = n - warmup; i < n; ++i) {
    out.push_back({K::backward, base + i, 0});
    after_bwd(base + i);
  }
}

// Megatron's interleaved 1F1B for one batch (PTD-P §2.2; Megatron-LM schedules.py): virtual micro-batch k runs
// chunk (k mod p·v) div p (mirrored for backwards) of micro-batch (k div p·v)·p + k mod p; all warm-up when m == p.
void interleaved_order(std::vector<Step>& out, std::int64_t base, int p, int rank, std::int64_t m, int v) {
  const std::int64_t total = m * v, pv = static_cast<std::int64_t>(p) * v;
  const std::int64_t warmup = (m == p) ? total : std::min<std::int64_t>(total, 2LL * (p - rank - 1) + (v - 1LL) * p);
  auto micro = [&](std::int64_t k) { return base + (k / pv) * p + k % p; };
  auto fchunk = [&](std::int64_t k) { return static_cast<int>((k % pv) / p); };
  auto bchunk = [&](std::int64_t k) { return v - 1 - fchunk(k); };
  for (std::int64_t k = 0; k < warmup; ++k) out.push_back({K::forward, micro(k), fchunk(k)});
  for (std::int64_t k = 0; k < total - warmup; ++k) {
    out.push_back({K::forward, micro(warmup + k), fchunk(warmup + k)});
    out.push_back({K::backward, micro(k), bchunk(k)});
  }
  for (std::int64_t k = total - warmup; k < total; ++k) out.push_back({K::backward, micro(k), bchunk(k)});
}

std::vector<Step> compute_order(const ProgramShape& sh, int rank) {
  std::vector<Step> out;
  const std::int64_t warmup = sh.p - rank - 1, m = sh.m;
  auto none = [](std::int64_t) {};
  switch (sh.schedule) {
    case Schedule::gpipe:
    case Schedule::one_f_one_b:
    case Schedule::interleaved:
      for (int it = 0; it < sh.iterations; ++it) {
        const std::int64_t base = it * m;
        if (sh.schedule == Schedule::gpipe) gpipe_order(out, base, m);
        else if (sh.schedule == Schedule::interleaved && sh.v > 1) interleaved_order(out, base, sh.p, rank, m, sh.v);
        else one_f_one_b_order(out, base, m, warmup, none);
        out.push_back({K::optimizer, it, -1});
      }
      break;
    case Schedule::pipedream:
      one_f_one_b_order(out, 0, m * sh.iterations, warmup, [&](std::int64_t i) { out.push_back({K::optimizer, i, -1}); });
      break;
    case Schedule::two_bw:
      one_f_one_b_order(out, 0, m * sh.iterations, warmup, [&](std::int64_t i) {
        if ((i + 1) % m == 0) out.push_back({K::optimizer, i / m, -1});
      });
      break;
  }
  return out;
}

void validate_shape(const ProgramShape& sh) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("build_program: " + what); };
  if (sh.p < 1 || sh.v < 1 || sh.m < 1 || sh.iterations < 1 || sh.first_iteration < 0)
    bad("p, v, m, iterations must be >= 1 and first_iteration >= 0");
  if (sh.v > 1 && sh.schedule != Schedule::interleaved) bad("v > 1 needs the interleaved schedule");
  if (sh.schedule == Schedule::interleaved && sh.v > 1 && sh.m % sh.p != 0) bad("interleaved needs m % p == 0");
  if (sh.zero_stage < 0 || sh.zero_stage > 3) bad("zero_stage must be 0..3");
}

// Update window of a backward of local micro-batch k: the micro-batch itself (pipedream) or its iteration.
std::int64_t window_of(const ProgramShape& sh, std::int64_t k) {
  return sh.schedule == Schedule::pipedream ? k : k / sh.m;
}

// Expands the compute order into the stage's program: p2p, gathers, sync releases, windows and weight versions.
StageProgram expand(const ProgramShape& sh, int rank, const std::vector<Step>& order) {
  StageProgram sp;
  sp.stage = rank;
  const int last_chunk = sh.p * sh.v - 1;
  const std::int64_t k0 = sh.first_iteration * sh.m;  // global index of local micro-batch 0
  std::map<std::pair<std::int64_t, int>, std::pair<std::size_t, std::size_t>> span;  // (window, chunk) → first, last
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i].kind == K::backward) {
      auto key = std::make_pair(window_of(sh, order[i].micro), order[i].chunk);
      auto [it, fresh] = span.try_emplace(key, i, i);
      if (!fresh) it->second.second = i;
    }
  // Weight versions: the number of updates done (per micro-batch under pipedream, per iteration otherwise).
  std::int64_t latest = sh.schedule == Schedule::pipedream ? k0 : sh.first_iteration;
  std::map<std::pair<std::int64_t, int>, std::int64_t> version_of;  // (micro, chunk) → version its forward used
  auto push = [&](K kind, std::int64_t micro, int chunk, int peer) {
    ProgramOp op;
    op.kind = kind;
    op.micro = micro;
    op.chunk = chunk;
    op.peer_stage = peer;
    op.iteration = micro >= 0 ? micro / sh.m : 0;
    sp.ops.push_back(op);
    return &sp.ops.back();  // valid until the next push
  };
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Step& st = order[i];
    if (st.kind == K::optimizer) {
      ProgramOp* op = push(K::optimizer, -1, -1, -1);
      op->iteration = sh.schedule == Schedule::pipedream ? (k0 + st.micro) / sh.m : sh.first_iteration + st.micro;
      op->window = sh.schedule == Schedule::pipedream ? k0 + st.micro : sh.first_iteration + st.micro;
      op->weight_version = ++latest;
      if (sh.zero_stage == 1 || sh.zero_stage == 2) {
        const std::int64_t iteration = op->iteration, window = op->window;  // push() may move the ops
        ProgramOp* g = push(K::param_gather, -1, -1, -1);
        g->iteration = iteration;
        g->window = window;
      }
      continue;
    }
    const std::int64_t k = k0 + st.micro;
    const int g = st.chunk * sh.p + rank;
    if (sh.zero_stage == 3) push(K::zero3_gather, k, st.chunk, -1);
    if (st.kind == K::forward) {
      const int prev = (g - 1) % sh.p, next = (g + 1) % sh.p;
      if (g > 0 && prev != rank) push(K::recv_activation, k, st.chunk, prev);
      ProgramOp* f = push(K::forward, k, st.chunk, -1);
      f->weight_version = sh.schedule == Schedule::two_bw ? two_bw_version(k, sh.m) : latest;
      version_of[{k, st.chunk}] = f->weight_version;
      if (g < last_chunk && next != rank) push(K::send_activation, k, st.chunk, next);
      continue;
    }
    const int prev = (g + sh.p - 1) % sh.p, next = (g + 1) % sh.p;
    if (g < last_chunk && next != rank) push(K::recv_gradient, k, st.chunk, next);
    ProgramOp* b = push(K::backward, k, st.chunk, -1);
    const auto& [first, last] = span.at({window_of(sh, st.micro), st.chunk});
    b->window = window_of(sh, k);
    b->opens_window = first == i;
    b->closes_window = last == i;
    b->weight_version = version_of.at({k, st.chunk});
    const bool closes = b->closes_window;
    const std::int64_t window = b->window;
    if (g > 0 && prev != rank) push(K::send_gradient, k, st.chunk, prev);
    if (closes) {
      ProgramOp* s = push(K::grad_sync, k, st.chunk, -1);
      s->window = window;
    }
  }
  return sp;
}

// Weight versions alive at once and chunk-micro-batches in flight, walking the stage's ops: creating version
// t+1 needs a second buffer while version t still has a backward to run; a superseded version is freed after its
// last backward.
void stage_maxima(StageProgram& sp) {
  std::map<std::int64_t, std::size_t> last_use;  // version → index of its last backward
  for (std::size_t i = 0; i < sp.ops.size(); ++i)
    if (sp.ops[i].kind == K::backward) last_use[sp.ops[i].weight_version] = i;
  int alive = 1, max_alive = 1;
  std::int64_t in_flight = 0;
  std::map<std::size_t, int> frees_at;  // op index → versions freed at its end
  for (std::size_t i = 0; i < sp.ops.size(); ++i) {
    const ProgramOp& op = sp.ops[i];
    if (op.kind == K::optimizer) {
      auto it = last_use.find(op.weight_version - 1);
      if (it != last_use.end() && it->second > i) {
        ++alive;
        ++frees_at[it->second];
      }
    }
    if (op.kind == K::forward) ++in_flight;
    max_alive = std::max(max_alive, alive);
    sp.max_in_flight = std::max(sp.max_in_flight, in_flight);
    if (op.kind == K::backward) --in_flight;
    if (auto f = frees_at.find(i); f != frees_at.end()) alive -= f->second;
  }
  sp.max_weight_versions = max_alive;
}

}  // namespace

PipelineProgram build_program(const ProgramShape& shape) {
  validate_shape(shape);
  PipelineProgram prog;
  prog.shape = shape;
  for (int r = 0; r < shape.p; ++r) {
    prog.stages.push_back(expand(shape, r, compute_order(shape, r)));
    stage_maxima(prog.stages.back());
  }
  return prog;
}

ProgramDurations uniform_durations(const ProgramShape& shape, double fwd_s, double bwd_s) {
  ProgramDurations d;
  d.fwd_s.assign(shape.p, std::vector<double>(shape.v, fwd_s / shape.v));
  d.bwd_s.assign(shape.p, std::vector<double>(shape.v, bwd_s / shape.v));
  d.p2p_s.assign(shape.p, std::vector<double>(shape.v, 0.0));
  d.optimizer_s.assign(shape.p, 0.0);
  return d;
}

}  // namespace strata::cost
