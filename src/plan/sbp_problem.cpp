// plan/sbp_problem: the problems AutoDDL's search runs on (its §4.6 MLP; a transformer's blocks + LM head), the
// Megatron TP+DP and DP baselines in the same SBP space, the bridge to cost::Strategy, the per-layer explanation
// and the JSON. See sbp_search.hpp and docs/sbp.md.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "strata/core/error.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/precision.hpp"
#include "strata/plan/sbp_search.hpp"

namespace strata::plan {

SbpProblem mlp_problem(const std::vector<double>& widths, double rows, const std::string& where) {
  if (widths.size() < 2)
    throw core::InputError(fmt::format("{}: an MLP needs at least 2 widths (got {})", where, widths.size()));
  if (!(rows > 0) || !std::isfinite(rows))
    throw core::InputError(fmt::format("{}: rows must be a positive finite number", where));
  SbpProblem p;
  p.name = "mlp";
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (!(widths[i] > 0) || !std::isfinite(widths[i]))
      throw core::InputError(fmt::format("{}: width {} ({}) must be a positive number", where, i, widths[i]));
    p.name += fmt::format("{}{:g}", i ? "-" : ":", widths[i]);
  }
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    p.layers.push_back({fmt::format("dense{}", i), widths[i], widths[i + 1], 0,
                        i % 2 ? MegatronRole::row : MegatronRole::column});
    p.chain.push_back(static_cast<int>(i));
  }
  p.rows = rows;
  return p;
}

namespace {

const model::LayerSpec& transformer_block(const model::Model& m, const std::string& where) {
  const model::LayerSpec* block = nullptr;
  for (const auto& l : m.layers) {
    if (l.kind == model::LayerKind::transformer) {
      if (!block) block = &l;
      if (!model::same_cost_shape(l, *block))
        throw core::InputError(fmt::format("{}: model '{}': blocks of different shapes ({} vs {}); AutoDDL ties "
                                           "repeated blocks, so they must be alike",
                                           where, m.name, block->name, l.name));
    } else if (l.kind != model::LayerKind::embedding && l.kind != model::LayerKind::lm_head) {
      throw core::InputError(fmt::format("{}: model '{}': layer '{}' is a {} layer; the SBP search covers decoder-only "
                                         "transformers (embedding, blocks, LM head)",
                                         where, m.name, l.name, model::to_string(l.kind)));
    }
  }
  if (!block) throw core::InputError(fmt::format("{}: model '{}' has no transformer blocks", where, m.name));
  if (block->experts > 0)
    throw core::InputError(fmt::format("{}: model '{}': MoE blocks are not in the SBP space", where, m.name));
  return *block;
}

}  // namespace

double sbp_memory_limit(const hw::Cluster& c, const cost::MemoryHeadroom& headroom) {
  double capacity = c.gpu_of(0).memory_bytes;
  for (int d = 1; d < c.num_devices(); ++d) capacity = std::min(capacity, c.gpu_of(d).memory_bytes);
  return cost::usable_memory_bytes(capacity, headroom, cost::builtin_constants());
}

SbpProblem transformer_problem(const model::Model& m, const hw::Cluster& c, std::int64_t mbs, std::int64_t gbs,
                               hw::Dtype dtype, const cost::MemoryHeadroom& headroom, const std::string& where) {
  if (mbs < 1 || gbs < 1 || gbs % mbs != 0)
    throw core::InputError(fmt::format("{}: --gbs {} must be a positive multiple of --mbs {}", where, gbs, mbs));
  const model::LayerSpec& b = transformer_block(m, where);
  const double h = static_cast<double>(b.hidden);
  const std::int64_t kv = b.kv_heads > 0 ? b.kv_heads : b.heads;
  const double qkv_out = h + 2.0 * static_cast<double>(kv) * h / static_cast<double>(b.heads);
  const double ffn = b.ffn > 0 ? static_cast<double>(b.ffn) : 4 * h;
  const double up = b.activation == model::Activation::swiglu ? 2 * ffn : ffn;  // gate + up projections
  SbpProblem p;
  p.name = m.name;
  p.layers = {{"qkv", h, qkv_out, static_cast<int>(kv), MegatronRole::column},
              {"proj", h, h, 0, MegatronRole::row},
              {"fc1", h, up, 0, MegatronRole::column},
              {"fc2", ffn, h, 0, MegatronRole::row}};
  for (int i = 0; i < m.num_blocks(); ++i) p.chain.insert(p.chain.end(), {0, 1, 2, 3});
  const auto& recipe = cost::precision_recipe(dtype);
  for (const auto& l : m.layers)
    if (l.kind == model::LayerKind::lm_head && l.vocab > 0) {
      // The LM head (tied to the embedding when the model ties them) is one more matmul, column-parallel in
      // Megatron (vocab-parallel); an untied embedding table is held replicated (fixed memory).
      p.layers.push_back({"lm_head", h, static_cast<double>(l.vocab), 0, MegatronRole::column});
      p.chain.push_back(static_cast<int>(p.layers.size()) - 1);
      if (!l.tied_embeddings) p.fixed_memory_bytes += h * static_cast<double>(l.vocab) * recipe.state_bytes_per_param();
    }
  const double seq = static_cast<double>(b.seq > 0 ? b.seq : m.seq);
  p.rows = static_cast<double>(mbs) * seq;
  p.micro_batches = static_cast<double>(gbs / mbs);
  p.act_bytes = recipe.activation_bytes_per_element;
  p.grad_bytes = recipe.grad_comm_bytes_per_param;
  p.state_bytes = recipe.state_bytes_per_param();
  p.memory_limit_bytes = sbp_memory_limit(c, headroom);
  p.fixed_memory_bytes += cost::builtin_constants().workspace_bytes;  // CUDA context, cuBLAS/NCCL (cost/memory)
  p.micro_batch_samples = mbs;
  p.global_batch = gbs;
  p.dtype = dtype;
  return p;
}

// ---- baselines ---------------------------------------------------------------------------------------------------
namespace {

// Megatron's placement of a tp group (tp fastest in the rank order): inside one node, or whole nodes.
std::optional<cost::MeshAxis> megatron_tp_axis(int t, const cost::SbpComm& comm) {
  const int G = comm.gpus_per_node, N = comm.nodes;
  if (t <= G) {
    if (G % t) return std::nullopt;
    return cost::MeshAxis{1, t};
  }
  if (t % G || N % (t / G)) return std::nullopt;
  return cost::MeshAxis{t / G, G};
}

std::vector<cost::MatmulLayout> megatron_choice(const SbpProblem& p, cost::MeshAxis d, cost::MeshAxis t) {
  std::vector<cost::MatmulLayout> x;
  for (const auto& l : p.layers)
    x.push_back(l.role == MegatronRole::column ? cost::MatmulLayout{{d, t, cost::MeshAxis{}}}
                                               : cost::MatmulLayout{{d, cost::MeshAxis{}, t}});
  return x;
}

bool better(const SbpCost& a, const SbpCost& b, SbpObjective o) {
  return o == SbpObjective::time ? a.comm_time_s() < b.comm_time_s() : a.comm_bytes() < b.comm_bytes();
}

}  // namespace

SbpBaseline megatron_baseline(const SbpProblem& p, const cost::SbpComm& comm, SbpObjective objective) {
  SbpBaseline best;
  best.name = "megatron";
  const int devices = comm.devices();
  for (int t = 1; t <= devices; ++t) {
    if (devices % t) continue;
    const auto tp = megatron_tp_axis(t, comm);
    if (!tp) continue;
    bool heads_ok = true;
    for (const auto& l : p.layers) heads_ok = heads_ok && (l.heads <= 0 || l.heads % t == 0);
    if (!heads_ok) continue;
    const cost::MeshAxis dp{comm.nodes / tp->nodes, comm.gpus_per_node / tp->gpus};
    auto x = megatron_choice(p, dp, *tp);
    const SbpCost c = evaluate_sbp(p, comm, x);
    if (!c.fits || (best.found && !better(c, best.cost, objective))) continue;
    best.found = true;
    best.dp = dp.size();
    best.tp = t;
    best.choice = std::move(x);
    best.cost = c;
  }
  return best;
}

SbpBaseline dp_baseline(const SbpProblem& p, const cost::SbpComm& comm) {
  SbpBaseline b;
  b.name = "dp";
  b.dp = comm.devices();
  b.tp = 1;
  b.choice = megatron_choice(p, cost::MeshAxis{comm.nodes, comm.gpus_per_node}, cost::MeshAxis{});
  b.cost = evaluate_sbp(p, comm, b.choice);
  b.found = b.cost.fits;
  return b;
}

std::optional<std::pair<int, int>> megatron_degrees(const SbpProblem& p, const cost::SbpComm& comm,
                                                    const std::vector<cost::MatmulLayout>& choice) {
  if (choice.empty() || choice.size() != p.layers.size()) return std::nullopt;
  const auto& first = choice.front();
  const cost::MeshAxis t = p.layers.front().role == MegatronRole::column ? first.axis[1] : first.axis[2];
  const auto tp = megatron_tp_axis(t.size(), comm);
  if (!tp || !(*tp == t)) return std::nullopt;
  const cost::MeshAxis d{comm.nodes / t.nodes, comm.gpus_per_node / t.gpus};
  if (megatron_choice(p, d, t) != choice) return std::nullopt;
  return std::make_pair(d.size(), t.size());
}

std::optional<cost::Strategy> sbp_to_strategy(const SbpProblem& p, const cost::SbpComm& comm, const model::Model& m,
                                              const std::vector<cost::MatmulLayout>& choice) {
  const auto deg = megatron_degrees(p, comm, choice);
  if (!deg || p.micro_batch_samples <= 0 || p.micro_batch_samples % deg->first != 0) return std::nullopt;
  cost::Strategy s;
  s.dp = deg->first;
  s.tp = deg->second;
  s.pp = 1;
  s.micro_batch = p.micro_batch_samples / deg->first;
  s.global_batch = p.global_batch;
  s.dtype = p.dtype;
  return cost::complete_strategy(s, m, *comm.cluster);
}

// ---- explanation and JSON -----------------------------------------------------------------------------------------
std::vector<SbpLayerExplain> explain_sbp(const SbpProblem& p, const cost::SbpComm& comm,
                                         const std::vector<cost::MatmulLayout>& choice) {
  std::vector<int> repeats(p.layers.size(), 0);
  for (int l : p.chain) ++repeats[static_cast<std::size_t>(l)];
  std::map<std::pair<int, int>, int> mult;
  std::vector<std::pair<int, int>> order;
  for (std::size_t i = 0; i < p.chain.size(); ++i) {
    const std::pair<int, int> key{p.chain[i], i + 1 < p.chain.size() ? p.chain[i + 1] : -1};
    if (mult[key]++ == 0) order.push_back(key);
  }
  std::vector<SbpLayerExplain> out;
  for (const auto& key : order) {
    const auto a = static_cast<std::size_t>(key.first);
    const auto& A = p.layers[a];
    SbpLayerExplain e;
    e.name = A.name;
    e.layer = key.first;
    e.repeats = repeats[a];
    e.layout = choice[a];
    e.layout_class = cost::classify(choice[a]);
    e.weight = cost::weight_sync(choice[a], A.in, A.out, p.grad_bytes, comm);
    e.next = key.second < 0 ? "" : p.layers[static_cast<std::size_t>(key.second)].name;
    e.boxing = key.second < 0 ? cost::output_boxing(choice[a], p.rows, A.out, p.act_bytes, comm)
                              : cost::boundary_boxing(choice[a], choice[static_cast<std::size_t>(key.second)], p.rows,
                                                      A.out, p.layers[static_cast<std::size_t>(key.second)].in,
                                                      p.act_bytes, A.heads, comm);
    e.boxing_repeats = mult[key];
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

nlohmann::ordered_json step_json(const cost::BoxingStep& s) {
  nlohmann::ordered_json j;
  j["collective"] = cost::to_string(s.kind);
  j["group"] = cost::to_string(s.group);
  j["group_nodes"] = s.group.nodes;
  j["group_gpus_per_node"] = s.group.gpus;
  j["buffer_bytes"] = s.buffer_bytes;
  j["moved_bytes_per_device"] = s.moved_bytes;
  j["time_s"] = s.time_s;
  j["what"] = s.what;
  return j;
}

nlohmann::ordered_json cost_json(const SbpCost& c) {
  nlohmann::ordered_json j;
  j["comm_time_s"] = c.comm_time_s();
  j["comm_bytes_per_device"] = c.comm_bytes();
  j["activation_time_s"] = c.activation_time_s;
  j["activation_bytes_per_device"] = c.activation_bytes;
  j["weight_sync_time_s"] = c.weight_time_s;
  j["weight_sync_bytes_per_device"] = c.weight_bytes;
  j["memory_bytes_per_device"] = c.memory_bytes;
  j["fits"] = c.fits;
  return j;
}

nlohmann::ordered_json choice_json(const SbpProblem& p, const cost::SbpComm& comm,
                                   const std::vector<cost::MatmulLayout>& choice) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& e : explain_sbp(p, comm, choice)) {
    nlohmann::ordered_json j;
    j["layer"] = e.name;
    j["in"] = p.layers[static_cast<std::size_t>(e.layer)].in;
    j["out"] = p.layers[static_cast<std::size_t>(e.layer)].out;
    j["repeats"] = e.repeats;
    j["p"] = {e.layout.p(0), e.layout.p(1), e.layout.p(2)};
    j["mesh"] = {cost::to_string(e.layout.axis[0]), cost::to_string(e.layout.axis[1]),
                 cost::to_string(e.layout.axis[2])};
    j["class"] = cost::to_string(e.layout_class);
    j["input_sbp"] = cost::to_string(cost::input_sbp(e.layout));
    j["weight_sbp"] = cost::to_string(cost::weight_sbp(e.layout));
    j["output_sbp"] = cost::to_string(cost::output_sbp(e.layout));
    j["weight_sync"] = step_json(e.weight);
    j["next"] = e.next.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(e.next);
    j["boundary_repeats"] = e.boxing_repeats;
    auto& steps = j["boxing_forward"] = nlohmann::ordered_json::array();
    for (const auto& s : e.boxing.steps) steps.push_back(step_json(s));
    rows.push_back(std::move(j));
  }
  return rows;
}

}  // namespace

nlohmann::ordered_json sbp_to_json(const SbpProblem& p, const cost::SbpComm& comm, const SbpSearchResult& r,
                                   const std::vector<SbpBaseline>& baselines) {
  nlohmann::ordered_json j;
  j["problem"] = {{"name", p.name},
                  {"cluster", comm.cluster->name},
                  {"nodes", comm.nodes},
                  {"gpus_per_node", comm.gpus_per_node},
                  {"rows_per_micro_batch", p.rows},
                  {"micro_batches", p.micro_batches},
                  {"matmuls_in_chain", p.chain.size()},
                  {"memory_limit_bytes", p.memory_limit_bytes},
                  {"max_p0", p.max_p0}};
  j["search"] = {{"algorithm", to_string(r.algorithm)},
                 {"space_size", r.space_size},
                 {"evaluated", r.evaluated},
                 {"found", r.found}};
  if (r.found) {
    j["best"]["cost"] = cost_json(r.cost);
    j["best"]["layers"] = choice_json(p, comm, r.choice);
    if (const auto deg = megatron_degrees(p, comm, r.choice))
      j["best"]["megatron_equivalent"] = {{"dp", deg->first}, {"tp", deg->second}};
  }
  auto& bs = j["baselines"] = nlohmann::ordered_json::array();
  for (const auto& b : baselines) {
    nlohmann::ordered_json x;
    x["name"] = b.name;
    x["found"] = b.found;
    x["dp"] = b.dp;
    x["tp"] = b.tp;
    x["cost"] = cost_json(b.cost);
    bs.push_back(std::move(x));
  }
  return j;
}

}  // namespace strata::plan
