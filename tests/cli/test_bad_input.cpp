// tests/cli/test_bad_input: the bad-input corpus (tests/bad_input/*.case) — each case is one `strata` command
// line with its expected exit code and message substrings. Format (one key per line, '#' = comment):
//   args: <arguments, run through /bin/sh>   ({dir} = tests/bad_input/files, {tmp} = a fresh directory)
//   exit: <code>
//   stderr: <substring of stderr>            (optional, repeatable)
//   stdout: <substring of stdout>            (optional, repeatable)
//   stdout_empty: true                       (optional: nothing on stdout, e.g. failed before the work)
//   setup: <name>                            (optional: a file the test writes into {tmp}, see make_setup)
//   needs: strata-exec                       (optional: skipped where the executor is not built, e.g. the
//                                             sanitizer build; `strata` parses the flags, strata-exec the rest)
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "cli_run.hpp"

namespace {

namespace fs = std::filesystem;

struct Case {
  std::string name, args, setup, needs;
  int exit_code = -1;
  std::vector<std::string> in_stderr, in_stdout;
  bool stdout_empty = false;
};

Case read_case(const fs::path& path) {
  Case c;
  c.name = path.stem().string();
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon), value = line.substr(colon + 2);
    if (key == "args") c.args = value;
    else if (key == "exit") c.exit_code = std::stoi(value);
    else if (key == "stderr") c.in_stderr.push_back(value);
    else if (key == "stdout") c.in_stdout.push_back(value);
    else if (key == "stdout_empty") c.stdout_empty = value == "true";
    else if (key == "setup") c.setup = value;
    else if (key == "needs") c.needs = value;
    else ADD_FAILURE() << path << ": unknown key '" << key << "'";
  }
  return c;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// Files too big (or too odd) to keep in the corpus.
void make_setup(const std::string& name, const fs::path& tmp) {
  if (name == "big_name_model") {
    std::ofstream f(tmp / "big_name_model.json");
    f << R"({"name": ")" << std::string(1 << 20, 'x')
      << R"(", "layers": 2, "hidden": 256, "heads": 4, "ffn": 1024, "vocab": 1000, "seq": 128})";
    return;
  }
  if (name == "fifo") {  // a FIFO without a writer: opening it for reading would block forever
    ASSERT_EQ(::mkfifo((tmp / "fifo.json").c_str(), 0600), 0);
    return;
  }
  if (name == "sparse_2g") {  // a 2 GiB file (sparse: no disk used) above the 1 GiB input cap
    std::ofstream(tmp / "huge.json").close();
    fs::resize_file(tmp / "huge.json", std::uintmax_t{2} << 30);
    return;
  }
  if (name == "deep_json") {  // arrays nested 30,000 deep (the Python crash of issue 40, as a file)
    std::ofstream f(tmp / "deep.json");
    f << std::string(30000, '[') << std::string(30000, ']');
    return;
  }
  FAIL() << "unknown setup '" << name << "'";
}

TEST(BadInputCorpus, EveryCaseGivesItsExitCodeAndMessage) {
  const fs::path dir = fs::path(STRATA_SOURCE_DIR) / "tests" / "bad_input";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".case") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u);
  const fs::path tmp_root = fs::temp_directory_path() / ("strata_bad_input_" + std::to_string(::getpid()));
  for (const auto& file : files) {
    const Case c = read_case(file);
    SCOPED_TRACE(c.name + ": strata " + c.args);
    ASSERT_FALSE(c.args.empty());
    if (c.needs == "strata-exec" && !fs::exists(fs::path(STRATA_BIN_DIR) / "strata-exec")) continue;
    if (!c.needs.empty() && c.needs != "strata-exec") ADD_FAILURE() << "unknown needs '" << c.needs << "'";
    const fs::path tmp = tmp_root / c.name;
    fs::create_directories(tmp);
    if (!c.setup.empty()) make_setup(c.setup, tmp);
    std::string args = replace_all(c.args, "{dir}", (dir / "files").string());
    args = replace_all(args, "{tmp}", tmp.string());
    const auto r = strata_test::run_cli(args);
    EXPECT_EQ(r.code, c.exit_code) << "stderr: " << r.err.substr(0, 2000);
    for (const auto& s : c.in_stderr) EXPECT_NE(r.err.find(s), std::string::npos) << "stderr lacks: " << s << "\n" << r.err.substr(0, 2000);
    for (const auto& s : c.in_stdout) EXPECT_NE(r.out.find(s), std::string::npos) << "stdout lacks: " << s << "\n" << r.out.substr(0, 3000);
    if (c.stdout_empty) EXPECT_TRUE(r.out.empty()) << r.out.substr(0, 2000);
    // An error is one line (the one-line contract), whatever the input.
    if (c.exit_code == 2) EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err.substr(0, 2000);
  }
  fs::remove_all(tmp_root);
}

}  // namespace
