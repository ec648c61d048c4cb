// cli/io: output paths and plan-file inputs shared by the sub-commands (see io.hpp).
#include "io.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
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

void check_output_dir(const std::string& dir, const std::string& flag) {
  if (dir == "-") return;
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& why) {
    throw core::InputError(fmt::format("{}: cannot write into '{}' ({})", flag, core::printable(dir), why));
  };
  if (dir.empty()) fail("empty path");
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) fail("not a directory");
    if (::access(dir.c_str(), W_OK) != 0) fail(std::strerror(errno));
    return;
  }
  // A new directory is created one level deep only: its parent must exist, as for every output file, so that a
  // typo does not build a tree of directories (from `/` up).
  fs::path p(dir);
  if (!p.has_filename()) p = p.parent_path();  // "out/" names the directory out
  const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) fail(fmt::format("no directory '{}'", core::printable(parent.string())));
  if (::access(parent.c_str(), W_OK) != 0) fail(std::strerror(errno));
}

CLI::Validator number_in(core::Range r) {
  return CLI::Validator([r](std::string& text) { return core::number_text_problem(text, r); },
                        fmt::format("NUMBER in [{}, {}]", core::format_bound(r.lo), core::format_bound(r.hi)));
}

CLI::Validator integer_in(core::Range r) {
  return CLI::Validator(
      [r](std::string& text) {
        std::string problem = core::integer_text_problem(text, r);
        // One reading everywhere (issue 49 class 3): the checked decimal value, written back plainly so that CLI11
        // reads "010" as 10 (not octal 8) and "1e3" as 1000.
        if (problem.empty()) text = std::to_string(static_cast<long long>(std::strtod(text.c_str(), nullptr)));
        return problem;
      },
                        fmt::format("INT in [{}, {}]", core::format_bound(r.lo), core::format_bound(r.hi)));
}

void write_output(const std::string& path, const std::string& text, const std::string& flag) {
  if (path == "-") {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      throw core::InputError(fmt::format("{}: cannot write standard output ({})", flag, std::strerror(errno)));
    return;
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  // A device, FIFO or symlink (/dev/stdout, a pipe, a link the user keeps): written in place, never replaced.
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    std::ofstream f(path, std::ios::binary);
    if (!f) throw core::InputError(fmt::format("{}: cannot write '{}'", flag, core::printable(path)));
    f << text;
    f.flush();
    if (!f) throw core::InputError(fmt::format("{}: error writing '{}'", flag, core::printable(path)));
    return;
  }
  // A regular file is whole or absent (issue 49 class 2): written beside the target, renamed over it when complete.
  const std::string tmp = path + ".strata-tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw core::InputError(fmt::format("{}: cannot write '{}'", flag, core::printable(path)));
    f << text;
    f.flush();
    if (!f) {
      f.close();
      std::remove(tmp.c_str());
      throw core::InputError(fmt::format("{}: error writing '{}'", flag, core::printable(path)));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw core::InputError(fmt::format("{}: cannot write '{}' ({})", flag, core::printable(path), std::strerror(err)));
  }
}

namespace {
// Notes for stderr that hold only if the command succeeds (printed by parse_and_run after it returns, so that an
// error stays the one line of stderr).
std::string& notes_after_success() {
  static std::string notes;
  return notes;
}

// Whether two cluster specs name the same cluster ("dgx-a100" and "dgx-a100:1" do): compared resolved.
bool same_cluster(const std::string& a, const std::string& b) {
  if (a == b) return true;
  try {
    const auto cat = hw::builtin_catalog();
    const auto ca = hw::resolve_cluster(a, cat), cb = hw::resolve_cluster(b, cat);
    return ca.name == cb.name && ca.num_devices() == cb.num_devices();
  } catch (const core::InputError&) {
    return false;
  }
}
}  // namespace

void check_plan_agrees(const PlanInputs& in, const PlanFlags& f) {
  if (!in.model.empty() && f.model && f.model->name != in.model)
    throw core::InputError(fmt::format("{}: --model {}: the plan file {} was made for model '{}' (leave --model out "
                                       "to use it, or plan again for this model)",
                                       f.command, core::printable(f.model->name), core::printable(f.plan_path),
                                       core::printable(in.model)));
  if (!in.cluster.empty() && !f.cluster.empty() && !same_cluster(in.cluster, f.cluster))
    notes_after_success() += fmt::format("note: the plan file {} was made for cluster {}; its strategy was used on {} "
                                         "as --cluster says\n", core::printable(f.plan_path),
                                         core::printable(in.cluster), core::printable(f.cluster));
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
    // Standard output that could not be written (a full disk, a closed pipe reader) is a failure, not exit 0
    // (issue 49 class 2): what the command printed is incomplete.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      const int err = errno;
      throw core::InputError(fmt::format("cannot write standard output ({})", err != 0 ? std::strerror(err) : "write error"));
    }
    if (!notes_after_success().empty()) fmt::print(stderr, "{}", notes_after_success());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A flag error is one line like any other input error (CLI11's own report adds a second, "Run with --help").
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fflush(stdout);
    fmt::print(stderr, "strata: error: {}\n", one_line(e.what()));
    return core::kInputErrorExitCode;
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
