// Shared helpers of the cost tests: clusters, models and an InputError catcher.
#pragma once
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "strata/core/error.hpp"
#include "strata/cost/constants.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/layer.hpp"
#include "strata/model/model.hpp"

namespace cost_test {

inline std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const strata::core::InputError& e) {
    return e.what();
  }
  return "";
}

inline strata::hw::Cluster cluster(const std::string& spec) {
  static const strata::hw::Catalog catalog = strata::hw::builtin_catalog();
  return strata::hw::resolve_cluster(spec, catalog);
}

// Constants with ideal links (efficiency 1) so communication equals the closed forms of the papers.
inline strata::cost::CostConstants ideal_links() {
  auto k = strata::cost::builtin_constants();
  k.intra_node_bw_efficiency = 1.0;
  k.inter_node_bw_efficiency = 1.0;
  return k;
}

inline strata::model::Model gpt(std::int64_t layers, std::int64_t hidden, std::int64_t heads, std::int64_t seq,
                                std::int64_t vocab = 51200) {
  strata::model::TransformerConfig cfg;
  cfg.name = "test-gpt";
  cfg.family = "gpt";
  cfg.layers = layers;
  cfg.hidden = hidden;
  cfg.heads = heads;
  cfg.vocab = vocab;
  cfg.seq = seq;
  return strata::model::build_transformer(cfg, "test");
}

inline strata::cost::Estimate run(const strata::model::Model& m, const strata::hw::Cluster& c,
                                  const std::string& strategy, const strata::cost::CostOptions& opt = {}) {
  const auto s = strata::cost::complete_strategy(strata::cost::parse_strategy(strategy), m, c);
  return strata::cost::estimate(m, c, s, opt);
}

// Devices 0..n-1: a stage holding the first n devices of the cluster.
inline std::vector<int> first_devices(int n) {
  std::vector<int> d(static_cast<std::size_t>(n));
  std::iota(d.begin(), d.end(), 0);
  return d;
}

// The layer query a stage of `s` makes for a block of `m` (bf16 bytes, the H100's flash kernel; `rc` its mode).
inline strata::model::LayerQuery stage_query(const strata::cost::Strategy& s, const strata::model::Model& m,
                                             strata::model::Recompute rc = strata::model::Recompute::none) {
  strata::model::LayerQuery q;
  q.micro_batch = s.micro_batch;
  q.seq = m.seq;
  q.tp = s.tp;
  q.sequence_parallel = s.sequence_parallel && s.tp > 1;
  q.recompute = rc;
  q.recompute_early_stop = s.recompute_early_stop;
  q.bytes_per_element = 2;
  q.attention = strata::model::AttentionKernel::flash;
  return q;
}

}  // namespace cost_test
