// core/data: lookup into the files embedded from data/ (generated table, see cmake/EmbedData.cmake).
#include "strata/core/data.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>

namespace strata::core {
namespace generated {
const std::vector<std::pair<std::string_view, std::string_view>>& embedded_files();
}

std::string_view embedded_file(std::string_view name) {
  for (const auto& [n, content] : generated::embedded_files())
    if (n == name) return content;
  throw std::logic_error(fmt::format("data/{} is not embedded in this build", name));
}

Json embedded_json(std::string_view name) {
  return parse_json_text(embedded_file(name), fmt::format("data/{}", name));
}

std::vector<std::string> embedded_file_names() {
  std::vector<std::string> out;
  for (const auto& f : generated::embedded_files()) out.emplace_back(f.first);
  return out;
}

}  // namespace strata::core
