// hw/hardware: the hardware catalog — GPU types (peak FLOP/s per dtype, memory, memory bandwidth), link types
// (bandwidth one direction, latency) and node presets — loaded from data/gpus.json, data/links.json and
// data/nodes.json (embedded). Each number's source is cited in those files; the format is in docs/hardware.md.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/core/json.hpp"

namespace strata::hw {

// Training dtypes (the precision recipe of data/precision_recipes.json picks what each means for memory and time)
// and catalog-only formats. fp8: per-tensor scaled FP8 (Hopper and newer); mxfp8: OCP MX block-scaled FP8 (32
// elements share an E8M0 scale; Blackwell, MI35x); fp4: block-scaled 4-bit E2M1 (NVFP4: 16 elements share an E4M3
// scale, plus a per-tensor fp32 scale; Blackwell); fp6: a catalog peak only (no engine trains in FP6).
enum class Dtype { fp32, tf32, fp16, bf16, fp8, mxfp8, fp6, fp4 };
inline constexpr Dtype kAllDtypes[] = {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16,
                                       Dtype::fp8,  Dtype::mxfp8, Dtype::fp6, Dtype::fp4};
std::string_view to_string(Dtype d);
// Parses "fp32", "tf32", "fp16", "bf16", "fp8", "mxfp8", "fp6", "fp4" (also "nvfp4" for fp4); InputError naming
// `where` and the valid names otherwise.
Dtype parse_dtype(std::string_view text, const std::string& where);
// Bytes of one element of this dtype (tf32 is stored as 4 bytes; block-scaled formats include their scales:
// mxfp8 1 + 1/32, fp6 0.75 + 1/32, fp4 0.5 + 1/16).
double dtype_bytes(Dtype d);
// The block-scaled formats (mxfp8, fp6, fp4) run only on a GPU that lists them: no fallback, a plan in them on a
// GPU without them is refused (cost::complete_strategy; docs/hardware.md §The peak fallback rule).
bool needs_native_support(Dtype d);

struct GpuSpec {
  std::string name;                       // catalog key, lower-case: "a100-80gb", "v100-16gb", "t4", "cpu"
  std::string display_name;               // "NVIDIA A100 SXM4 80GB"
  std::string vendor;                     // "nvidia", "amd", "cpu"
  double memory_bytes = 0;                // device memory capacity
  double memory_bw_bytes_per_s = 0;       // HBM/GDDR bandwidth
  std::map<Dtype, double> peak_flops;     // dense peak FLOP/s per supported dtype (fp32 always present)
  std::string source;                     // citation
  // Peak FLOP/s for `d`; when the type lacks `d` (e.g. fp8 on A100, bf16 on V100) falls back to the best
  // supported lower precision path in the order fp8→fp16/bf16→tf32→fp32 (documented in docs/hardware.md; the
  // block-scaled mxfp8/fp6/fp4 fall back the way fp8 does here, but a strategy in them is refused on such a GPU):
  //   fp8 → max(bf16, fp16) → tf32 → fp32;  bf16 → fp16 → tf32 → fp32;  fp16 → bf16 → tf32 → fp32;
  //   tf32 → fp32.  fp32 is required of every type, so the chain always ends.
  double peak(Dtype d) const;
  // The dtype whose path runs `d` on this type under that rule: `d` itself when native, else the fallback (so
  // peak(d) = peak_flops[runs_as(d)]); the CLI names it when a plan's dtype is not native (cli/io.hpp).
  Dtype runs_as(Dtype d) const;
  // True when the type lists `d` itself (no fallback).
  bool supports(Dtype d) const { return peak_flops.count(d) != 0; }
};

struct LinkSpec {
  std::string name;                       // "nvlink3", "pcie3", "ib-hdr", "eth-25g", "nvswitch3"...
  double bw_bytes_per_s = 0;              // one direction, per device (per port for NICs)
  double latency_s = 0;
  std::string source;
  std::string description;                // "NVLink 3 (A100): 12 links x 25 GB/s"
};

// A node type: GPUs of one type with an intra-node interconnect and NICs for inter-node traffic.
struct NodeSpec {
  std::string name;                       // "p3.8xlarge", "dgx-a100", ...
  std::string gpu;                        // GpuSpec name
  int gpus = 0;                           // GPUs per node
  std::string intra_link;                 // LinkSpec name used between any two GPUs of the node
  int nics = 1;                           // number of NICs
  std::string nic_link;                   // LinkSpec name of each NIC
  // Optional explicit GPU×GPU bandwidth matrix (bytes/s) inside the node, overriding intra_link's bandwidth
  // (intra_link still gives the latency). Diagonal ignored; pair bandwidth = min of both directions.
  std::optional<std::vector<std::vector<double>>> intra_bw_matrix;
  std::string source;
  // CPU cores the node's devices share, for a host whose "devices" are executor processes on CPU cores (the
  // cpu-local cluster that `strata profile` writes); 0 = every device computes on its own (GPUs). When the node
  // runs more ranks than cores, the cost model bounds its compute throughput by the cores (cost/host.hpp).
  int cpu_cores = 0;
  // GPUs per host (CPU tray) inside the node. strata's node is the scale-up domain: the GPUs that reach each other
  // over NVLink / Infinity Fabric (8 in an HGX or MI3xx node; 72 in a GB200/GB300 NVL72 rack, 18 trays of 4). The
  // hosts do not change GPU↔GPU bandwidth (the NVLink switches join every GPU of the domain at the same rate);
  // they are the third tier `describe` shows. 0 = one host holds all the node's GPUs. Must divide `gpus`.
  int gpus_per_host = 0;
  int hosts() const { return gpus_per_host > 0 ? gpus / gpus_per_host : 1; }
};

struct Catalog {
  std::vector<GpuSpec> gpus;
  std::vector<LinkSpec> links;
  std::vector<NodeSpec> nodes;
  // Lookups by name (case-insensitive); InputError "<where>: unknown GPU type 'x' (valid: ...)".
  const GpuSpec& gpu(std::string_view name, const std::string& where = "gpu") const;
  const LinkSpec& link(std::string_view name, const std::string& where = "link") const;
  const NodeSpec& node(std::string_view name, const std::string& where = "node type") const;
  // Non-throwing lookups (nullptr when absent).
  const GpuSpec* find_gpu(std::string_view name) const;
  const LinkSpec* find_link(std::string_view name) const;
  const NodeSpec* find_node(std::string_view name) const;
  // Sorted names, for "valid: ..." messages and listings.
  std::vector<std::string> gpu_names() const;
  std::vector<std::string> link_names() const;
  std::vector<std::string> node_names() const;
};

// The built-in catalog parsed from the embedded data files (parsed once per call; callers keep it).
Catalog builtin_catalog();

// Parsers of one catalog entry in the format of data/*.json (docs/hardware.md); cluster files use the same
// format for inline definitions. Names are lower-cased. `require_source` is true for the built-in files.
GpuSpec gpu_from_json(const core::Json& j, const core::JsonWhere& where, bool require_source);
LinkSpec link_from_json(const core::Json& j, const core::JsonWhere& where, bool require_source);
// Checks that gpu/intra_link/nic_link name entries of `catalog` and the matrix is gpus×gpus with positive pairs.
NodeSpec node_from_json(const core::Json& j, const core::JsonWhere& where, const Catalog& catalog,
                        bool require_source);
// A square bandwidth matrix from `key` (bytes/s) or `key`_gb_per_s (GB/s); nullopt when neither is present.
// InputError when it is not n×n or an off-diagonal entry is not > 0.
std::optional<std::vector<std::vector<double>>> bw_matrix_from_json(const core::Json& obj, std::string_view key,
                                                                    std::size_t n, const core::JsonWhere& where);

// JSON views for `--json` listings (SI units).
core::OrderedJson to_json(const GpuSpec& g);
core::OrderedJson to_json(const LinkSpec& l);
core::OrderedJson to_json(const NodeSpec& n);
// The listings of `strata hardware --json` ({gpus, links}) and `strata clusters --json` (the node presets with
// their links' bandwidths), also the Python API's strata.hardware() / strata.clusters(). hw/catalog_listing.cpp.
core::OrderedJson catalog_listing_json(const Catalog& catalog);
core::OrderedJson node_presets_json(const Catalog& catalog);

}  // namespace strata::hw
