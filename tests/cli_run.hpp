// tests/cli_run: the one helper that runs the `strata` binary (STRATA_BIN) in end-to-end tests and captures its
// exit code, stdout and stderr.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace strata_test {

struct CliResult {
  int code = -1;     // exit code (-1 when the process did not exit normally)
  std::string out;   // stdout (with stderr appended in order when merged)
  std::string err;   // stderr when captured separately
};

enum class Stderr { separate, merged, discarded };

// Runs `strata <args>` through the shell.
inline CliResult run_cli(const std::string& args, Stderr mode = Stderr::separate) {
  CliResult r;
  std::string err_path;
  std::string redirect = " 2>&1";
  if (mode == Stderr::discarded) redirect = " 2>/dev/null";
  if (mode == Stderr::separate) {
    char path[] = "/tmp/strata_cli_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) return r;
    close(fd);
    err_path = path;
    redirect = " 2>" + err_path;
  }
  const std::string cmd = std::string(STRATA_BIN) + " " + args + redirect;
  FILE* p = popen(cmd.c_str(), "r");
  if (p) {
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
    const int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  if (!err_path.empty()) {
    std::ifstream in(err_path);
    std::stringstream ss;
    ss << in.rdbuf();
    r.err = ss.str();
    unlink(err_path.c_str());
  }
  return r;
}

}  // namespace strata_test
