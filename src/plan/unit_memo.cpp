// plan/unit_memo: memoised cut times per boundary class, the estimate's PrebuiltStages, light candidates' completion
// (see unit_memo.hpp).
#include "unit_memo.hpp"

#include <mutex>
#include <tuple>

namespace strata::plan::detail {

namespace {
// Boundary j (stage j → j+1) takes the class of the first earlier boundary that is its topological twin
// (hw::same_boundary_topology, the test cost::estimate applies between boundaries; p2p_time reads nothing else of
// the devices). Its two same_topology tests come from the unit's stage twins (same_topology is an equivalence:
// stages j and prev are twins iff they have the same first twin), so a test is O(1), no device scan.
std::vector<int> boundary_classes(const hw::Cluster& c, const DegreeUnit& u) {
  const StageDevices& sd = u.stage_devices;
  const int cuts = std::max(0, static_cast<int>(sd.size()) - 1);
  const auto node = [&](int stage) { return c.devices[sd[stage][0]].node; };
  const auto rack = [&](int stage) { return c.nodes[node(stage)].rack; };
  const bool twins_known = u.stage_twin.size() == sd.size() && !c.bw_matrix;
  std::vector<int> cls(cuts, -1), distinct;
  for (int j = 0; j < cuts; ++j) {
    for (int prev : distinct) {
      const bool twin =
          twins_known ? u.stage_twin[j] == u.stage_twin[prev] && u.stage_twin[j + 1] == u.stage_twin[prev + 1] &&
                            node(j + 1) - node(j) == node(prev + 1) - node(prev) &&
                            rack(j + 1) - rack(j) == rack(prev + 1) - rack(prev)
                      : hw::same_boundary_topology(c, sd[j], sd[j + 1], sd[prev], sd[prev + 1]);
      if (twin) {
        cls[j] = prev;
        break;
      }
    }
    if (cls[j] < 0) {
      cls[j] = j;
      distinct.push_back(j);
    }
  }
  return cls;
}
}  // namespace

std::vector<int> stage_twins(const hw::Cluster& c, const std::vector<int>& placement, int pp) {
  const StageDevices sd{&placement, static_cast<int>(placement.size()) / pp, pp};
  std::vector<int> twin(static_cast<std::size_t>(pp), -1), reps;
  for (int st = 0; st < pp; ++st) {
    for (int prev : reps)
      if (hw::same_topology(c, sd[st], sd[prev])) {
        twin[st] = prev;
        break;
      }
    if (twin[st] < 0) {
      twin[st] = st;
      reps.push_back(st);
    }
  }
  return twin;
}

DegreeUnit UnitBuilder::build(const cost::Dims& d, const std::shared_ptr<const std::vector<int>>& placement,
                              const std::string& label) {
  const int pp = d.pp, tp = d.tp;
  const std::vector<int>* twins = nullptr;
  if (opt_.symmetry) {
    auto it = twins_.find({placement.get(), pp});
    if (it == twins_.end()) it = twins_.emplace(std::make_pair(placement.get(), pp), stage_twins(c_, *placement, pp)).first;
    twins = &it->second;
  }
  DegreeUnit u = make_degree_unit(m_, c_, d, placement, label, opt_.global_batch, opt_.dtype, opt_.cost, opt_.symmetry,
                                  twins);
  u.peak_flops_sum = peak_flops_sum_;
  u.proto.eager_elementwise = opt_.eager_elementwise;
  u.proto.recompute_early_stop = opt_.recompute_early_stop;  // applied to the full-recompute variants (eval.cpp)
  u.proto.fp8_separate_casts = opt_.fp8_separate_casts;
  u.proto.optim = opt_.optim;
  u.proto.grads = opt_.grads;
  u.proto.fp32_loss = opt_.fp32_loss;
  u.proto.attention = opt_.attention;
  u.fixed_split = opt_.engine && !opt_.engine->uneven_split;
  if (opt_.symmetry) {
    auto& shared = cuts_[{placement.get(), pp, tp}];
    if (!shared) shared = u.cuts;
    u.cuts = shared;
  }
  return u;
}

double unit_cut_time_s(const hw::Cluster& c, const DegreeUnit& u, const cost::Strategy& s, int boundary, double bytes,
                       const cost::CostOptions& opt) {
  CutCache& cache = *u.cuts;
  std::call_once(cache.classes_once, [&] { cache.boundary_class = boundary_classes(c, u); });
  const int cls = cache.boundary_class[boundary];
  const auto key = std::make_tuple(cls, s.sequence_parallel, bytes);
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.s.find(key); it != cache.s.end()) return it->second;
  }
  // The boundary's rank pairs scanned once (O(stage devices)); each message size then costs O(pair classes).
  const cost::P2pClasses* pairs = nullptr;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (auto it = cache.pairs.find(cls); it != cache.pairs.end()) pairs = &it->second;
  }
  if (!pairs) {
    cost::P2pClasses scanned = cost::p2p_classes(c, s.tp, u.stage_devices[cls], u.stage_devices[cls + 1]);
    std::lock_guard<std::mutex> lock(cache.mu);
    pairs = &cache.pairs.emplace(cls, std::move(scanned)).first->second;  // std::map: stable addresses
  }
  const double t = cost::p2p_time(c, *pairs, s.sequence_parallel, bytes, opt);  // = cost::p2p_time of the stages
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.s.emplace(key, t);
  return t;
}

bool light_estimates(const hw::Cluster& c) { return !c.has_oversubscribed_cpu_node; }

cost::PrebuiltStages unit_prebuilt(const hw::Cluster& c, const DegreeUnit& u, const cost::Strategy& s,
                                   const cost::CostOptions& opt, std::span<const std::vector<cost::LayerStageCost>> shape,
                                   std::span<const int> shape_of, bool light) {
  cost::PrebuiltStages pre;
  pre.class_ctx = u.class_ctx;
  pre.stage_class = u.stage_class;
  pre.shape_cost = shape;
  pre.shape_of = shape_of;
  pre.cut_time_s = [&c, &u, &s, &opt](int boundary, double bytes) {
    return unit_cut_time_s(c, u, s, boundary, bytes, opt);
  };
  pre.peak_flops_sum = u.peak_flops_sum;
  pre.stage_devices = !light;
  return pre;
}

void complete_light(const std::vector<int>& placement, cost::Strategy& s, cost::Estimate& e) {
  if (!s.placement.empty()) return;
  s.placement = placement;
  const std::size_t per_stage = static_cast<std::size_t>(s.dp_cp()) * s.tp;
  for (std::size_t st = 0; st < e.stages.size(); ++st)
    if (e.stages[st].devices.empty())
      e.stages[st].devices.assign(placement.begin() + st * per_stage, placement.begin() + (st + 1) * per_stage);
}

}  // namespace strata::plan::detail
