// export/common: helpers shared by the engine writers and readers — chunk block counts, Megatron's
// first/last-stage split rule, a shell-like tokenizer and integer parsing with one-line errors.
#include <fmt/format.h>

#include <charconv>

#include "internal.hpp"
#include "strata/core/error.hpp"

namespace strata::exporter::detail {

std::vector<int> blocks_per_chunk(const cost::Strategy& s) {
  std::vector<int> b = s.split;
  if (b.empty()) return b;
  b.front() -= 1;  // the embedding
  b.back() -= 1;   // the LM head
  return b;
}

std::string memory_knob_problem(const cost::Strategy& s, std::string_view engine) {
  if (s.grad_buffer_bf16)
    return fmt::format("gradbuf=bf16 (a bf16 gradient buffer: Megatron's --grad-reduce-in-bf16; no {} key is written "
                       "for it)", engine);
  if (s.low_precision_weights)
    return fmt::format("lpweights=on (weights kept in {}: Megatron's --fp8/--fp4-param-gather; no {} key is written for "
                       "it)", hw::to_string(s.dtype), engine);
  if (s.activation_offload_layers > 0)
    return fmt::format("offload={} (Megatron's CPU activation offloading; {} has no such option)",
                       s.activation_offload_layers, engine);
  return "";
}

void clear_memory_knobs(cost::Strategy& s) {
  s.grad_buffer_bf16 = false;
  s.low_precision_weights = false;
  s.activation_offload_layers = 0;
}

std::vector<int> split_from_blocks(std::vector<int> blocks) {
  if (blocks.empty()) return blocks;
  blocks.front() += 1;
  blocks.back() += 1;
  return blocks;
}

// Megatron (transformer_config.py, rule uneven_first_last): first/last > 0 and divisible by vpp; the remaining
// layers divide evenly over the middle stages, each middle stage's share divisible by vpp; 0 = not given.
std::vector<int> megatron_stage_blocks(int layers, int pp, int v, int first, int last) {
  if (pp < 1 || v < 1 || layers < 1) return {};
  std::vector<int> stage(static_cast<std::size_t>(pp), 0);
  int rest = layers, rest_stages = pp;
  if (first > 0) {
    if (pp < 2) return {};
    stage.front() = first;
    rest -= first;
    --rest_stages;
  }
  if (last > 0) {
    if (pp < 2) return {};
    stage.back() = last;
    rest -= last;
    --rest_stages;
  }
  if (rest < 0) return {};
  if (rest_stages == 0) {
    if (rest != 0) return {};
  } else {
    if (rest % rest_stages != 0 || rest / rest_stages < 1) return {};
    const int share = rest / rest_stages;
    for (int st = 0; st < pp; ++st)
      if (!((st == 0 && first > 0) || (st == pp - 1 && last > 0))) stage[static_cast<std::size_t>(st)] = share;
  }
  std::vector<int> chunks;
  for (int vr = 0; vr < v; ++vr)
    for (int st = 0; st < pp; ++st) {
      if (stage[static_cast<std::size_t>(st)] % v != 0) return {};
      chunks.push_back(stage[static_cast<std::size_t>(st)] / v);
    }
  return chunks;
}

std::vector<std::string> shell_tokens(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_token = false;
  char quote = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (quote) {
      if (ch == quote) quote = 0;
      else cur += ch;
      continue;
    }
    if (ch == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;
      continue;
    }
    if (ch == '#' && !in_token) {  // a comment runs to the end of the line
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (in_token) out.push_back(cur);
      cur.clear();
      in_token = false;
      continue;
    }
    in_token = true;
    if (ch == '\'' || ch == '"') quote = ch;
    else cur += ch;
  }
  if (in_token) out.push_back(cur);
  return out;
}

std::int64_t parse_int(std::string_view text, const std::string& origin, std::string_view name, std::int64_t min) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty())
    throw core::InputError(fmt::format("{}: {}: expected an integer, got '{}'", origin, name, text));
  if (v < min) throw core::InputError(fmt::format("{}: {}: must be >= {}, got {}", origin, name, min, v));
  if (v > (std::int64_t{1} << 40))
    throw core::InputError(fmt::format("{}: {}: value {} is too large", origin, name, v));
  return v;
}

}  // namespace strata::exporter::detail
