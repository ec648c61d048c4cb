// plan/explain: the sentences `strata plan --explain` prints about the best plan — which stages went to which
// GPU type and why (per-layer times per type from the same cached layer costs the split used), where the tp
// groups sit, what the exact split and the degrees gained over the baselines, and what the search did.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "search_internal.hpp"
#include "strata/core/text.hpp"

namespace strata::plan::detail {
namespace {

// The most frequent layer shape (the "block") of the model.
int main_shape(const LayerIndex& li) {
  std::map<int, int> count;
  for (int id : li.shape_of) ++count[id];
  int best = 0, n = -1;
  for (const auto& [id, k] : count)
    if (k > n) {
      best = id;
      n = k;
    }
  return best;
}

const Baseline* find_baseline(const PlanResult& r, const std::string& name) {
  for (const auto& b : r.baselines)
    if (b.name == name) return &b;
  return nullptr;
}

// The ranking rule that put the best plan first (plan/rank.cpp, docs/planner.md §Ranking).
std::string ranking_line(const PlanResult& r, const PlanOptions& opt) {
  const Candidate& best = r.top.front();
  const double margin = 100.0 * memory_margin(best.estimate);
  if (opt.objective == Objective::fastest)
    return fmt::format("ranked by predicted time only (--objective fastest); memory margin {:.1f}% of usable memory",
                       margin);
  const auto fastest = std::min_element(r.top.begin(), r.top.end(), candidate_less);
  if (fastest == r.top.begin())
    return fmt::format("ranked by memory margin among the plans within {:g}% of the fastest: the fastest plan has "
                       "the most margin too ({:.1f}% of usable memory free)",
                       100.0 * opt.margin_tolerance, margin);
  return fmt::format("ranked by memory margin among the plans within {:g}% of the fastest: {:.1f}% slower than plan "
                     "#{}, with {:.1f}% of usable memory free instead of {:.1f}% (--objective fastest ranks by time)",
                     100.0 * opt.margin_tolerance,
                     100.0 * (best.estimate.iteration_time_s / fastest->estimate.iteration_time_s - 1.0),
                     fastest - r.top.begin() + 1, margin, 100.0 * memory_margin(fastest->estimate));
}

}  // namespace

std::vector<std::string> explain(const model::Model& m, const hw::Cluster& c, const PlanOptions& opt,
                                 const LayerIndex& li, const Space_& /*sp*/, const PlanResult& res) {
  std::vector<std::string> out;
  if (res.top.empty()) return out;
  const Candidate& best = res.top.front();
  const cost::Strategy& s = best.strategy;
  const cost::Estimate& e = best.estimate;
  out.push_back(fmt::format(
      "best: dp={} tp={} pp={} mbs={} ({} micro-batches), schedule {}{}, ZeRO {}, recompute {}, sp {}: {} per "
      "iteration, {:.1f} TFLOP/s per GPU, peak memory {}",
      s.dp, s.tp, s.pp, s.micro_batch, s.num_micro_batches(), cost::to_string(s.schedule),
      s.virtual_stages > 1 ? fmt::format(" (v={})", s.virtual_stages) : "", s.zero_stage,
      model::to_string(s.recompute), s.sequence_parallel ? "on" : "off", core::format_seconds(e.iteration_time_s),
      e.tflops_per_gpu, core::format_bytes(e.peak_memory_bytes)));
  out.push_back(ranking_line(res, opt));

  // Stage runs per GPU type, with layers and per-type block time.
  const auto types = stage_gpu_types(c, s);
  const DegreeUnit u =
      make_degree_unit(m, c, s, s.placement, best.placement_label, s.global_batch, s.dtype, opt.cost);
  cost::Strategy probe = s;
  const ClassCosts cc = class_costs(m, li, u, probe);
  const int shape = main_shape(li);
  const std::string block_kind(model::to_string(m.layers[li.representative[shape]].kind));
  std::map<int, double> block_time;  // gpu type → fwd+bwd of one block per micro-batch
  for (int st = 0; st < s.pp; ++st) block_time[types[st]] = cc.shape[u.stage_class[st]][shape].time_s();
  const auto bounds = cost::chunk_boundaries(s);
  for (std::size_t i = 0; i < types.size();) {
    std::size_t j = i;
    while (j + 1 < types.size() && types[j + 1] == types[i]) ++j;
    std::vector<std::string> sizes;
    double tmin = INFINITY, tmax = 0;
    int layers = 0;
    for (std::size_t st = i; st <= j; ++st) {
      int held = 0;
      for (std::size_t ch = st; ch + 1 < bounds.size(); ch += s.pp) held += bounds[ch + 1] - bounds[ch];
      sizes.push_back(std::to_string(held));
      layers += held;
      tmin = std::min(tmin, e.stages[st].time_s);
      tmax = std::max(tmax, e.stages[st].time_s);
    }
    const std::string gpu = types[i] < 0 ? "mixed GPU types" : c.gpu_types[types[i]].name;
    out.push_back(fmt::format("{} on {}: {} layers ({} per stage), stage time {}{} per micro-batch, {} of {} memory",
                              i == j ? fmt::format("stage {}", i) : fmt::format("stages {}-{}", i, j), gpu, layers,
                              core::join(sizes, "+"), core::format_seconds(tmin),
                              tmax > tmin * 1.0005 ? " – " + core::format_seconds(tmax) : "",
                              core::format_bytes(e.stages[i].memory_bytes),
                              core::format_bytes(e.stages[i].memory_capacity_bytes)));
    i = j + 1;
  }
  if (block_time.size() >= 2) {
    std::vector<std::pair<double, int>> by_speed;
    for (const auto& [t, sec] : block_time) by_speed.emplace_back(sec, t);
    std::sort(by_speed.begin(), by_speed.end());
    std::vector<std::string> parts;
    for (const auto& [sec, t] : by_speed)
      parts.push_back(fmt::format("{} on {}", core::format_seconds(sec), t < 0 ? "mixed" : c.gpu_types[t].name));
    out.push_back(fmt::format(
        "why: one {} layer takes {} (forward+backward per micro-batch), so the exact split gives the faster "
        "GPUs' stages more layers to equalise stage times (the max stage time is multiplied by m−1 = {})",
        block_kind, core::join(parts, " vs "), s.num_micro_batches() - 1));
  } else if (s.pp > 1) {
    out.push_back(fmt::format("why the split: one {} layer takes {} per micro-batch on every stage; the split balances "
                              "the embedding/head and the p2p cuts against the blocks",
                              block_kind, core::format_seconds(block_time.begin()->second)));
  }
  if (s.tp > 1) {
    bool in_node = true;
    for (int st = 0; st < s.pp; ++st)
      for (int d = 0; d < s.dp_cp(); ++d) {
        const int node = c.devices[s.device(st, d, 0)].node;
        for (int r = 1; r < s.tp; ++r) in_node = in_node && c.devices[s.device(st, d, r)].node == node;
      }
    out.push_back(in_node ? fmt::format("tp groups of {} sit inside one node each (placement {}), on the node's "
                                        "fastest links",
                                        s.tp, best.placement_label)
                          : fmt::format("tp groups of {} span nodes (tp larger than a node)", s.tp));
  }
  if (const Baseline* uni = find_baseline(res, "uniform"); uni && s.pp > 1) {
    if (uni->found)
      out.push_back(fmt::format("exact split vs uniform split of the same strategy: {} vs {} ({:.2f}x)",
                                core::format_seconds(e.iteration_time_s),
                                core::format_seconds(uni->estimate.iteration_time_s),
                                uni->estimate.iteration_time_s / e.iteration_time_s));
    else
      out.push_back("the uniform split of the same strategy does not fit memory; the exact split does");
  }
  if (const Baseline* meg = find_baseline(res, "megatron"); meg && meg->found) {
    double meg_dp = 0, best_dp = 0;
    for (const auto& st : meg->estimate.stages) meg_dp = std::max(meg_dp, st.dp_comm_s);
    for (const auto& st : e.stages) best_dp = std::max(best_dp, st.dp_comm_s);
    out.push_back(fmt::format(
        "vs megatron (dp={} tp={} pp={} mbs={}): {} vs {} ({:.2f}x); exposed DP sync {} vs {}",
        meg->strategy.dp, meg->strategy.tp, meg->strategy.pp, meg->strategy.micro_batch,
        core::format_seconds(e.iteration_time_s), core::format_seconds(meg->estimate.iteration_time_s),
        meg->estimate.iteration_time_s / e.iteration_time_s, core::format_seconds(best_dp),
        core::format_seconds(meg_dp)));
  }
  out.push_back(fmt::format(
      "search: {} configurations in the space, {} costed by cost::estimate, {} pruned by the lower bound, {} exact "
      "splits solved ({:.1f} candidate bounds each on average)",
      res.space_size, res.evaluated, res.pruned_by_bound, res.splits_solved,
      res.splits_solved ? static_cast<double>(res.split_bounds_tried) / res.splits_solved : 0.0));
  return out;
}

}  // namespace strata::plan::detail
