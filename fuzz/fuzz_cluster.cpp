// fuzz/fuzz_cluster: libFuzzer target for the cluster loaders. Bytes → parse_json_text → cluster_from_json, and
// the same bytes as a `--cluster` spec string to resolve_cluster (unless they name a file: '/' or ".json").
// A valid cluster is then queried. Only InputError is an accepted outcome for bad input; anything else crashes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/hw/cluster.hpp"

namespace {

const strata::hw::Catalog& catalog() {
  static const strata::hw::Catalog c = strata::hw::builtin_catalog();
  return c;
}

// Exercises the queries on a small prefix of the cluster (bounded work per input).
void query(const strata::hw::Cluster& c) {
  const int n = std::min(c.num_devices(), 64);
  std::vector<int> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  (void)strata::hw::group_links(c, all);
  std::reverse(all.begin(), all.end());
  (void)strata::hw::group_links(c, all);
  for (int a = 0; a < n; ++a) {
    (void)strata::hw::link_bandwidth(c, a, n - 1 - a);
    (void)strata::hw::link_latency(c, a, (a * 7) % n);
    (void)strata::hw::nic_of(c, a);
    (void)strata::hw::gpus_per_nic(c, a);
  }
  if (c.num_devices() <= 256) (void)strata::hw::link_classes(c);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto j = strata::core::parse_json_text(text, "fuzz.json");
    query(strata::hw::cluster_from_json(j, "fuzz.json", catalog()));
  } catch (const strata::core::InputError&) {
  }
  if (text.find('/') == std::string::npos && text.find(".json") == std::string::npos &&
      text.find(".JSON") == std::string::npos) {
    try {
      query(strata::hw::resolve_cluster(text, catalog()));
    } catch (const strata::core::InputError&) {
    }
  }
  return 0;
}
