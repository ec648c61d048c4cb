// cost/strategy_keys_memory: the accessors of the engines' memory-knob keys (gradbuf, lpweights, offload; rows of
// the key table in strategy_keys.cpp) and the keys a --strategy text names (strategy_text_keys).
#include <fmt/format.h>

#include <algorithm>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"
#include "strata/cost/strategy_keys.hpp"
#include "strategy_text.hpp"

namespace strata::cost {
namespace detail {

using J = nlohmann::ordered_json;

void parse_gradbuf(Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
  const std::string t = core::to_lower(v);
  if (t != "fp32" && t != "bf16")
    throw core::InputError(fmt::format("{}: gradbuf: '{}' is not fp32 or bf16", where, core::printable(std::string(v))));
  s.grad_buffer_bf16 = t == "bf16";
}
std::optional<std::string> gradbuf_text(const Strategy& s) {
  return s.grad_buffer_bf16 ? std::optional<std::string>("bf16") : std::nullopt;  // fp32 (the default) left out
}
void write_gradbuf_json(const Strategy& s, J& j) {
  if (s.grad_buffer_bf16) j["grad_buffer"] = "bf16";
}
void read_gradbuf_json(const core::Json& j, const core::JsonWhere& w, Strategy& s) {
  if (auto o = core::opt_string(j, "grad_buffer", w)) {
    if (*o != "fp32" && *o != "bf16") core::fail(w.field("grad_buffer"), "must be fp32 or bf16");
    s.grad_buffer_bf16 = *o == "bf16";
  }
}

void parse_lpweights(Strategy& s, std::string_view, std::string_view v, const std::string& where, KeyParseState&) {
  const std::string t = core::to_lower(v);
  if (t == "on" || t == "true" || t == "1" || t == "yes") s.low_precision_weights = true;
  else if (t == "off" || t == "false" || t == "0" || t == "no") s.low_precision_weights = false;
  else throw core::InputError(fmt::format("{}: lpweights: '{}' is not on/off", where, core::printable(std::string(v))));
}
std::optional<std::string> lpweights_text(const Strategy& s) {
  return s.low_precision_weights ? std::optional<std::string>("on") : std::nullopt;
}
void write_lpweights_json(const Strategy& s, J& j) {
  if (s.low_precision_weights) j["low_precision_weights"] = true;
}
void read_lpweights_json(const core::Json& j, const core::JsonWhere& w, Strategy& s) {
  if (auto o = core::opt_bool(j, "low_precision_weights", w)) s.low_precision_weights = *o;
}

std::optional<std::string> offload_text(const Strategy& s) {
  if (s.activation_offload_layers == 0) return std::nullopt;
  return std::to_string(s.activation_offload_layers);
}
void write_offload_json(const Strategy& s, J& j) {
  if (s.activation_offload_layers != 0) j["activation_offload_layers"] = s.activation_offload_layers;
}
void read_offload_json(const core::Json& j, const core::JsonWhere& w, Strategy& s) {
  s.activation_offload_layers = json_small_int(j, "activation_offload_layers", w, 0, 0);
}

}  // namespace detail

std::set<std::string> strategy_text_keys(std::string_view text) {
  std::set<std::string> out;
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, end - start);
    std::string_view name = item.substr(0, item.find('='));
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    const std::string key = core::to_lower(name);
    for (const auto& k : strategy_keys())
      if (k.name == key || k.python_name == key) out.insert(std::string(k.name));
    start = end + 1;
  }
  return out;
}

}  // namespace strata::cost
