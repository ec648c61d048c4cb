// cost/sbp_matmul: AutoDDL's SBP matmul (seed_004 §4.2.2) — its I/W/O distributions, layout classes, the
// enumeration of (p0, p1, p2) over a hierarchical mesh, the boxing between consecutive matmuls (§4.3) and the
// weight-gradient sync (§4.4.1). See sbp.hpp and docs/sbp.md.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "strata/cost/sbp.hpp"

namespace strata::cost {

NdSbp input_sbp(const MatmulLayout& l) { return {{kS0, l.axis[0]}, {kB, l.axis[1]}, {kS1, l.axis[2]}}; }
NdSbp weight_sbp(const MatmulLayout& l) { return {{kB, l.axis[0]}, {kS1, l.axis[1]}, {kS0, l.axis[2]}}; }
NdSbp output_sbp(const MatmulLayout& l) { return {{kS0, l.axis[0]}, {kS1, l.axis[1]}, {kP, l.axis[2]}}; }

std::string to_string(const MatmulLayout& l) {
  return fmt::format("({},{},{})", to_string(l.axis[0]), to_string(l.axis[1]), to_string(l.axis[2]));
}

std::string_view to_string(LayoutClass c) {
  switch (c) {
    case LayoutClass::single: return "single device";
    case LayoutClass::dp: return "DP";
    case LayoutClass::column_1d: return "1D column (Megatron TP)";
    case LayoutClass::row_1d: return "1D row (Megatron TP)";
    case LayoutClass::dp_column: return "2D DP x column (Megatron TP+DP)";
    case LayoutClass::dp_row: return "2D DP x row (Megatron TP+DP)";
    case LayoutClass::weight_2d: return "2D weight-split (no replica)";
    case LayoutClass::layout_2_5d: return "2.5D";
    case LayoutClass::layout_3d: return "3D";
  }
  return "DP";
}

LayoutClass classify(const MatmulLayout& l) {
  const int p0 = l.p(0), p1 = l.p(1), p2 = l.p(2);
  if (p0 == 1 && p1 == 1 && p2 == 1) return LayoutClass::single;
  if (p1 == 1 && p2 == 1) return LayoutClass::dp;
  if (p0 == 1) return p2 == 1 ? LayoutClass::column_1d : p1 == 1 ? LayoutClass::row_1d : LayoutClass::weight_2d;
  if (p2 == 1) return LayoutClass::dp_column;
  if (p1 == 1) return LayoutClass::dp_row;
  const int hi = std::max({p0, p1, p2}), lo = std::min({p0, p1, p2});
  return hi <= 2 * lo ? LayoutClass::layout_3d : LayoutClass::layout_2_5d;
}

namespace {

// Ordered triples (a, b, c) with a·b·c = n, a descending then b ascending (so (n, 1, 1) comes first).
std::vector<std::array<int, 3>> ordered_triples(int n) {
  std::vector<std::array<int, 3>> out;
  for (int a = n; a >= 1; --a) {
    if (n % a) continue;
    const int rest = n / a;
    for (int b = 1; b <= rest; ++b)
      if (rest % b == 0) out.push_back({a, b, rest / b});
  }
  return out;
}

// A flat 2-D split (S0:a, S1:p/a) between layers, a = an nodes-factor × ag GPU-factor (AutoDDL §4.3's
// intermediate states (S0:p0, S1:p1·p2)).
struct Flat {
  int an = 1, ag = 1;
};

// All-to-all from one flat split to another, one per hierarchy level whose S0 factor changes: the r devices
// exchanging data differ only in that level's digit (r = the ratio of the two factors; the whole level when
// neither divides the other). Each sends (r−1)/r of its local block.
double flat_a2a(Flat from, Flat to, double local_bytes, const SbpComm& comm, std::vector<BoxingStep>* steps) {
  double t = 0;
  auto level = [&](int x, int y, int whole, bool nodes) {
    if (x == y) return;
    const int hi = std::max(x, y), lo = std::min(x, y);
    const int r = hi % lo == 0 ? hi / lo : whole;
    const MeshAxis g = nodes ? MeshAxis{r, 1} : MeshAxis{1, r};
    const double time = sbp_collective_time(comm, Collective::all_to_all, g, local_bytes);
    t += time;
    if (steps) {
      BoxingStep s;
      s.kind = Collective::all_to_all;
      s.group = g;
      s.buffer_bytes = local_bytes;
      s.moved_bytes = moved_bytes_of(Collective::all_to_all, r, local_bytes);
      s.time_s = time;
      s.what = nodes ? "S0/S1 re-split across nodes (all-to-all)" : "S0/S1 re-split inside nodes (all-to-all)";
      steps->push_back(s);
    }
  };
  level(from.an, to.an, comm.nodes, true);
  level(from.ag, to.ag, comm.gpus_per_node, false);
  return t;
}

BoxingStep priced(Collective kind, MeshAxis axis, double bytes, const char* what, const SbpComm& comm) {
  BoxingStep s;
  s.kind = kind;
  s.group = axis;
  s.buffer_bytes = bytes;
  s.moved_bytes = moved_bytes_of(kind, axis.size(), bytes);
  s.time_s = sbp_collective_time(comm, kind, axis, bytes);
  s.what = what;
  return s;
}

void add_totals(BoxingPath& p) {
  p.time_s = 0;
  p.moved_bytes = 0;
  for (const auto& s : p.steps) {
    p.time_s += s.time_s;
    p.moved_bytes += s.moved_bytes;
  }
}

}  // namespace

std::vector<MatmulLayout> enumerate_layouts(int nodes, int gpus) {
  std::vector<MatmulLayout> out;
  const auto nt = ordered_triples(nodes), gt = ordered_triples(gpus);
  out.reserve(nt.size() * gt.size());
  for (const auto& a : nt)
    for (const auto& b : gt) out.push_back({{MeshAxis{a[0], b[0]}, MeshAxis{a[1], b[1]}, MeshAxis{a[2], b[2]}}});
  return out;
}

BoxingPath boundary_boxing(const MatmulLayout& from, const MatmulLayout& to, double rows, double out_cols,
                           double in_cols, double elem_bytes, int heads, const SbpComm& comm) {
  const double p = from.devices();
  const double out_bytes = rows * out_cols / p * elem_bytes, in_bytes = rows * in_cols / p * elem_bytes;
  // Reduce-scatter over p2 into dim 1 → (S0:p0, S1:p1·p2), or into dim 0 → (S0:p0·p2, S1:p1).
  std::vector<Flat> src{{from.axis[0].nodes, from.axis[0].gpus}};
  if (from.p(2) > 1) src.push_back({from.axis[0].nodes * from.axis[2].nodes, from.axis[0].gpus * from.axis[2].gpus});
  // All-gather over p1′ along dim 1 from (S0:p0′, S1:p1′·p2′), or along dim 0 from (S0:p0′·p1′, S1:p2′).
  std::vector<Flat> dst{{to.axis[0].nodes, to.axis[0].gpus}};
  if (to.p(1) > 1) dst.push_back({to.axis[0].nodes * to.axis[1].nodes, to.axis[0].gpus * to.axis[1].gpus});
  // The attention core's flat layout: its dim-1 split must fall on head boundaries (notes_004 §2.4).
  std::vector<Flat> mid;
  if (heads > 0) {
    for (int an : comm.node_divisors)
      for (int ag : comm.gpu_divisors)
        if (heads % ((comm.nodes / an) * (comm.gpus_per_node / ag)) == 0) mid.push_back({an, ag});
  }
  BoxingPath best;
  best.feasible = false;
  double best_time = std::numeric_limits<double>::infinity();
  std::size_t bs = 0, bd = 0, bm = 0;
  for (std::size_t s = 0; s < src.size(); ++s)
    for (std::size_t d = 0; d < dst.size(); ++d) {
      if (heads <= 0) {
        const double t = flat_a2a(src[s], dst[d], out_bytes, comm, nullptr);
        if (t < best_time) best_time = t, bs = s, bd = d, best.feasible = true;
        continue;
      }
      for (std::size_t m = 0; m < mid.size(); ++m) {
        const double t = flat_a2a(src[s], mid[m], out_bytes, comm, nullptr) +
                         flat_a2a(mid[m], dst[d], in_bytes, comm, nullptr);
        if (t < best_time) best_time = t, bs = s, bd = d, bm = m, best.feasible = true;
      }
    }
  if (!best.feasible) return best;
  if (from.p(2) > 1)
    best.steps.push_back(priced(Collective::reduce_scatter, from.axis[2],
                                rows * out_cols / (from.p(0) * from.p(1)) * elem_bytes,
                                bs == 0 ? "P→S1 over p2: sum the partial products (reduce-scatter)"
                                        : "P→S0 over p2: sum the partial products (reduce-scatter)",
                                comm));
  if (heads > 0) {
    flat_a2a(src[bs], mid[bm], out_bytes, comm, &best.steps);
    flat_a2a(mid[bm], dst[bd], in_bytes, comm, &best.steps);
  } else {
    flat_a2a(src[bs], dst[bd], out_bytes, comm, &best.steps);
  }
  if (to.p(1) > 1)
    best.steps.push_back(priced(Collective::allgather, to.axis[1], rows * in_cols / (to.p(0) * to.p(2)) * elem_bytes,
                                bd == 0 ? "S1→B over p1': replicate the input (all-gather)"
                                        : "S0→B over p1': replicate the input (all-gather)",
                                comm));
  add_totals(best);
  return best;
}

BoxingPath output_boxing(const MatmulLayout& l, double rows, double cols, double elem_bytes, const SbpComm& comm) {
  BoxingPath out;
  if (l.p(2) > 1)
    out.steps.push_back(priced(Collective::reduce_scatter, l.axis[2], rows * cols / (l.p(0) * l.p(1)) * elem_bytes,
                               "P→S1 over p2: the output must be split (reduce-scatter)", comm));
  add_totals(out);
  return out;
}

BoxingStep weight_sync(const MatmulLayout& l, double in, double out, double grad_bytes, const SbpComm& comm) {
  return priced(Collective::allreduce, l.axis[0], in * out / (l.p(1) * l.p(2)) * grad_bytes,
                "weight gradient: sum over the p0 replicas (all-reduce)", comm);
}

}  // namespace strata::cost
