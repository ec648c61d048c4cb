// tests/exec/exec_test_util: shared helpers of the executor tests — run options for tiny-gpt, the
// single-process reference runs (cached), and loss comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "strata/cost/strategy.hpp"
#include "strata/exec/run.hpp"
#include "strata/model/model.hpp"

namespace strata::exec::testing {

inline constexpr int kSteps = 5;
inline constexpr std::uint64_t kSeed = 7;

inline RunOptions tiny(const std::string& strategy, Optimizer opt = Optimizer::adam, int steps = kSteps) {
  RunOptions o = make_run_options(model::zoo_model("tiny-gpt"), cost::parse_strategy(strategy), 0);
  o.steps = steps;
  o.seed = kSeed;
  o.optimizer = opt;
  o.lr = opt == Optimizer::adam ? 3e-3 : 0.2;
  o.timeout_s = 60;
  o.bucket_bytes = 64 * 1024;  // several buckets even for the tiny model
  o.worker_exe = STRATA_BIN_DIR "/strata-exec";
  return o;
}

// Single-process training of the same model and data (one reference per (gbs, optimizer), computed once).
inline const std::vector<double>& reference_losses(std::int64_t gbs, Optimizer opt) {
  static std::map<std::pair<std::int64_t, int>, std::vector<double>> cache;
  const auto key = std::make_pair(gbs, static_cast<int>(opt));
  auto it = cache.find(key);
  if (it == cache.end()) {
    const auto o = tiny("dp=1,tp=1,pp=1,mbs=" + std::to_string(gbs) + ",gbs=" + std::to_string(gbs), opt);
    it = cache.emplace(key, run_in_process(o).losses).first;
  }
  return it->second;
}

inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rel,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_LE(std::abs(got[i] - want[i]), rel * std::abs(want[i]))
        << what << ": step " << i << " got " << got[i] << " want " << want[i];
}

}  // namespace strata::exec::testing
