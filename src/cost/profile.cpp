// cost/profile: reader of measured profiles (docs/cost-model.md §Profiles), mbs interpolation of layer times and
// least-squares α–β fits of collective timings.
#include "strata/cost/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::cost {
namespace {

auto layer_key(const ProfileLayer& l) {
  return std::make_tuple(l.gpu_type, static_cast<int>(l.kind), l.hidden, l.seq, l.tp, l.mbs);
}

// Times of the rows of one (gpu_type, kind, hidden, seq, tp) at `mbs`: exact, interpolated or proportional.
std::optional<LayerTimes> times_of_type(const Profile& p, std::string_view gpu_type, model::LayerKind kind,
                                        std::int64_t hidden, std::int64_t seq, int tp, std::int64_t mbs) {
  // Rows sorted by mbs within the key (the layers vector is sorted by the full key).
  const ProfileLayer* lo = nullptr;  // largest mbs <= query
  const ProfileLayer* hi = nullptr;  // smallest mbs >= query
  for (const auto& l : p.layers) {
    if (l.gpu_type != gpu_type || l.kind != kind || l.hidden != hidden || l.seq != seq || l.tp != tp) continue;
    if (l.mbs == mbs) return LayerTimes{l.fwd_s, l.bwd_s, l.includes_tp_comm};
    if (l.mbs < mbs) lo = &l;
    if (l.mbs > mbs && !hi) hi = &l;
  }
  if (lo && hi && lo->includes_tp_comm == hi->includes_tp_comm) {
    const double w = static_cast<double>(mbs - lo->mbs) / static_cast<double>(hi->mbs - lo->mbs);
    return LayerTimes{lo->fwd_s + w * (hi->fwd_s - lo->fwd_s), lo->bwd_s + w * (hi->bwd_s - lo->bwd_s),
                      lo->includes_tp_comm};
  }
  const ProfileLayer* near = lo ? lo : hi;
  if (!near) return std::nullopt;
  // Outside the measured range: proportional to mbs from the nearest point.
  const double r = static_cast<double>(mbs) / static_cast<double>(near->mbs);
  return LayerTimes{near->fwd_s * r, near->bwd_s * r, near->includes_tp_comm};
}

// Least squares time = α + β·bytes over the rows of one (op, group size), α and β clamped at 0.
CollectiveFit fit_rows(Collective op, int group_size, const std::vector<const ProfileCollective*>& rows) {
  CollectiveFit f{op, group_size, 0, 0};
  const double n = static_cast<double>(rows.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto* r : rows) {
    sx += r->bytes;
    sy += r->time_s;
    sxx += r->bytes * r->bytes;
    sxy += r->bytes * r->time_s;
  }
  const double den = n * sxx - sx * sx;
  if (rows.size() >= 2 && den > 0) {
    f.beta_s_per_byte = (n * sxy - sx * sy) / den;
    f.alpha_s = (sy - f.beta_s_per_byte * sx) / n;
  }
  if (rows.size() < 2 || den <= 0 || f.beta_s_per_byte < 0) {
    // One size measured (or a non-increasing fit): pure bandwidth through the mean point.
    f.alpha_s = 0;
    f.beta_s_per_byte = sx > 0 ? sy / sx : 0;
  } else if (f.alpha_s < 0) {
    f.alpha_s = 0;
    f.beta_s_per_byte = sxx > 0 ? sxy / sxx : 0;  // least squares through the origin
  }
  return f;
}

}  // namespace

Profile profile_from_json(const nlohmann::json& j, const std::string& origin) {
  const core::JsonWhere root{origin, ""};
  core::expect_object(j, root);
  Profile p;
  p.source = core::opt_string(j, "source", root).value_or("");
  p.device = core::opt_string(j, "device", root).value_or("");
  p.dtype = core::opt_string(j, "dtype", root).value_or("");
  p.gpu_type = core::to_lower(core::opt_string(j, "gpu_type", root).value_or(""));
  if (core::has_field(j, "layers")) {
    const auto& arr = j.at("layers");
    const auto w = root.field("layers");
    core::expect_array(arr, w);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const auto wi = w.index(i);
      const auto& e = arr[i];
      core::expect_object(e, wi);
      ProfileLayer l;
      l.kind = model::parse_layer_kind(core::get_string(e, "kind", wi), wi.field("kind").str());
      l.hidden = core::get_positive_int(e, "hidden", wi);
      l.heads = core::opt_positive_int(e, "heads", wi).value_or(0);
      l.ffn = core::opt_positive_int(e, "ffn", wi).value_or(0);
      l.seq = core::get_positive_int(e, "seq", wi);
      const auto tp = core::opt_positive_int(e, "tp", wi).value_or(1);
      if (tp > 1'000'000) core::fail(wi.field("tp"), "out of range");
      l.tp = static_cast<int>(tp);
      l.mbs = core::opt_positive_int(e, "mbs", wi).value_or(1);
      l.fwd_s = core::get_positive_number(e, "fwd_s", wi);
      l.bwd_s = core::get_positive_number(e, "bwd_s", wi);
      l.includes_tp_comm = core::opt_bool(e, "includes_tp_comm", wi).value_or(false);
      l.gpu_type = core::to_lower(core::opt_string(e, "gpu_type", wi).value_or(p.gpu_type));
      p.layers.push_back(l);
    }
  }
  if (core::has_field(j, "collectives")) {
    const auto& arr = j.at("collectives");
    const auto w = root.field("collectives");
    core::expect_array(arr, w);
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const auto wi = w.index(i);
      const auto& e = arr[i];
      core::expect_object(e, wi);
      ProfileCollective c;
      c.op = parse_collective(core::get_string(e, "op", wi), wi.field("op").str());
      const auto g = core::get_positive_int(e, "group_size", wi);
      if (g > 1'000'000) core::fail(wi.field("group_size"), "out of range");
      c.group_size = static_cast<int>(g);
      c.bytes = core::get_nonnegative_number(e, "bytes", wi);
      c.time_s = core::get_nonnegative_number(e, "time_s", wi);
      p.collectives.push_back(c);
    }
  }
  // Deterministic order; two rows for one key are an error, so a profile means one thing.
  std::stable_sort(p.layers.begin(), p.layers.end(),
                   [](const ProfileLayer& a, const ProfileLayer& b) { return layer_key(a) < layer_key(b); });
  for (std::size_t i = 1; i < p.layers.size(); ++i)
    if (layer_key(p.layers[i]) == layer_key(p.layers[i - 1]))
      core::fail(root.field("layers"),
                 fmt::format("two rows for gpu_type '{}' kind {} hidden {} seq {} tp {} mbs {}", p.layers[i].gpu_type,
                             model::to_string(p.layers[i].kind), p.layers[i].hidden, p.layers[i].seq, p.layers[i].tp,
                             p.layers[i].mbs));
  p.fits = fit_collectives(p.collectives);
  return p;
}

std::vector<CollectiveFit> fit_collectives(const std::vector<ProfileCollective>& collectives) {
  // α–β fits per (op, group size), in key order.
  std::vector<std::pair<int, int>> keys;
  for (const auto& c : collectives) keys.emplace_back(static_cast<int>(c.op), c.group_size);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<CollectiveFit> fits;
  for (const auto& [op, g] : keys) {
    std::vector<const ProfileCollective*> rows;
    for (const auto& c : collectives)
      if (static_cast<int>(c.op) == op && c.group_size == g) rows.push_back(&c);
    fits.push_back(fit_rows(static_cast<Collective>(op), g, rows));
  }
  return fits;
}

Profile load_profile_file(const std::string& path) { return profile_from_json(core::load_json_file(path), path); }

nlohmann::ordered_json to_json(const Profile& p) {
  nlohmann::ordered_json j;
  j["source"] = p.source;
  j["device"] = p.device;
  j["dtype"] = p.dtype;
  if (!p.gpu_type.empty()) j["gpu_type"] = p.gpu_type;
  j["layers"] = nlohmann::ordered_json::array();
  for (const auto& l : p.layers) {
    nlohmann::ordered_json e;
    e["kind"] = std::string(model::to_string(l.kind));
    e["hidden"] = l.hidden;
    e["heads"] = l.heads;
    e["ffn"] = l.ffn;
    e["seq"] = l.seq;
    e["tp"] = l.tp;
    e["mbs"] = l.mbs;
    e["fwd_s"] = l.fwd_s;
    e["bwd_s"] = l.bwd_s;
    e["includes_tp_comm"] = l.includes_tp_comm;
    if (!l.gpu_type.empty()) e["gpu_type"] = l.gpu_type;
    j["layers"].push_back(e);
  }
  j["collectives"] = nlohmann::ordered_json::array();
  for (const auto& c : p.collectives) {
    nlohmann::ordered_json e;
    e["op"] = std::string(to_string(c.op));
    e["group_size"] = c.group_size;
    e["bytes"] = c.bytes;
    e["time_s"] = c.time_s;
    j["collectives"].push_back(e);
  }
  return j;
}

std::optional<LayerTimes> profile_layer_times(const Profile& p, model::LayerKind kind, std::int64_t hidden,
                                              std::int64_t seq, int tp, std::int64_t mbs, std::string_view gpu_type) {
  // Rows measured on this GPU type first; rows without a type apply to every type (older profiles).
  if (!gpu_type.empty())
    if (auto t = times_of_type(p, core::to_lower(gpu_type), kind, hidden, seq, tp, mbs)) return t;
  return times_of_type(p, "", kind, hidden, seq, tp, mbs);
}

std::optional<double> profile_collective_time(const Profile& p, Collective op, int group_size, double bytes) {
  if (group_size <= 1) return 0.0;
  for (const auto& f : p.fits)
    if (f.op == op && f.group_size == group_size) return f.alpha_s + f.beta_s_per_byte * bytes;
  return std::nullopt;
}

}  // namespace strata::cost
