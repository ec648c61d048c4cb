// report/browser: runs headless Chromium as a child process (popen) with a throw-away profile directory, a
// time limit (coreutils `timeout`) and no network use beyond the local file it opens.
#include "strata/report/browser.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace strata::report {
namespace {

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

// Single-quoted for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string file_url(const std::string& path) {
  return "file://" + std::filesystem::absolute(path).lexically_normal().string();
}

// A fresh profile directory (removed by the caller), so concurrent runs never share a profile lock.
std::string temp_profile() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "strata-browser-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("browser: cannot create a temporary profile directory");
  return tmpl;
}

// Runs the browser with `args`; returns its stdout. Throws with the exit status on failure.
std::string run_browser(const std::string& browser, const std::string& args, int timeout_s) {
  const std::string profile = temp_profile();
  const std::string cmd = fmt::format(
      "timeout {} {} --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
      "--disable-extensions --hide-scrollbars --user-data-dir={} {} 2>/dev/null",
      timeout_s, shell_quote(browser), shell_quote(profile), args);
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    std::filesystem::remove_all(profile);
    throw std::runtime_error("browser: cannot start " + browser);
  }
  std::string out;
  std::array<char, 65536> buf{};
  std::size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int status = pclose(pipe);
  std::error_code ec;
  std::filesystem::remove_all(profile, ec);
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 124) throw std::runtime_error(fmt::format("browser: {} timed out after {} s", browser, timeout_s));
  if (code != 0) throw std::runtime_error(fmt::format("browser: {} exited with status {}", browser, code));
  return out;
}

}  // namespace

std::optional<std::string> find_browser() {
  if (const char* env = std::getenv("STRATA_BROWSER"); env && *env)
    return executable(env) ? std::optional<std::string>(env) : std::nullopt;
  const char* path = std::getenv("PATH");
  const std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    std::size_t start = 0;
    while (start <= dirs.size()) {
      const std::size_t end = std::min(dirs.find(':', start), dirs.size());
      const std::string candidate = dirs.substr(start, end - start) + "/" + name;
      if (executable(candidate)) return candidate;
      start = end + 1;
    }
  }
  return std::nullopt;
}

std::string dump_dom(const std::string& browser, const std::string& html_path, int timeout_s) {
  return run_browser(browser, "--dump-dom " + shell_quote(file_url(html_path)), timeout_s);
}

void screenshot(const std::string& browser, const std::string& html_path, const std::string& png_path, int width,
                int height, int timeout_s) {
  const std::string abs_png = std::filesystem::absolute(png_path).string();
  std::error_code ec;
  std::filesystem::remove(abs_png, ec);
  run_browser(browser,
              fmt::format("--window-size={},{} --screenshot={} {}", width, height, shell_quote(abs_png),
                          shell_quote(file_url(html_path))),
              timeout_s);
  if (!std::filesystem::exists(abs_png))
    throw std::runtime_error("browser: no screenshot was written to " + png_path);
}

}  // namespace strata::report
