// core/data: access to the JSON files of data/ that are embedded into the binary at build time
// (cmake/EmbedData.cmake), so that catalogs and presets work from any directory.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "strata/core/json.hpp"

namespace strata::core {

// Contents of data/<name> (e.g. "gpus.json", "calibration/megatron_seqsel_2022.json"); throws std::logic_error
// when no such file was embedded (a build problem, not user input).
std::string_view embedded_file(std::string_view name);
// Parsed JSON of an embedded file; errors name "data/<name>".
Json embedded_json(std::string_view name);
// Names of all embedded files, sorted.
std::vector<std::string> embedded_file_names();

}  // namespace strata::core
