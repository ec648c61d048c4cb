// exec/profile: `strata profile` — measures on this machine the forward/backward time of each layer kind of a
// GPT model (per tensor-parallel degree and micro-batch size) and the latency/bandwidth of Gloo collectives on
// loopback (group sizes 2..N), and writes them in the profile format the cost model reads (cost/profile.hpp,
// docs/cost-model.md §Profiles), plus a cluster file describing this machine (docs/clusters.md).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "strata/exec/run.hpp"

namespace strata::exec {

struct ProfileOptions {
  GptDims model;
  std::vector<int> tp = {1, 2, 4};
  std::vector<std::int64_t> mbs = {1, 2, 4, 8};
  int max_group = 8;                  // collectives for group sizes 2..max_group (0 = skip collectives)
  std::vector<double> message_bytes = {4096, 65536, 1 << 20, 4 << 20};
  int repeats = 5;                    // timed repetitions of a layer (median), after one warm-up
  int comm_repeats = 10;              // timed iterations of each collective's compute+collective loop (mean)
  int threads = 1;                    // intra-op threads, as in `strata run`
  // Processes timing the layers at the same time (1 = this process alone). `strata profile` uses min(devices,
  // cores): every core busy (shared caches and memory bandwidth, as in a run) but no core time-shared — the cost
  // model's host-CPU bound (cost/host.hpp) prices the time-sharing of more ranks than cores.
  int concurrency = 1;
  double timeout_s = 60;
  std::string worker_exe;             // "" = /proc/self/exe
  bool progress = false;
};

// The profile JSON {"source", "device": "cpu", "dtype": "fp32", "layers": [...], "collectives": [...]}.
nlohmann::ordered_json run_profile(const ProfileOptions& o);
// Layer rows only (in this process).
nlohmann::ordered_json profile_layers(const ProfileOptions& o);
// Collective rows only (spawns max_group local processes).
nlohmann::ordered_json profile_collectives(const ProfileOptions& o);
// A cluster JSON (docs/clusters.md) for this machine: one node of `devices` "cpu" devices linked by the
// loopback bandwidth/latency fitted from the profile's p2p rows, sharing `cpu_cores` cores (0 = leave the field
// out: the devices are then taken to compute independently, e.g. when the layer times already include sharing).
nlohmann::ordered_json local_cluster_json(const nlohmann::json& profile, int devices, int cpu_cores);
// CPU cores this process may run on (sched_getaffinity), at least 1.
int usable_cpu_cores();

// The `strata exec-worker --profile-layers` entry (one of `concurrency` layer-timing processes). Never returns.
[[noreturn]] void profile_layers_worker_main(const std::string& config_path, const std::string& result_path);
// The `strata exec-worker --profile-comm` entry (one rank of profile_collectives). Never returns.
[[noreturn]] void profile_worker_main(const std::string& config_path, const std::string& result_path);

}  // namespace strata::exec
