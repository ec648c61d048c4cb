// fuzz_plan_file: plan files (`strata plan --json`) as estimate --strategy-file, simulate --plan, export, report
// and run read them: the bytes are written to a file and read back through core::read_text_file (size cap,
// regular files only) and cost::load_strategy_file ("best.strategy", a bare strategy, or {"strategy": ...}); a
// strategy read is completed and costed against a small model and cluster. Only InputError may come out.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/cost/estimate.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  static const model::Model m = model::zoo_model("small-gpt");
  static const hw::Cluster c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  static const std::string path = "/tmp/strata_fuzz_plan_" + std::to_string(::getpid()) + ".json";
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    const cost::Strategy s = cost::load_strategy_file(path);
    const auto full = cost::complete_strategy(s, m, c);
    if (full.global_batch <= 4096) (void)cost::estimate(m, c, full);
  } catch (const core::InputError&) {
  }
  // The plan's own fields, as the commands read model, cluster and seq from it (cli/io plan_file_inputs).
  try {
    const auto j = core::load_json_file(path);
    const core::JsonWhere w{path, ""};
    if (j.is_object()) {
      (void)core::opt_string(j, "model", w);
      (void)core::opt_string(j, "cluster", w);
      (void)core::opt_positive_int(j, "seq", w);
    }
  } catch (const core::InputError&) {
  }
  return 0;
}
