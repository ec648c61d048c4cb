// report/browser: drives a headless Chromium (Debian's `chromium`) to take a screenshot of a report or dump its
// DOM after the page's script ran — for `strata report --screenshot` and the browser tests. The browser is
// found from $STRATA_BROWSER, else `chromium`, `chromium-browser` or `google-chrome` on PATH.
#pragma once
#include <optional>
#include <string>

namespace strata::report {

// Path of a usable browser executable, or nullopt when none is installed.
std::optional<std::string> find_browser();

// The serialised DOM of `html_path` after load (scripts run). Throws std::runtime_error when the browser fails.
std::string dump_dom(const std::string& browser, const std::string& html_path, int timeout_s = 60);

// Writes a PNG screenshot (width × height CSS pixels) of `html_path` to `png_path`. std::runtime_error on failure.
void screenshot(const std::string& browser, const std::string& html_path, const std::string& png_path, int width,
                int height, int timeout_s = 60);

}  // namespace strata::report
