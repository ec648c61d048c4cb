// fuzz_engine_config: the engine-config readers (TOML subset, torchtitan TOML, DeepSpeed JSON, Megatron
// arguments, launch scripts) on arbitrary bytes must either succeed or throw InputError (never crash, hang or
// throw anything else); a read strategy is completed against a small model and cluster, which may only throw
// InputError too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/core/error.hpp"
#include "strata/cost/strategy.hpp"
#include "strata/export/export.hpp"
#include "strata/export/toml.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace strata;
  static const model::Model m = model::zoo_model("small-gpt");
  static const hw::Cluster c = hw::resolve_cluster("dgx-a100:1", hw::builtin_catalog());
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto complete = [&](const exporter::Imported& im) { (void)cost::complete_strategy(im.strategy, m, c); };
  try {
    (void)exporter::parse_toml(text, "fuzz.toml");
  } catch (const core::InputError&) {
  }
  try {
    complete(exporter::import_torchtitan_toml(text, "fuzz.toml"));
  } catch (const core::InputError&) {
  }
  try {
    complete(exporter::import_deepspeed_json(text, "fuzz.json"));
  } catch (const core::InputError&) {
  }
  try {
    complete(exporter::import_megatron_args(text, "fuzz-args"));
  } catch (const core::InputError&) {
  }
  try {
    complete(exporter::import_launch_script(text, "fuzz.sh", c));
  } catch (const core::InputError&) {
  }
  return 0;
}
