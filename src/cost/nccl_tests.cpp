// cost/nccl_tests: parser of nccl-tests text output and its α–β fit (see nccl_tests.hpp for the format).
#include "strata/cost/nccl_tests.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <sstream>

#include "strata/core/error.hpp"
#include "strata/core/text.hpp"

namespace strata::cost {
namespace {

std::vector<std::string> tokens_of(std::string_view line) {
  std::vector<std::string> out;
  std::istringstream in{std::string(line)};
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool parse_double(const std::string& t, double& v) {
  const char* end = t.data() + t.size();
  const auto r = std::from_chars(t.data(), end, v);
  return r.ec == std::errc() && r.ptr == end && std::isfinite(v);
}

// Position of `name` in the column header (the n-th occurrence), or -1.
int column(const std::vector<std::string>& header, std::string_view name, int occurrence = 0) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name && occurrence-- == 0) return static_cast<int>(i);
  return -1;
}

struct Header {
  int threads = 0, gpus = 0, rank_lines = 0;
  std::string test;
  std::vector<std::string> columns;  // without the leading '#'
};

// Reads one '#' line into the header state.
void read_comment(std::string_view line, Header& h, const std::string& where) {
  const auto t = tokens_of(line.substr(1));
  if (t.empty()) return;
  if (t[0] == "nThread" && t.size() >= 4 && t[2] == "nGpus") {
    double a = 0, b = 0;
    if (!parse_double(t[1], a) || !parse_double(t[3], b) || a < 1 || b < 1 || a > 1e6 || b > 1e6)
      throw core::InputError(fmt::format("{}: bad 'nThread .. nGpus ..' line", where));
    h.threads = static_cast<int>(a);
    h.gpus = static_cast<int>(b);
  } else if (t[0] == "Rank" && t.size() >= 2) {
    ++h.rank_lines;
  } else if (t.size() >= 4 && t[0] == "Collective" && t[1] == "test" && t[2] == "starting:") {
    h.test = t[3];
  } else if (column(t, "size") == 0 && column(t, "time") > 0) {
    h.columns = t;
  }
}

}  // namespace

std::optional<Collective> nccl_test_collective(std::string_view test_name) {
  std::string n = core::to_lower(test_name);
  if (n.size() > 5 && n.substr(n.size() - 5) == "_perf") n = n.substr(0, n.size() - 5);
  if (n == "all_reduce") return Collective::allreduce;
  if (n == "all_gather") return Collective::allgather;
  if (n == "reduce_scatter") return Collective::reduce_scatter;
  if (n == "sendrecv") return Collective::p2p;
  if (n == "broadcast") return Collective::broadcast;
  if (n == "alltoall") return Collective::all_to_all;
  return std::nullopt;
}

NcclTestsRun parse_nccl_tests(std::string_view text, const std::string& origin, std::string_view op_hint) {
  Header h;
  NcclTestsRun run;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = fmt::format("{}:{}", origin, line_no);
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos) {
      if (end == text.size()) break;
      continue;
    }
    if (line[first] == '#') {
      read_comment(line.substr(first), h, where);
    } else {
      // A result row: needs the column header first.
      const auto t = tokens_of(line);
      double first_value = 0;
      if (t.empty() || !parse_double(t[0], first_value)) continue;  // other text (e.g. a launcher's banner)
      const int size_col = column(h.columns, "size"), time_col = column(h.columns, "time");
      const int wrong_col = column(h.columns, "#wrong");
      if (size_col < 0 || time_col < 0)
        throw core::InputError(fmt::format("{}: result row before the '# size count ... time' column header", where));
      if (static_cast<int>(t.size()) <= time_col)
        throw core::InputError(fmt::format("{}: row has {} columns, the header {}", where, t.size(), h.columns.size()));
      double bytes = 0, time_us = 0, wrong = 0;
      if (!parse_double(t[size_col], bytes) || !(bytes >= 0) || bytes > 1e15)
        throw core::InputError(fmt::format("{}: size '{}' is not a byte count", where, t[size_col]));
      if (!parse_double(t[time_col], time_us) || !(time_us > 0) || time_us > 1e12)
        throw core::InputError(fmt::format("{}: time '{}' is not a positive number of microseconds", where,
                                           t[time_col]));
      if (wrong_col >= 0 && wrong_col < static_cast<int>(t.size()) && parse_double(t[wrong_col], wrong) && wrong > 0)
        throw core::InputError(fmt::format("{}: {} wrong results at size {}: the run is not valid", where,
                                           t[wrong_col], t[size_col]));
      if (bytes > 0) run.rows.push_back({Collective::allreduce, 0, bytes, time_us * 1e-6});
    }
    if (end == text.size()) break;
  }
  run.test = !h.test.empty() ? h.test : std::string(op_hint);
  if (run.test.empty())
    throw core::InputError(fmt::format("{}: the output does not name its test; give it (e.g. all_reduce_perf)", origin));
  const auto op = nccl_test_collective(run.test);
  if (!op)
    throw core::InputError(fmt::format("{}: unknown nccl-tests test '{}' (valid: all_reduce_perf, all_gather_perf, "
                                       "reduce_scatter_perf, sendrecv_perf, broadcast_perf, alltoall_perf)",
                                       origin, run.test));
  run.op = *op;
  const long long ranks = h.rank_lines > 0 ? h.rank_lines : static_cast<long long>(h.threads) * h.gpus;
  if (ranks < 1 || ranks > (1 << 20))
    throw core::InputError(fmt::format("{}: cannot tell the number of ranks (no 'Rank' or 'nThread .. nGpus ..' lines)",
                                       origin));
  run.ranks = static_cast<int>(ranks);
  if (run.rows.empty()) throw core::InputError(fmt::format("{}: no result rows", origin));
  const int group = run.op == Collective::p2p ? 2 : run.ranks;
  for (auto& r : run.rows) {
    r.op = run.op;
    r.group_size = group;
  }
  return run;
}

CollectiveFit fit_nccl_tests(const NcclTestsRun& run) {
  const auto fits = fit_collectives(run.rows);
  return fits.empty() ? CollectiveFit{run.op, run.ranks, 0, 0} : fits.front();
}

}  // namespace strata::cost
