// hw/hardware: dtypes, the peak-FLOP/s fallback rule and catalog lookups (see include/strata/hw/hardware.hpp).
#include "strata/hw/hardware.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::hw {

std::string_view to_string(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::fp16: return "fp16";
    case Dtype::bf16: return "bf16";
    case Dtype::fp8: return "fp8";
    case Dtype::mxfp8: return "mxfp8";
    case Dtype::fp6: return "fp6";
    case Dtype::fp4: return "fp4";
  }
  return "fp32";
}

bool needs_native_support(Dtype d) { return d == Dtype::mxfp8 || d == Dtype::fp6 || d == Dtype::fp4; }

Dtype parse_dtype(std::string_view text, const std::string& where) {
  const std::string t = core::to_lower(text);
  for (Dtype d : kAllDtypes) {
    if (t == to_string(d)) return d;
  }
  if (t == "nvfp4") return Dtype::fp4;  // NVIDIA's name for its block-scaled 4-bit recipe
  throw core::InputError(fmt::format("{}: unknown dtype '{}' (valid: fp32, tf32, fp16, bf16, fp8, mxfp8, fp6, fp4)",
                                     where, core::printable(std::string(text))));
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp32: case Dtype::tf32: return 4;
    case Dtype::fp16: case Dtype::bf16: return 2;
    case Dtype::fp8: return 1;
    // OCP Microscaling spec v1.0 (2023) §5: one 8-bit E8M0 scale per block of 32 elements.
    case Dtype::mxfp8: return 1.0 + 1.0 / 32;
    case Dtype::fp6: return 0.75 + 1.0 / 32;
    // NVFP4 (NVIDIA, "Pretraining LLMs with NVFP4", arXiv 2509.25149 §2): one E4M3 scale per 16 elements.
    case Dtype::fp4: return 0.5 + 1.0 / 16;
  }
  return 4;
}

Dtype GpuSpec::runs_as(Dtype d) const {
  // Fallback chain documented in hardware.hpp / docs/hardware.md: a type without a dtype's fast path runs it on
  // the next lower-precision path it has (bf16 and fp16 are one level: the same tensor-core rate everywhere).
  auto get = [&](Dtype x) {
    auto it = peak_flops.find(x);
    return it == peak_flops.end() ? 0.0 : it->second;
  };
  if (get(d) > 0) return d;
  switch (d) {
    case Dtype::mxfp8: case Dtype::fp6: case Dtype::fp4:
      if (get(Dtype::fp8) > 0) return Dtype::fp8;
      [[fallthrough]];
    case Dtype::fp8:
      if (get(Dtype::bf16) > 0 || get(Dtype::fp16) > 0)
        return get(Dtype::fp16) > get(Dtype::bf16) ? Dtype::fp16 : Dtype::bf16;
      break;
    case Dtype::bf16:
      if (get(Dtype::fp16) > 0) return Dtype::fp16;
      break;
    case Dtype::fp16:
      if (get(Dtype::bf16) > 0) return Dtype::bf16;
      break;
    case Dtype::tf32: case Dtype::fp32:
      break;
  }
  if (d != Dtype::fp32 && get(Dtype::tf32) > 0) return Dtype::tf32;
  return Dtype::fp32;
}

double GpuSpec::peak(Dtype d) const {
  auto it = peak_flops.find(d);  // the native case with one lookup (peak is on the cost model's path)
  if (it == peak_flops.end() || it->second <= 0) it = peak_flops.find(runs_as(d));
  return it == peak_flops.end() ? 0.0 : it->second;
}

namespace {
template <class T>
const T* find_by_name(const std::vector<T>& items, std::string_view name) {
  const std::string key = core::to_lower(name);
  for (const auto& it : items) {
    if (it.name == key) return &it;
  }
  return nullptr;
}
template <class T>
std::vector<std::string> sorted_names(const std::vector<T>& items) {
  std::vector<std::string> names;
  names.reserve(items.size());
  for (const auto& it : items) names.push_back(it.name);
  std::sort(names.begin(), names.end());
  return names;
}
[[noreturn]] void unknown(const std::string& where, const char* what, std::string_view name,
                          const std::vector<std::string>& valid) {
  throw core::InputError(
      fmt::format("{}: unknown {} '{}' (valid: {})", where, what, std::string(name), core::join(valid)));
}
}  // namespace

const GpuSpec* Catalog::find_gpu(std::string_view name) const { return find_by_name(gpus, name); }
const LinkSpec* Catalog::find_link(std::string_view name) const { return find_by_name(links, name); }
const NodeSpec* Catalog::find_node(std::string_view name) const { return find_by_name(nodes, name); }
std::vector<std::string> Catalog::gpu_names() const { return sorted_names(gpus); }
std::vector<std::string> Catalog::link_names() const { return sorted_names(links); }
std::vector<std::string> Catalog::node_names() const { return sorted_names(nodes); }

const GpuSpec& Catalog::gpu(std::string_view name, const std::string& where) const {
  if (const auto* g = find_gpu(name)) return *g;
  unknown(where, "GPU type", name, gpu_names());
}
const LinkSpec& Catalog::link(std::string_view name, const std::string& where) const {
  if (const auto* l = find_link(name)) return *l;
  unknown(where, "link", name, link_names());
}
const NodeSpec& Catalog::node(std::string_view name, const std::string& where) const {
  if (const auto* n = find_node(name)) return *n;
  unknown(where, "node type", name, node_names());
}

}  // namespace strata::hw
