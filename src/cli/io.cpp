// cli/io: output paths and plan-file inputs shared by the sub-commands (see io.hpp).
#include "io.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/core/text.hpp"

namespace strata::cli {

void check_output_path(const std::string& path, const std::string& flag) {
  if (path == "-") return;
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& why) {
    throw core::InputError(fmt::format("{}: cannot write '{}' ({})", flag, core::printable(path), why));
  };
  if (path.empty()) fail("empty path");
  std::error_code ec;
  const fs::path p(path);
  if (fs::is_directory(p, ec)) fail("it is a directory");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) fail(fmt::format("no directory '{}'", core::printable(dir.string())));
  if (fs::exists(p, ec) ? ::access(path.c_str(), W_OK) != 0 : ::access(dir.c_str(), W_OK) != 0)
    fail(std::strerror(errno));
}

void write_output(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::ofstream f(path, std::ios::binary);
  if (!f) throw core::InputError(fmt::format("{}: cannot write '{}'", flag, core::printable(path)));
  f << text;
  if (!f) throw core::InputError(fmt::format("{}: error writing '{}'", flag, core::printable(path)));
}

PlanInputs plan_file_inputs(const std::string& path) {
  PlanInputs in;
  const auto j = core::load_json_file(path);
  const core::JsonWhere w{path, ""};
  if (!j.is_object()) return in;
  in.model = core::opt_string(j, "model", w).value_or("");
  in.cluster = core::opt_string(j, "cluster", w).value_or("");
  in.seq = core::opt_positive_int(j, "seq", w);
  return in;
}

}  // namespace strata::cli
