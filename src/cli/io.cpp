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

std::string dtype_fallback_note(const hw::Cluster& c, hw::Dtype dtype) {
  std::string parts;
  for (const auto& g : c.gpu_types) {
    if (g.supports(dtype)) continue;
    parts += fmt::format("{}{} has no {} path and is costed at its {} rate, {}", parts.empty() ? "" : "; ", g.name,
                         hw::to_string(dtype), hw::to_string(g.runs_as(dtype)), core::format_flops(g.peak(dtype)));
  }
  return parts.empty() ? "" : "note: " + parts + " (docs/hardware.md §The peak fallback rule)\n";
}

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

void add_memory_headroom_option(CLI::App* cmd, std::string* value, bool* given, const std::string& effect) {
  cmd->add_option_function<std::string>(
      "--memory-headroom",
      [value, given](const std::string& v) {
        *value = v;
        *given = true;
      },
      "Memory kept free per device: GiB (e.g. 4) or a share of its capacity (e.g. 10%); " + effect +
          " (default 5%, the allocator's fragmentation; docs/cost-model.md)");
}

namespace {
// An error message may quote user input (a name, a path): escape control characters and cut it to a screenful,
// so that the one-line contract holds whatever was typed.
std::string one_line(const char* what) {
  constexpr std::size_t kMaxBytes = 2000;
  std::string text = core::printable(what);
  if (text.size() > kMaxBytes) text = text.substr(0, kMaxBytes) + fmt::format("... ({} bytes cut)", text.size() - kMaxBytes);
  return text;
}
}  // namespace

int parse_and_run(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : core::kInputErrorExitCode;
  } catch (const core::InputError& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: error: {}\n", one_line(e.what()));
    return core::kInputErrorExitCode;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "strata: internal error: {}\n", one_line(e.what()));
    return 1;
  }
  return 0;
}

}  // namespace strata::cli
