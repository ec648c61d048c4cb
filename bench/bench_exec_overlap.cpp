// bench/bench_exec_overlap: measured step time of Oases' overlapped TP schedule (overlap=on, exec/nn_overlap.cpp)
// against the same plan without overlap (Megatron's blocking all-reduces) on 2 and 4 local Gloo processes (not a
// test). Runs off/on alternately `--repeats` times (so machine load drifts hit both alike) and prints, per plan,
// the median over all steady steps of all repeats, and the mean wait in collectives per step.
// Usage: bench_exec_overlap [--model small-gpt] [--gbs 16] [--steps 6] [--repeats 3]
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/cost/strategy.hpp"
#include "strata/model/model.hpp"
#ifdef STRATA_WITH_EXEC
#include "strata/exec/run.hpp"

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace
#endif

int main(int argc, char** argv) {
#ifndef STRATA_WITH_EXEC
  (void)argc;
  (void)argv;
  fmt::print("bench_exec_overlap: this build has no executor\n");
  return 0;
#else
  using namespace strata;
  std::string model = "small-gpt";
  int gbs = 16, steps = 6, repeats = 3;
  for (int i = 1; i + 1 < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model") model = argv[++i];
    else if (a == "--gbs") gbs = std::atoi(argv[++i]);
    else if (a == "--steps") steps = std::atoi(argv[++i]);
    else if (a == "--repeats") repeats = std::atoi(argv[++i]);
  }
  const auto m = model::zoo_model(model);
  const std::vector<std::string> plans = {"dp=1,tp=2,pp=1,mbs=8", "dp=1,tp=4,pp=1,mbs=8", "dp=2,tp=2,pp=1,mbs=8"};
  fmt::print("{}, gbs {}, {} steps per run (first dropped), {} repeats, off/on alternating\n\n", model, gbs, steps,
             repeats);
  fmt::print("{:<24} {:>5} {:>14} {:>14} {:>8} {:>16} {:>16}\n", "plan", "ranks", "off median", "on median",
             "on/off", "off wait/step", "on wait/step");
  for (const auto& plan : plans) {
    std::vector<double> t[2], wait[2];
    int world = 0;
    for (int r = 0; r < repeats; ++r)
      for (int on = 0; on < 2; ++on) {
        auto s = cost::parse_strategy(plan + ",gbs=" + std::to_string(gbs) + (on ? ",overlap=on" : ""));
        auto o = exec::make_run_options(m, s, 0);
        o.steps = steps;
        o.worker_exe = STRATA_BIN_DIR "/strata-exec";
        o.timeout_s = 300;
        fmt::print(stderr, "bench_exec_overlap: {} overlap={} (repeat {})\n", plan, on ? "on" : "off", r + 1);
        const auto rec = exec::run_local(o);
        world = rec.world_size;
        for (std::size_t i = 1; i < rec.iteration_times_s.size(); ++i) t[on].push_back(rec.iteration_times_s[i]);
        double w = 0;
        for (const auto& rk : rec.ranks) w += rk.wait_s;
        wait[on].push_back(w / static_cast<double>(rec.ranks.size()) / steps);
      }
    const double off = median(t[0]), on = median(t[1]);
    fmt::print("{:<24} {:>5} {:>12.1f}ms {:>12.1f}ms {:>8.3f} {:>14.1f}ms {:>14.1f}ms\n", plan, world, off * 1e3,
               on * 1e3, on / off, median(wait[0]) * 1e3, median(wait[1]) * 1e3);
  }
  return 0;
#endif
}
