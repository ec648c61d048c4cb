// cost/sbp: AutoDDL's Split / Broadcast / Partial-sum (SBP) tensor distributions over a hierarchical device mesh,
// the SBP matmul with its (p0, p1, p2) factorisation and 1D/2D/2.5D/3D layouts, and the boxing (redistribution)
// collectives between distributions: which collective, over which mesh axis, how many bytes, and its time on the
// cluster's real links (priced with cost/comm, intra-node vs inter-node axes).
// Source: AutoDDL (seed_004) §4.1–4.4 and notes_004 §2–4; design decisions in docs/sbp.md.
#pragma once
#include <array>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/cost/comm.hpp"
#include "strata/hw/cluster.hpp"

namespace strata::cost {

// ---- SBP primitives (AutoDDL §4.1, Fig. 5) ------------------------------------------------------------------
enum class SbpKind { split, broadcast, partial };
struct Sbp {
  SbpKind kind = SbpKind::broadcast;
  int dim = 0;  // the split dimension (0 = rows, 1 = columns) when kind == split
  bool operator==(const Sbp&) const = default;
};
inline constexpr Sbp kS0{SbpKind::split, 0}, kS1{SbpKind::split, 1}, kB{SbpKind::broadcast, 0},
    kP{SbpKind::partial, 0};
std::string to_string(Sbp s);  // "S0", "S1", "B", "P"

// One mesh axis: `gpus` GPUs on each of `nodes` nodes (AutoDDL §4.2.3 writes the tuple (p, p′)). An axis with
// nodes == 1 lies inside a node and its collectives run on NVLink/NVSwitch; any other crosses the NICs.
struct MeshAxis {
  int nodes = 1, gpus = 1;
  int size() const { return nodes * gpus; }
  bool intra_node() const { return nodes == 1; }
  bool operator==(const MeshAxis&) const = default;
};
std::string to_string(MeshAxis a);  // "8" on one node, "2x16" = 2 nodes × 16 GPUs each

// An nd-SBP distribution of a 2-D tensor: one SBP per mesh axis (AutoDDL §4.1, Listing 1: (S1:2, S0:3, B:4)).
struct NdSbpAxis {
  Sbp sbp;
  MeshAxis axis;
  bool operator==(const NdSbpAxis&) const = default;
};
using NdSbp = std::vector<NdSbpAxis>;
std::string to_string(const NdSbp& d);  // "(S0:4, B:2x8, S1:2)"
// Elements one device holds of a rows×cols matrix distributed as `d`: splits divide, B and P keep.
// InputError naming `where` when a split dimension is not 0 or 1.
double local_elements(double rows, double cols, const NdSbp& d, const std::string& where = "sbp");

// One boxing collective. Sizes follow AutoDDL Table 2 and cost/comm: `buffer_bytes` is the reduce-scatter's input
// and every other collective's output, per device; `moved_bytes` what each device sends ((g−1)/g·n, all-reduce
// 2(g−1)/g·n). Every group of the axis runs it at the same time.
struct BoxingStep {
  Collective kind = Collective::allgather;  // allgather, reduce_scatter, allreduce, all_to_all
  MeshAxis group;
  double buffer_bytes = 0, moved_bytes = 0;
  double time_s = 0;        // priced on the cluster (0 until priced)
  const char* what = "";    // e.g. "P→S1 over p2 (sum the partial products)"
};
double moved_bytes_of(Collective kind, int group_size, double buffer_bytes);

// Same-mesh boxing (notes_004 §2.2): the collectives turning `from` into `to` over the same mesh axes: P→B
// all-reduce, P→S reduce-scatter, S(i)→S(j) all-to-all, S→B all-gather, B→S / B→P / S→P local (free). Applied
// in AutoDDL §4.3's order — partial axes first, then split changes, then gathers — so data shrinks before it
// grows. InputError when the two have different mesh axes or an impossible transition (P→P is kept).
std::vector<BoxingStep> boxing(const NdSbp& from, const NdSbp& to, double rows, double cols, double elem_bytes,
                               const std::string& where = "sbp");

// ---- pricing on a cluster ------------------------------------------------------------------------------------
// A homogeneous cluster as a mesh of `nodes` × `gpus_per_node`. A mesh axis (n, g) is priced as a group of g GPUs
// on each of n nodes (cost/comm's functions on those real devices); the other groups of the axis run at once, so
// groups leaving a node through one NIC share it (concurrent_groups_per_nic). Caches one GroupBandwidth per axis
// shape (not thread-safe; one SbpComm per thread).
struct SbpComm {
  const hw::Cluster* cluster = nullptr;
  int nodes = 1, gpus_per_node = 1;
  CommOptions options;
  std::vector<int> node_divisors, gpu_divisors;  // ascending
  mutable std::map<std::pair<int, int>, GroupBandwidth> cache;
  int devices() const { return nodes * gpus_per_node; }
};
// InputError naming `where` when the nodes have different GPU counts or types (AutoDDL's mesh is regular).
SbpComm make_sbp_comm(const hw::Cluster& c, const std::string& where = "sbp", const CommOptions& o = {});
double sbp_collective_time(const SbpComm& comm, Collective kind, MeshAxis axis, double bytes);
void price_steps(std::vector<BoxingStep>& steps, const SbpComm& comm);

// ---- the SBP matmul (AutoDDL §4.2.2, Fig. 6) ------------------------------------------------------------------
// O = I·W (I rows×k, W k×n) on p = p0·p1·p2 devices, each p_i a mesh axis:
//   I (S0:p0, B:p1, S1:p2),  W (B:p0, S1:p1, S0:p2),  O (S0:p0, S1:p1, P:p2); the local GEMM needs no communication.
// p1 = p2 = 1 is data parallelism; (d, t, 1) is Megatron's column-parallel and (d, 1, t) its row-parallel layer.
struct MatmulLayout {
  std::array<MeshAxis, 3> axis;
  int p(int i) const { return axis[static_cast<std::size_t>(i)].size(); }
  int devices() const { return p(0) * p(1) * p(2); }
  bool operator==(const MatmulLayout&) const = default;
};
NdSbp input_sbp(const MatmulLayout& l);
NdSbp weight_sbp(const MatmulLayout& l);
NdSbp output_sbp(const MatmulLayout& l);
std::string to_string(const MatmulLayout& l);  // "(4,8,2)"; axes spanning nodes as "2x16"

// Layout classes (docs/sbp.md): DP (p1 = p2 = 1); 1D column / row (p0 = 1, one of p1, p2 > 1: Megatron TP); 2D
// DP×column / DP×row (Megatron TP + DP) and 2D weight-split (p0 = 1: no replicated weight, SUMMA-like); with all
// three > 1, 3D when max/min ≤ 2 (the cube of §4.4.2) and 2.5D otherwise (replication c = p0 over a 2D mesh).
enum class LayoutClass { single, dp, column_1d, row_1d, dp_column, dp_row, weight_2d, layout_2_5d, layout_3d };
std::string_view to_string(LayoutClass c);
LayoutClass classify(const MatmulLayout& l);

// Every layout of a nodes × gpus mesh: ordered triples of node factors × ordered triples of GPU factors,
// deterministic order (DP first). Count for 2^a nodes and 2^b GPUs: (a+1)(a+2)/2 · (b+1)(b+2)/2.
std::vector<MatmulLayout> enumerate_layouts(int nodes, int gpus);

// Cost of one boxing path (forward only; the backward mirrors each collective with the same bytes, AutoDDL §4.3,
// so a boundary costs twice this per micro-batch).
struct BoxingPath {
  std::vector<BoxingStep> steps;
  double time_s = 0, moved_bytes = 0;
  bool feasible = true;  // false: no flat layout with the attention heads constraint exists
};
// From one matmul's output (S0:p0, S1:p1, P:p2), rows×out_cols, to the next matmul's input (S0:p0′, B:p1′,
// S1:p2′), rows×in_cols (= out_cols unless an attention core maps QKV to its output) (AutoDDL §4.3):
// reduce-scatter over p2 (into dim 1, or dim 0), an all-to-all per hierarchy level where the two flat (S0:a, S1:b)
// layouts differ, all-gather over p1′ (along dim 1, or dim 0) — the cheapest of these paths. heads > 0: an attention core runs in between on a flat layout whose dim-1 split divides `heads`.
BoxingPath boundary_boxing(const MatmulLayout& from, const MatmulLayout& to, double rows, double out_cols,
                           double in_cols, double elem_bytes, int heads, const SbpComm& comm);
// The last matmul's output made split (AutoDDL §4.2: every layer's output is in an S state): RS over p2.
BoxingPath output_boxing(const MatmulLayout& l, double rows, double cols, double elem_bytes, const SbpComm& comm);
// Weight-gradient sync (AutoDDL §4.4.1): all-reduce over p0 of the local gradient k·n/(p1·p2)·grad_bytes.
BoxingStep weight_sync(const MatmulLayout& l, double in, double out, double grad_bytes, const SbpComm& comm);

}  // namespace strata::cost
