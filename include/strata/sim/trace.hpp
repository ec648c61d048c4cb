// sim/trace: Chrome trace-event JSON of a simulated run (opens in Perfetto / chrome://tracing): one process per
// device, one thread per stream (compute, send activations, send gradients, dp communication), complete events
// ("ph":"X", ts/dur in µs) per task, metadata names, and a memory counter per device when the memory timeline
// was recorded. Times are written from integer nanoseconds so events of one stream never overlap after rounding.
#pragma once
#include <ostream>

#include "strata/sim/pipeline.hpp"

namespace strata::sim {

// `r` must come from simulate_pipeline with keep_timeline (std::invalid_argument otherwise).
void write_chrome_trace(const PipelineInput& in, const SimResult& r, std::ostream& out);

}  // namespace strata::sim
