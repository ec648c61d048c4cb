// sim/trace: Chrome trace-event writer (see trace.hpp). Written with fmt, not a JSON DOM: a 1024-GPU run has
// millions of events.
#include "strata/sim/trace.hpp"

#include <fmt/format.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace strata::sim {
namespace {

// µs with 3 decimals from integer ns.
std::string us(long long ns) { return fmt::format("{}.{:03d}", ns / 1000, static_cast<int>(ns % 1000)); }
long long to_ns(double s) { return std::llround(s * 1e9); }

int tid_of(StreamRole r) { return static_cast<int>(r); }
const char* thread_name(StreamRole r) {
  switch (r) {
    case StreamRole::compute: return "compute";
    case StreamRole::send_fwd: return "send activations";
    case StreamRole::send_bwd: return "send gradients";
    case StreamRole::dp: return "dp communication";
    case StreamRole::tp: return "tp communication (overlapped)";
  }
  return "?";
}

}  // namespace

void write_chrome_trace(const PipelineInput& in, const SimResult& r, std::ostream& out) {
  if (r.info.size() != static_cast<std::size_t>(r.graph.num_tasks()) || r.engine.start_s.empty())
    throw std::invalid_argument("write_chrome_trace: simulate with keep_timeline");
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const std::string& e) {
    if (!first) out << ",\n";
    out << e;
    first = false;
  };
  bool has_tp_stream = false;
  for (auto role : r.stream_role) has_tp_stream = has_tp_stream || role == StreamRole::tp;
  // Metadata: process per device, thread per stream role.
  for (std::size_t w = 0; w < in.workers.size(); ++w) {
    const int rank = static_cast<int>(w) / in.dp, d = static_cast<int>(w) % in.dp;
    const auto& devs = in.workers[w].devices;
    for (std::size_t j = 0; j < devs.size(); ++j) {
      const int pid = devs[j];
      emit(fmt::format(R"J({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":"gpu {} (stage {}, dp {}, tp {})"}}}})J",
                       pid, pid, rank, d, j));
      emit(fmt::format(R"J({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})J", pid, pid));
      for (auto role : {StreamRole::compute, StreamRole::send_fwd, StreamRole::send_bwd, StreamRole::dp})
        emit(fmt::format(R"J({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})J", pid,
                         tid_of(role), thread_name(role)));
      if (has_tp_stream)  // Oases' overlapped TP collectives (only plans with overlap=on have the stream)
        emit(fmt::format(R"J({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}"}}}})J", pid,
                         tid_of(StreamRole::tp), thread_name(StreamRole::tp)));
    }
  }
  // One complete event per task on every device it runs on.
  const auto& g = r.graph;
  for (int t = 0; t < g.num_tasks(); ++t) {
    const TaskInfo& ti = r.info[t];
    const StreamRole role = r.stream_role[g.stream[t]];
    const long long s = to_ns(r.engine.start_s[t]), e = to_ns(r.engine.end_s[t]);
    std::string name = std::string(to_string(ti.tag));
    if (ti.tag == TaskTag::optimizer) name += fmt::format(" #{}", ti.micro);
    else name += fmt::format(" mb{} c{}", ti.micro, ti.chunk);
    const std::string body = fmt::format(R"J("ph":"X","name":"{}","cat":"{}","ts":{},"dur":{},"tid":{},"args":{{"micro":{},"chunk":{}}})J",
                                         name, to_string(ti.tag), us(s), us(e - s), tid_of(role), ti.micro, ti.chunk);
    if (role == StreamRole::dp) {
      // A dp collective of tp rank j runs on member j of every replica of the stage.
      const int rank = ti.worker / in.dp;
      for (int d = 0; d < in.dp; ++d) {
        const auto& devs = in.workers[rank * in.dp + d].devices;
        if (ti.tp_rank >= 0 && ti.tp_rank < static_cast<int>(devs.size()))
          emit(fmt::format("{{\"pid\":{},{}}}", devs[ti.tp_rank], body));
      }
    } else {
      for (int dev : in.workers[ti.worker].devices) emit(fmt::format("{{\"pid\":{},{}}}", dev, body));
    }
  }
  // Memory counters.
  for (std::size_t w = 0; w < in.workers.size() && w < r.engine.memory.size(); ++w) {
    for (const auto& [time, bytes] : r.engine.memory[w].timeline)
      for (int dev : in.workers[w].devices)
        emit(fmt::format(R"J({{"ph":"C","name":"memory","pid":{},"tid":0,"ts":{},"args":{{"GiB":{:.6f}}}}})J", dev,
                         us(to_ns(time)), bytes / (1024.0 * 1024.0 * 1024.0)));
  }
  out << "\n]}\n";
}

}  // namespace strata::sim
