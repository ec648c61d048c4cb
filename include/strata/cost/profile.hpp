// cost/profile: a measured profile (AMP-style lookup table) that overrides the roofline: per-layer forward /
// backward seconds keyed by (kind, hidden, seq, tp, mbs), and collective timings from which α and β are fitted
// per (op, group size). Written by `strata profile` (exec); format in docs/cost-model.md §Profiles:
//   {"source": "...", "device": "cpu", "dtype": "fp32",
//    "layers": [{"kind": "transformer", "hidden": 64, "heads": 4, "ffn": 256, "seq": 32, "tp": 1, "mbs": 1,
//                "fwd_s": 1.2e-4, "bwd_s": 2.5e-4}, ...],
//    "collectives": [{"op": "allreduce", "group_size": 2, "bytes": 1048576, "time_s": 3.1e-4}, ...]}
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/cost/comm.hpp"
#include "strata/model/layer.hpp"

namespace strata::cost {

struct ProfileLayer {
  model::LayerKind kind = model::LayerKind::transformer;
  std::int64_t hidden = 0, heads = 0, ffn = 0, seq = 0, mbs = 1;
  int tp = 1;
  double fwd_s = 0, bwd_s = 0;
  // true: the times were measured with the layer's tensor-parallel collectives inside them (an end-to-end layer
  // timing); false (default, what `strata profile` writes): compute only, and the cost model adds the TP
  // collectives from the collective rows or the α–β model.
  bool includes_tp_comm = false;
  // GPU type the row was measured on (catalog name, lower-case); empty = applies to every type. A cluster may mix
  // measured types (rows of their own) and analytical ones (no rows: the roofline).
  std::string gpu_type;
};

struct ProfileCollective {
  Collective op = Collective::allreduce;
  int group_size = 2;
  double bytes = 0, time_s = 0;
};

// α–β fit of one (op, group size): time = alpha_s + bytes · beta_s_per_byte (least squares, clamped ≥ 0).
struct CollectiveFit {
  Collective op = Collective::allreduce;
  int group_size = 2;
  double alpha_s = 0, beta_s_per_byte = 0;
};

struct Profile {
  std::string source, device, dtype;
  std::string gpu_type;                      // top-level label: the default of rows without their own gpu_type
  std::vector<ProfileLayer> layers;          // sorted by (kind, hidden, seq, tp, mbs)
  std::vector<ProfileCollective> collectives;
  std::vector<CollectiveFit> fits;           // sorted by (op, group_size)
};

Profile profile_from_json(const nlohmann::json& j, const std::string& origin);
// Least-squares α–β fits (α, β ≥ 0) of collective timings, one per (op, group size), sorted by that key.
std::vector<CollectiveFit> fit_collectives(const std::vector<ProfileCollective>& collectives);
Profile load_profile_file(const std::string& path);
nlohmann::ordered_json to_json(const Profile& p);

struct LayerTimes {
  double fwd_s = 0, bwd_s = 0;
  bool includes_tp_comm = false;  // of the row(s) they come from (interpolation needs both rows to agree)
};
// Measured times of a layer on a GPU of `gpu_type`: among the rows of that type (else the untyped rows), exact
// (kind, hidden, seq, tp, mbs) match, else linear interpolation in mbs between the nearest measured micro-batch
// sizes of the same (kind, hidden, seq, tp) (extrapolated proportionally from the nearest point outside the
// range); nullopt when the key has no rows (the roofline is used then).
std::optional<LayerTimes> profile_layer_times(const Profile& p, model::LayerKind kind, std::int64_t hidden,
                                              std::int64_t seq, int tp, std::int64_t mbs,
                                              std::string_view gpu_type = {});
// Fitted time of a collective of `bytes` over `group_size` ranks; nullopt when (op, group size) was not measured.
std::optional<double> profile_collective_time(const Profile& p, Collective op, int group_size, double bytes);

}  // namespace strata::cost
