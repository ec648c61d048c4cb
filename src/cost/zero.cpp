// cost/zero: ZeRO-3 / FSDP per-layer collectives per micro-batch and their overlap with the neighbouring layer's
// compute (see zero.hpp for the model and its sources).
#include "strata/cost/zero.hpp"

#include <algorithm>

namespace strata::cost {

Zero3LayerComm zero3_layer_comm(double gather_s, double reduce_scatter_s, double neighbour_fwd_s,
                                double neighbour_bwd_s, double overlap_slowdown) {
  // Compute and communication overlapping on one device both slow down by γ (Galvatron): max + (γ−1)·min.
  const auto exposed = [overlap_slowdown](double compute, double comm) {
    compute = std::max(0.0, compute);
    comm = std::max(0.0, comm);
    return std::max(compute, comm) + (overlap_slowdown - 1.0) * std::min(compute, comm) - compute;
  };
  Zero3LayerComm z;
  z.gathers = 2;
  z.reduce_scatters = 1;
  z.busy_s = 2.0 * gather_s + reduce_scatter_s;
  z.fwd_exposed_s = exposed(neighbour_fwd_s, gather_s);
  z.bwd_exposed_s = exposed(neighbour_bwd_s, gather_s + reduce_scatter_s);
  return z;
}

}  // namespace strata::cost
