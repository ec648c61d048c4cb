// cost/strategy_stages: the syntax of per-stage strategies — the `stages=` and `layers=` values of `--strategy`
// and the "stages" array of the JSON form, both directions (docs/strategy.md "Per-stage strategies").
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strategy_text.hpp"

namespace strata::cost {

std::string_view to_string(LayerDataParallel d) { return d == LayerDataParallel::sdp ? "sdp" : "dp"; }
std::string_view to_string(TpOrder o) { return o == TpOrder::strided ? "strided" : "consecutive"; }

namespace detail {
namespace {

using core::InputError;

// Most stages / layer choices one strategy may list (a typo like "*99999999" is an error, not an allocation).
constexpr int kMaxListed = 1'000'000;

// "a100", "0+1+2+3" or "a100@0+1+2+3".
void parse_device_set(std::string_view text, StageChoice& st, const std::string& where, const std::string& field) {
  const auto at = text.find('@');
  std::string_view gpu = text, devices;
  if (at != std::string_view::npos) {
    gpu = text.substr(0, at);
    devices = text.substr(at + 1);
    if (gpu.empty() || devices.empty())
      throw InputError(fmt::format("{}: {}: '{}' is not GPU@DEVICES (e.g. a100@0+1+2+3)", where, field, text));
  } else if (!text.empty() && std::isdigit(static_cast<unsigned char>(text.front()))) {
    gpu = {};
    devices = text;
  }
  if (at == std::string_view::npos && gpu.empty() && devices.empty())
    throw InputError(fmt::format("{}: {}: empty device set (a GPU type such as a100, or devices 0+1+…)", where, field));
  st.gpu = core::to_lower(gpu);
  if (!devices.empty()) st.devices = parse_int_list(devices, where, field + ".devices", 0);
}

// One stage: DEVICE_SET:dpN:tpN:LAYERS, the three fields in any order, each once.
StageChoice parse_stage(std::string_view token, const std::string& where, const std::string& field) {
  const auto parts = split_at(token, ':');
  if (parts.size() != 4)
    throw InputError(fmt::format("{}: {}: '{}' is not DEVICES:dpN:tpN:LAYERS (e.g. a100:dp2:tp1:12)", where, field,
                                 token));
  StageChoice st;
  parse_device_set(parts[0], st, where, field);
  bool dp = false, tp = false, layers = false;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto p = parts[i];
    const auto once = [&](bool& given, const char* name) {
      if (given) throw InputError(fmt::format("{}: {}.{}: given twice in '{}'", where, field, name, token));
      given = true;
    };
    if (p.starts_with("dp")) {
      once(dp, "dp");
      st.dp = parse_small_int(p.substr(2), where, field + ".dp", 1);
    } else if (p.starts_with("tp")) {
      once(tp, "tp");
      st.tp = parse_small_int(p.substr(2), where, field + ".tp", 1);
    } else {
      once(layers, "layers");
      st.layers = parse_small_int(p, where, field + ".layers", 1);
    }
  }
  return st;
}

// One layer choice: fields separated by '.', optionally "*N" for N equal layers.
std::vector<LayerChoice> parse_layer_item(std::string_view item, const std::string& where, const std::string& field) {
  int repeat = 1;
  if (const auto star = item.find('*'); star != std::string_view::npos) {
    repeat = parse_small_int(item.substr(star + 1), where, field + " repeat", 1);
    item = item.substr(0, star);
  }
  if (item.empty()) throw InputError(fmt::format("{}: {}: empty layer choice (e.g. tp2.sdp.full)", where, field));
  LayerChoice lc;
  std::vector<std::string> seen;
  for (const auto part : split_at(item, '.')) {
    const std::string f = core::to_lower(part);
    std::string kind = f.starts_with("tp") && f.size() > 2 && std::isdigit(static_cast<unsigned char>(f[2])) ? "tp" : f;
    if (f == "dp" || f == "sdp") kind = "data parallel";
    if (f == "consecutive" || f == "strided") kind = "tp order";
    if (f == "ckpt" || f == model::to_string(model::Recompute::none) ||
        f == model::to_string(model::Recompute::selective) || f == model::to_string(model::Recompute::full))
      kind = "recompute";
    if (std::find(seen.begin(), seen.end(), kind) != seen.end())
      throw InputError(fmt::format("{}: {}: {} given twice in '{}'", where, field, kind, item));
    seen.push_back(kind);
    if (kind == "tp") lc.tp = parse_small_int(f.substr(2), where, field + ".tp", 1);
    else if (kind == "data parallel") lc.data_parallel = f == "sdp" ? LayerDataParallel::sdp : LayerDataParallel::dp;
    else if (kind == "tp order") lc.tp_order = f == "strided" ? TpOrder::strided : TpOrder::consecutive;
    else if (kind == "recompute")
      lc.recompute = f == "ckpt" ? model::Recompute::full : model::parse_recompute(f, where + ": " + field);
    else if (f == "overlap") lc.overlap_tp = true;
    else
      throw InputError(fmt::format("{}: {}: unknown layer field '{}' (valid: tpN, dp, sdp, none, selective, full, "
                                   "ckpt, consecutive, strided, overlap)", where, field, part));
  }
  return std::vector<LayerChoice>(static_cast<std::size_t>(repeat), lc);
}

std::string layer_choice_to_cli(const LayerChoice& lc) {
  std::string out = fmt::format("tp{}", lc.tp);
  if (lc.data_parallel == LayerDataParallel::sdp) out += ".sdp";
  if (lc.recompute != model::Recompute::none) out += fmt::format(".{}", model::to_string(lc.recompute));
  if (lc.tp_order == TpOrder::strided) out += ".strided";
  if (lc.overlap_tp) out += ".overlap";
  return out;
}

nlohmann::ordered_json layer_choice_to_json(const LayerChoice& lc) {
  nlohmann::ordered_json j;
  j["tp"] = lc.tp;
  j["data_parallel"] = std::string(to_string(lc.data_parallel));
  j["recompute"] = std::string(model::to_string(lc.recompute));
  j["tp_order"] = std::string(to_string(lc.tp_order));
  j["overlap_tp"] = lc.overlap_tp;
  return j;
}

void expect_known_fields(const core::Json& obj, const core::JsonWhere& where, const std::vector<std::string>& known) {
  core::expect_object(obj, where);
  for (const auto& [k, _] : obj.items())
    if (std::find(known.begin(), known.end(), k) == known.end())
      core::fail(where.field(k), fmt::format("unknown field (valid: {})", core::join(known)));
}

LayerChoice layer_choice_from_json(const core::Json& j, const core::JsonWhere& w) {
  expect_known_fields(j, w, {"tp", "data_parallel", "recompute", "tp_order", "overlap_tp"});
  LayerChoice lc;
  lc.tp = json_small_int(j, "tp", w, 1, 0);
  if (auto d = core::opt_string(j, "data_parallel", w)) {
    if (*d != "dp" && *d != "sdp") core::fail(w.field("data_parallel"), fmt::format("'{}' is not dp or sdp", *d));
    lc.data_parallel = *d == "sdp" ? LayerDataParallel::sdp : LayerDataParallel::dp;
  }
  if (auto r = core::opt_string(j, "recompute", w)) lc.recompute = model::parse_recompute(*r, w.field("recompute").str());
  if (auto o = core::opt_string(j, "tp_order", w)) {
    if (*o != "consecutive" && *o != "strided")
      core::fail(w.field("tp_order"), fmt::format("'{}' is not consecutive or strided", *o));
    lc.tp_order = *o == "strided" ? TpOrder::strided : TpOrder::consecutive;
  }
  if (auto ov = core::opt_bool(j, "overlap_tp", w)) lc.overlap_tp = *ov;
  return lc;
}

StageChoice stage_from_json(const core::Json& j, const core::JsonWhere& w) {
  expect_known_fields(j, w, {"gpu", "devices", "dp", "tp", "layers", "layer_choices"});
  StageChoice st;
  if (auto g = core::opt_string(j, "gpu", w)) {
    if (g->empty()) core::fail(w.field("gpu"), "empty GPU type name");
    st.gpu = core::to_lower(*g);
  }
  st.devices = json_int_list(j, "devices", w, 0);
  if (st.gpu.empty() && st.devices.empty()) core::fail(w, "a stage needs \"gpu\" or \"devices\" (or both)");
  for (const char* key : {"dp", "tp", "layers"})
    if (!core::has_field(j, key)) core::fail(w.field(key), "required");
  st.dp = json_small_int(j, "dp", w, 1, 1);
  st.tp = json_small_int(j, "tp", w, 1, 1);
  st.layers = json_small_int(j, "layers", w, 1, 1);
  if (core::has_field(j, "layer_choices")) {
    const auto& arr = j.at("layer_choices");
    const auto aw = w.field("layer_choices");
    core::expect_array(arr, aw);
    if (arr.size() > static_cast<std::size_t>(kMaxListed)) core::fail(aw, "too many entries");
    for (std::size_t i = 0; i < arr.size(); ++i) st.layer_choices.push_back(layer_choice_from_json(arr[i], aw.index(i)));
  }
  return st;
}

}  // namespace

std::vector<StageChoice> parse_stages(std::string_view value, const std::string& where) {
  std::vector<StageChoice> stages;
  const auto tokens = split_at(value, '/');
  for (std::size_t i = 0; i < tokens.size(); ++i)
    stages.push_back(parse_stage(tokens[i], where, fmt::format("stages[{}]", i)));
  return stages;
}

std::vector<std::vector<LayerChoice>> parse_layer_groups(std::string_view value, const std::string& where) {
  std::vector<std::vector<LayerChoice>> groups;
  std::size_t total = 0;
  for (const auto group : split_at(value, '/')) {
    const std::string field = fmt::format("layers[{}]", groups.size());
    groups.emplace_back();
    if (group == "-") continue;  // this stage's layers follow the stage
    for (const auto item : split_at(group, '+')) {
      auto more = parse_layer_item(item, where, field);
      total += more.size();
      if (total > static_cast<std::size_t>(kMaxListed))
        throw InputError(fmt::format("{}: {}: more than {} layer choices", where, field, kMaxListed));
      groups.back().insert(groups.back().end(), more.begin(), more.end());
    }
  }
  return groups;
}

void attach_layer_groups(std::vector<StageChoice>& stages, std::vector<std::vector<LayerChoice>> groups,
                         const std::string& where) {
  if (stages.empty())
    throw InputError(fmt::format("{}: layers: needs stages= (per-layer choices belong to the stages of a per-stage "
                                 "strategy; write a uniform one as stages that are all alike)", where));
  if (groups.size() != stages.size())
    throw InputError(fmt::format("{}: layers: {} '/'-separated groups for {} stages (one per stage, '-' = the "
                                 "stage's own choice)", where, groups.size(), stages.size()));
  for (std::size_t i = 0; i < stages.size(); ++i) stages[i].layer_choices = std::move(groups[i]);
}

std::string stages_to_cli(const std::vector<StageChoice>& stages) {
  std::string out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    const auto& st = stages[i];
    if (i) out += '/';
    out += st.gpu;
    if (!st.gpu.empty() && !st.devices.empty()) out += '@';
    out += join_ints(st.devices, '+');
    out += fmt::format(":dp{}:tp{}:{}", st.dp, st.tp, st.layers);
  }
  return out;
}

std::string layer_groups_to_cli(const std::vector<StageChoice>& stages) {
  bool any = false;
  for (const auto& st : stages) any = any || !st.layer_choices.empty();
  if (!any) return "";
  std::string out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (i) out += '/';
    const auto& lcs = stages[i].layer_choices;
    if (lcs.empty()) out += '-';
    for (std::size_t j = 0; j < lcs.size();) {  // runs of equal choices as "choice*N"
      std::size_t k = j + 1;
      while (k < lcs.size() && lcs[k] == lcs[j]) ++k;
      if (j) out += '+';
      out += layer_choice_to_cli(lcs[j]);
      if (k - j > 1) out += fmt::format("*{}", k - j);
      j = k;
    }
  }
  return out;
}

nlohmann::ordered_json stages_to_json(const std::vector<StageChoice>& stages) {
  auto arr = nlohmann::ordered_json::array();
  for (const auto& st : stages) {
    nlohmann::ordered_json j;
    if (!st.gpu.empty()) j["gpu"] = st.gpu;
    if (!st.devices.empty()) j["devices"] = st.devices;
    j["dp"] = st.dp;
    j["tp"] = st.tp;
    j["layers"] = st.layers;
    if (!st.layer_choices.empty()) {
      auto lcs = nlohmann::ordered_json::array();
      for (const auto& lc : st.layer_choices) lcs.push_back(layer_choice_to_json(lc));
      j["layer_choices"] = std::move(lcs);
    }
    arr.push_back(std::move(j));
  }
  return arr;
}

std::vector<StageChoice> stages_from_json(const core::Json& arr, const core::JsonWhere& where) {
  core::expect_array(arr, where);
  if (arr.empty()) core::fail(where, "needs at least one stage");
  if (arr.size() > static_cast<std::size_t>(kMaxListed)) core::fail(where, "too many stages");
  std::vector<StageChoice> stages;
  for (std::size_t i = 0; i < arr.size(); ++i) stages.push_back(stage_from_json(arr[i], where.index(i)));
  return stages;
}

}  // namespace detail
}  // namespace strata::cost
