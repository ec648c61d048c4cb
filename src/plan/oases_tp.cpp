// plan/oases_tp: Oases' per-block tensor-parallel degree chain (seed_002 §4, notes_002 §4.2–4.6) solved by a DP
// over (layer, degree, memory bin) instead of the paper's ILP (a chain: notes_002 §4.6). See oases_tp.hpp.
#include "strata/plan/oases_tp.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <span>

#include "strata/core/error.hpp"
#include "strata/cost/comm.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/stage.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/core/units.hpp"

namespace strata::plan {
namespace {

using core::kInf;

// Everything the DP needs about one degree.
struct Degree {
  int tp = 0;
  cost::Strategy strategy;             // dp = N/tp, pp = 1, the per-group micro-batch
  cost::StageContext ctx;              // all devices, identity placement (tp groups = consecutive devices)
  std::vector<cost::LayerStageCost> layer;  // per layer of the chain
};

bool is_power_of_two(int x) { return x > 0 && (x & (x - 1)) == 0; }

std::vector<int> candidate_degrees(const model::Model& m, const hw::Cluster& c, const OasesTpOptions& opt,
                                   std::string& note) {
  const int n = c.num_devices();
  std::vector<int> out;
  std::vector<int> want = opt.degrees;
  if (want.empty())
    for (int t = 1; t <= n; t *= 2) want.push_back(t);
  for (int t : want) {
    if (!is_power_of_two(t) || n % t != 0) {
      note += fmt::format("tp={} dropped (not a power of two dividing {} devices); ", t, n);
      continue;
    }
    const std::int64_t groups = static_cast<std::int64_t>(n / t) * opt.micro_batches;
    if (opt.global_batch % groups != 0) {
      note += fmt::format("tp={} dropped (gbs {} not divisible by dp·micro-batches = {}); ", t, opt.global_batch, groups);
      continue;
    }
    if (!model::tensor_parallel_problem(m, t).empty()) {
      note += fmt::format("tp={} dropped ({}); ", t, model::tensor_parallel_problem(m, t));
      continue;
    }
    out.push_back(t);
  }
  return out;
}

Degree make_degree(const model::Model& m, const hw::Cluster& c, const OasesTpOptions& opt, int t,
                   std::span<const int> devices) {
  Degree d;
  d.tp = t;
  cost::Strategy& s = d.strategy;
  s.tp = t;
  s.dp = c.num_devices() / t;
  s.pp = 1;
  s.global_batch = opt.global_batch;
  s.micro_batch = opt.global_batch / (static_cast<std::int64_t>(s.dp) * opt.micro_batches);
  s.dtype = opt.dtype;
  s.recompute = opt.recompute;
  // Oases needs two sub-batches (B·t/N > 1, notes_002 §2) and a collective to hide.
  s.tp_overlap = opt.overlap && t > 1 && s.micro_batch % 2 == 0;
  d.ctx = cost::make_stage_context(m, c, s, devices, opt.cost);
  d.ctx.strategy = &d.strategy;
  for (const auto& l : m.layers) d.layer.push_back(cost::layer_stage_cost(m, l, d.ctx, s.recompute));
  return d;
}

// Resharding between layer i−1 at degree a and layer i at degree b (notes_002 §3.7, §4.3): an all-gather of the
// activation (or, tp shrinking, of its gradient in backward) along the batch dimension over hi/lo ranks, of the
// per-group batch at the larger degree, plus the overlap it breaks: min(sub-batch compute of one block, one
// sub-batch collective) — the two-sub-batch chain restarts (overlap.hpp: a cut chain costs min(c, d)).
double reshard_time(const hw::Cluster& c, const Degree& a, const Degree& b, int layer, std::span<const int> devices,
                    const OasesTpOptions& opt) {
  if (a.tp == b.tp) return 0;
  const Degree& hi = a.tp > b.tp ? a : b;
  const Degree& lo = a.tp > b.tp ? b : a;
  const int g = hi.tp / lo.tp;
  std::vector<int> group;
  for (int j = 0; j < g; ++j) group.push_back(devices[j * lo.tp]);  // one rank of each lo group inside a hi group
  cost::CommOptions co;
  co.constants = hi.ctx.constants;
  // Every hi group gathers at once: the group's NIC is shared by the gathers of the other groups on it.
  co.concurrent_groups_per_nic = std::max(1, hw::group_links(c, devices).max_devices_per_nic / g);
  const double bytes = hi.layer[layer - 1].output_bytes;  // activation of the per-group batch at the larger degree
  const double gather = cost::allgather_time(c, group, bytes, co);
  double lost = 0;
  if (hi.strategy.tp_overlap || lo.strategy.tp_overlap) {
    const cost::LayerStageCost& next = b.layer[layer];
    const double c_half = next.fwd_compute_s / 2.0 / 2.0;  // one sub-batch, one of the layer's two blocks
    const double msg = b.layer[layer].output_bytes / 2.0;
    const double d_half = b.tp > 1 ? b.ctx.tp_allreduce_latency_s + b.ctx.tp_allreduce_s_per_byte * msg : 0.0;
    lost = std::min(c_half, d_half);
  }
  return static_cast<double>(opt.micro_batches) * (gather + lost);
}

double layer_memory(const cost::LayerStageCost& l) { return l.static_bytes + l.activation_bytes; }

}  // namespace

std::string tp_runs(const std::vector<int>& tp) {
  std::string out;
  for (std::size_t i = 0; i < tp.size();) {
    std::size_t j = i;
    while (j < tp.size() && tp[j] == tp[i]) ++j;
    if (!out.empty()) out += " + ";
    out += fmt::format("[{}]*{}", tp[i], j - i);
    i = j;
  }
  return out;
}

ChainResult solve_tp_chain(const std::vector<std::vector<double>>& node, const std::vector<std::vector<int>>& mem,
                           const std::vector<std::vector<std::vector<double>>>& edge, int bins) {
  // best[(i·K + j)·(B+1) + b]: least time of layers 0..i with layer i at degree j using b memory bins.
  const int L = static_cast<int>(node.size()), K = L ? static_cast<int>(node[0].size()) : 0, B = bins;
  ChainResult out;
  if (L == 0 || K == 0 || B < 0) return out;
  const auto idx = [&](int i, int j, int b) { return (static_cast<std::size_t>(i) * K + j) * (B + 1) + b; };
  std::vector<double> best(static_cast<std::size_t>(L) * K * (B + 1), kInf);
  std::vector<int> from(best.size(), -1);
  for (int j = 0; j < K; ++j)
    if (mem[0][j] <= B) best[idx(0, j, mem[0][j])] = node[0][j];
  for (int i = 1; i < L; ++i)
    for (int a = 0; a < K; ++a)
      for (int j = 0; j < K; ++j)
        for (int b = 0; b + mem[i][j] <= B; ++b) {
          const double prev = best[idx(i - 1, a, b)];
          if (prev == kInf) continue;
          const double t = prev + edge[i][a][j] + node[i][j];
          if (t < best[idx(i, j, b + mem[i][j])]) {
            best[idx(i, j, b + mem[i][j])] = t;
            from[idx(i, j, b + mem[i][j])] = a;
          }
        }
  int last = -1, bb = -1;
  for (int j = 0; j < K; ++j)
    for (int b = 0; b <= B; ++b)
      if (best[idx(L - 1, j, b)] < (last < 0 ? kInf : out.time_s)) {
        last = j;
        bb = b;
        out.time_s = best[idx(L - 1, j, b)];
      }
  if (last < 0) return out;
  out.choice.assign(L, 0);
  for (int i = L - 1, j = last, b = bb; i >= 0; --i) {
    out.choice[i] = j;
    const int a = from[idx(i, j, b)];
    b -= mem[i][j];
    j = a;
  }
  return out;
}

OasesTpPlan oases_block_tp(const model::Model& m, const hw::Cluster& c, const OasesTpOptions& opt) {
  if (opt.global_batch < 1) throw core::InputError("oases-blocks: --gbs must be >= 1");
  if (opt.micro_batches < 1) throw core::InputError("oases-blocks: micro-batches must be >= 1");
  if (opt.memory_bins < 10) throw core::InputError("oases-blocks: memory_bins must be >= 10");
  OasesTpPlan plan;
  const std::vector<int> tps = candidate_degrees(m, c, opt, plan.note);
  if (tps.empty()) throw core::InputError("oases-blocks: no tensor-parallel degree is usable: " + plan.note);
  std::vector<int> devices(static_cast<std::size_t>(c.num_devices()));
  std::iota(devices.begin(), devices.end(), 0);
  std::vector<Degree> deg;
  for (int t : tps) deg.push_back(make_degree(m, c, opt, t, devices));
  for (auto& d : deg) d.ctx.strategy = &d.strategy;  // re-point after the vector's moves
  const int L = static_cast<int>(m.layers.size()), K = static_cast<int>(deg.size());
  const cost::CostConstants& k = *deg[0].ctx.constants;
  // Memory: Σ layers (static + one micro-batch of activations; no pipeline) + workspace + the largest recompute
  // re-materialisation over every degree (conservative) ≤ the smallest usable capacity.
  double transient = 0, limit = kInf;
  for (const auto& d : deg) {
    limit = std::min(limit, d.ctx.memory_usable_bytes);
    for (const auto& l : d.layer) transient = std::max(transient, l.recomputed_bytes);
  }
  plan.memory_limit_bytes = limit;
  const double budget = limit - k.workspace_bytes - transient;
  const double per_bin = budget > 0 ? budget / opt.memory_bins : 1.0;
  const int B = opt.memory_bins;
  auto bins_of = [&](double bytes) { return static_cast<int>(std::ceil(bytes / per_bin - 1e-9)); };
  std::vector<std::vector<int>> mem(L, std::vector<int>(K));
  std::vector<std::vector<double>> node(L, std::vector<double>(K));
  for (int i = 0; i < L; ++i)
    for (int j = 0; j < K; ++j) {
      mem[i][j] = budget > 0 ? bins_of(layer_memory(deg[j].layer[i])) : B + 1;
      node[i][j] = static_cast<double>(opt.micro_batches) * deg[j].layer[i].time_s();
    }
  for (int j = 0; j < K; ++j) {
    OasesTpPlan::Uniform u{deg[j].tp, false, 0, k.workspace_bytes + transient};
    int used = 0;
    for (int i = 0; i < L; ++i) {
      u.time_s += node[i][j];
      u.memory_bytes += layer_memory(deg[j].layer[i]);
      used += mem[i][j];
    }
    u.fits = budget > 0 && used <= B;
    plan.uniform.push_back(u);
  }
  std::vector<std::vector<std::vector<double>>> edge(L, std::vector<std::vector<double>>(K, std::vector<double>(K, 0)));
  for (int i = 1; i < L; ++i)
    for (int a = 0; a < K; ++a)
      for (int j = 0; j < K; ++j) edge[i][a][j] = reshard_time(c, deg[a], deg[j], i, devices, opt);
  const ChainResult sol = solve_tp_chain(node, mem, edge, B);
  const std::vector<int>& choice = sol.choice;
  if (choice.empty()) {
    plan.note += "no degree assignment fits the memory";
    return plan;
  }
  plan.found = true;
  plan.time_s = sol.time_s;
  plan.memory_bytes = k.workspace_bytes + transient;
  for (int i = 0; i < L; ++i) {
    plan.layer_tp.push_back(deg[choice[i]].tp);
    plan.memory_bytes += layer_memory(deg[choice[i]].layer[i]);
    if (cost::is_block(m.layers[i].kind)) plan.block_tp.push_back(deg[choice[i]].tp);
  }
  return plan;
}

namespace {
// The fastest fitting uniform degree of a plan's table (tp = 0 when none fits).
OasesTpPlan::Uniform fastest_uniform(const OasesTpPlan& p) {
  OasesTpPlan::Uniform best;
  for (const auto& u : p.uniform)
    if (u.fits && (best.tp == 0 || u.time_s < best.time_s)) best = u;
  return best;
}
}  // namespace

OasesAblation oases_ablation(const model::Model& m, const hw::Cluster& c, OasesTpOptions opt) {
  OasesAblation out;
  out.planned = oases_block_tp(m, c, opt);
  out.uniform = fastest_uniform(out.planned);
  opt.overlap = false;
  opt.recompute = model::Recompute::full;
  out.megatron = fastest_uniform(oases_block_tp(m, c, opt));
  opt.recompute = model::Recompute::none;
  out.megatron_no_recompute = fastest_uniform(oases_block_tp(m, c, opt));
  return out;
}

}  // namespace strata::plan
