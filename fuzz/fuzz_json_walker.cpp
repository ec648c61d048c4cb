// fuzz_json_walker: the shared JSON walker that JSON files and the Python bridge's dicts both go through
// (core::parse_json_text with its depth bound and duplicate-key check, the field readers with their number
// bounds, dump_json) and the model and cluster readers that strata.Model.from_dict / strata.Cluster.from_dict
// call on it: arbitrary bytes must parse or throw InputError, never crash, recurse without bound or throw anything
// else; a document that parses must survive a dump and re-parse unchanged. The numeric-text checks of
// core/numbers (every CLI flag) run on the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/numbers.hpp"
#include "strata/hw/cluster.hpp"
#include "strata/model/model.hpp"

namespace {

using namespace strata;

// Every reader on every member, as the loaders call them (each may only throw InputError).
void read_fields(const core::Json& j) {
  if (!j.is_object()) return;
  const core::JsonWhere w{"fuzz.json", ""};
  for (const auto& [key, value] : j.items()) {
    (void)value;
    for (int reader = 0; reader < 6; ++reader) {
      try {
        switch (reader) {
          case 0: (void)core::get_int(j, key, w); break;
          case 1: (void)core::get_number(j, key, w); break;
          case 2: (void)core::get_positive_int(j, key, w); break;
          case 3: (void)core::get_string(j, key, w); break;
          case 4: (void)core::get_bool(j, key, w); break;
          default: (void)core::opt_positive_number(j, key, w); break;
        }
      } catch (const core::InputError&) {
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const hw::Catalog catalog = hw::builtin_catalog();
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)core::number_text_problem(text, {-1e6, 1e6});
  (void)core::integer_text_problem(text, core::limits::kGbs);
  core::Json j;
  try {
    j = core::parse_json_text(text, "fuzz.json");
  } catch (const core::InputError&) {
    return 0;
  }
  read_fields(j);
  // A parsed document is within the depth bound, so its dump (recursive) and a re-parse are safe and equal.
  const std::string dumped = core::dump_json(core::OrderedJson::parse(j.dump()));
  if (core::parse_json_text(dumped, "dump") != j) __builtin_trap();
  try {
    (void)model::model_from_json(j, "fuzz model");
  } catch (const core::InputError&) {
  }
  try {
    (void)hw::cluster_from_json(j, "fuzz cluster", catalog);
  } catch (const core::InputError&) {
  }
  return 0;
}
