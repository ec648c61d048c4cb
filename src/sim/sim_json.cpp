// sim/sim_json: the JSON document of one simulated run as `strata simulate --json` prints it (also the Python
// API's Simulation.to_dict()): the run's totals, the analytical estimate beside them, and one row per device.
#include <algorithm>

#include "strata/sim/from_cost.hpp"

namespace strata::sim {
namespace {

struct DeviceRow {
  int device = -1, stage = 0, dp_rank = 0, tp_rank = 0, worker = 0;
};

// Devices in id order with their (stage, dp, tp) and worker.
std::vector<DeviceRow> device_rows(const PipelineInput& in) {
  std::vector<DeviceRow> rows;
  for (std::size_t w = 0; w < in.workers.size(); ++w)
    for (std::size_t j = 0; j < in.workers[w].devices.size(); ++j)
      rows.push_back({in.workers[w].devices[j], static_cast<int>(w) / in.dp, static_cast<int>(w) % in.dp,
                      static_cast<int>(j), static_cast<int>(w)});
  std::sort(rows.begin(), rows.end(), [](const DeviceRow& a, const DeviceRow& b) { return a.device < b.device; });
  return rows;
}

}  // namespace

nlohmann::ordered_json simulation_report_json(const model::Model& m, const hw::Cluster& c, const cost::Strategy& s,
                                              const Simulation& r) {
  const auto& res = r.result;
  nlohmann::ordered_json j;
  j["model"] = m.name;
  j["seq"] = m.seq;
  j["cluster"] = c.name;
  j["strategy"] = cost::to_json(s);
  j["iterations"] = r.input.iterations;
  j["iteration_time_s"] = res.iteration_time_s;
  j["analytical_iteration_time_s"] = r.estimate.iteration_time_s;
  j["relative_difference"] = r.estimate.iteration_time_s > 0
                                 ? (res.iteration_time_s - r.estimate.iteration_time_s) / r.estimate.iteration_time_s
                                 : 0.0;
  j["analytical_schedule_time_s"] = r.estimate.pipeline_time_s;  // without the host-CPU bound (not simulated)
  if (r.estimate.host.node >= 0) j["host_cpu_bound_s"] = r.estimate.host.bound_s;
  j["bubble_fraction"] = res.bubble_fraction;
  j["analytical_peak_memory_bytes"] = r.estimate.peak_memory_bytes;
  j["fits"] = r.fits;
  if (!r.fits) j["not_fit_reason"] = r.not_fit_reason;
  j["makespan_s"] = res.makespan_s;
  j["window_s"] = {res.window_begin_s, res.window_end_s};
  j["flow_contention_s"] = res.flow_contention_s;
  j["overlap_extra_s"] = res.overlap_extra_s;
  j["events"] = res.events;
  j["tasks"] = res.tasks;
  // Aggregated mode (docs/simulator.md §Scale): dp replicas played out (= dp with --full or when they differ).
  j["simulated_replicas"] = r.simulated_replicas;
  if (!r.full_reason.empty()) j["full_reason"] = r.full_reason;
  const auto rows = device_rows(r.input);
  auto peaks = nlohmann::ordered_json::array();
  auto when = nlohmann::ordered_json::array();
  auto devices = nlohmann::ordered_json::array();
  for (const auto& d : rows) {
    const auto& w = res.workers[d.worker];
    peaks.push_back(w.peak_memory_bytes);
    when.push_back(w.peak_memory_time_s);
    nlohmann::ordered_json dj;
    dj["device"] = d.device;
    dj["stage"] = d.stage;
    dj["dp_rank"] = d.dp_rank;
    dj["tp_rank"] = d.tp_rank;
    dj["busy_s"] = w.busy_s;
    dj["idle_s"] = w.idle_s;
    dj["bubble_fraction"] = w.bubble_fraction;
    dj["peak_memory_bytes"] = w.peak_memory_bytes;
    dj["peak_memory_time_s"] = w.peak_memory_time_s;
    dj["memory_capacity_bytes"] = r.memory[d.worker].capacity_bytes;
    dj["memory_usable_bytes"] = r.memory[d.worker].usable_bytes;
    dj["fits"] = r.memory[d.worker].fits;
    dj["max_weight_versions"] = w.max_weight_versions;
    dj["max_micro_batches_in_flight"] = w.max_in_flight;
    devices.push_back(dj);
  }
  j["peak_memory_bytes"] = peaks;
  j["peak_memory_time_s"] = when;
  j["devices"] = devices;
  return j;
}

}  // namespace strata::sim
