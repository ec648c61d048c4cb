// tests/cli/test_startup_cli: the `strata` binary loads no executor libraries (libtorch, Gloo, OpenBLAS), serves
// run/profile help itself, and without its `strata-exec` sibling refuses run with one line and exit 2.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cli_run.hpp"

namespace {

struct Output {
  int code = -1;
  std::string text;
};

Output shell(const std::string& cmd) {
  Output o;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return o;
  std::array<char, 4096> buf{};
  std::size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) o.text.append(buf.data(), n);
  const int status = ::pclose(p);
  o.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return o;
}

bool have(const std::string& tool) { return shell("command -v " + tool + " >/dev/null 2>&1").code == 0; }

TEST(Startup, StrataNeedsNoExecutorLibraries) {
  // ldd lists every shared object the loader maps (transitively); readelf -d only the direct DT_NEEDED entries.
  std::string libs;
  if (have("ldd")) {
    libs = shell(std::string("ldd ") + STRATA_BIN + " 2>&1").text;
  } else if (have("readelf")) {
    libs = shell(std::string("readelf -d ") + STRATA_BIN + " 2>&1 | grep NEEDED").text;
  } else {
    GTEST_SKIP() << "neither ldd nor readelf is installed";
  }
  ASSERT_NE(libs.find("libc.so"), std::string::npos) << libs;  // the listing worked
  for (const char* lib : {"libtorch", "libc10", "gloo", "openblas", "gfortran"})
    EXPECT_EQ(libs.find(lib), std::string::npos) << lib << " in:\n" << libs;
}

TEST(Startup, RunHelpAndErrorsWithoutTheExecutorBinary) {
  // A copy of `strata` alone in a directory: help and flag errors still work, running needs strata-exec.
  const auto dir = std::filesystem::temp_directory_path() / ("strata-startup-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto copy = dir / "strata";
  std::filesystem::copy_file(STRATA_BIN, copy, std::filesystem::copy_options::overwrite_existing);
  const std::string bin = copy.string();
  auto r = shell(bin + " run --help 2>&1");
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("--world-size"), std::string::npos) << r.text;
  r = shell(bin + " run --model tiny-gpt --steps 0 2>&1");
  EXPECT_EQ(r.code, 2) << r.text;
  r = shell(bin + " run --model tiny-gpt --strategy dp=1,tp=1,pp=1,gbs=2 --steps 1 2>&1 >/dev/null");
  EXPECT_EQ(r.code, 2) << r.text;
  EXPECT_NE(r.text.find((dir / "strata-exec").string() + " is missing"), std::string::npos) << r.text;
  EXPECT_EQ(r.text.find('\n'), r.text.size() - 1) << "one line: " << r.text;
  r = shell(bin + " plan --model tiny-gpt --cluster cpu-local --gbs 8 --trials 1 2>&1 >/dev/null");
  EXPECT_EQ(r.code, 2) << r.text;
  EXPECT_NE(r.text.find("is missing"), std::string::npos) << r.text;
  std::filesystem::remove_all(dir);
}

}  // namespace
