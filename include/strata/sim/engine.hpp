// sim/engine: the discrete-event core of the simulator, on abstract inputs. A task graph (flat arrays, CSR
// edges) of compute and communication tasks; each task runs on one in-order stream (a device's compute stream,
// a send stream, a data-parallel collective stream) once its predecessors are done. Communication tasks are
// flows over link resources (NVLink/PCIe ports, NICs) whose bandwidth is shared by the flows crossing them at
// once; compute tasks can be slowed while a communication task of their overlap group runs (Galvatron's
// compute/communication contention, notes_001). Events are ordered by (time, sequence number): deterministic.
#pragma once
#include <cstdint>
#include <vector>

namespace strata::sim {

enum class TaskKind : std::uint8_t { compute, comm };

// The task graph. Build with TaskGraphBuilder; the engine only reads it.
struct TaskGraph {
  // Per task.
  std::vector<double> work_s;          // duration at full speed (comm: the bandwidth part, latency excluded)
  std::vector<double> latency_s;       // fixed delay after the work (comm α term); not slowed, holds no link
  std::vector<std::int32_t> stream;    // in-order stream the task runs on
  std::vector<TaskKind> kind;
  // compute: the overlap group whose active comm slows it; comm: the overlap group it slows; -1 = none.
  std::vector<std::int32_t> overlap_group;
  std::vector<std::int32_t> mem_owner;  // memory account the deltas apply to (-1 = none)
  std::vector<double> mem_at_start;     // bytes added to mem_owner when the task starts
  std::vector<double> mem_at_end;       // bytes added when it completes (usually negative)
  // Edges (CSR): successors of task t are succ[succ_begin[t] .. succ_begin[t+1]).
  std::vector<std::int32_t> succ_begin, succ, num_preds;
  // Link resources crossed by comm task t: res[res_begin[t] .. res_begin[t+1]).
  std::vector<std::int32_t> res_begin, res;
  // Streams: tasks of stream s in order: stream_tasks[stream_begin[s] .. stream_begin[s+1]).
  std::vector<std::int32_t> stream_begin, stream_tasks;

  std::vector<double> resource_bw;      // capacity of each link resource (bytes/s, one direction)
  std::vector<double> initial_memory;   // starting bytes of each memory account
  int num_overlap_groups = 0;
  double overlap_slowdown = 1.0;        // compute runs at 1/overlap_slowdown while its group communicates

  int num_tasks() const { return static_cast<int>(work_s.size()); }
  int num_streams() const { return static_cast<int>(stream_begin.size()) - 1; }
};

// Appends tasks and edges, then freezes them into a TaskGraph (CSR).
class TaskGraphBuilder {
 public:
  int add_stream();
  int add_resource(double bw_bytes_per_s);
  int add_memory_account(double initial_bytes);
  int add_overlap_group();
  // A compute task on `stream` (its position in the stream = order of calls).
  int add_compute(int stream, double duration_s, int overlap_group = -1);
  // A flow over `resources`; total_s is its duration alone (latency_s of it is a fixed tail).
  int add_comm(int stream, double total_s, double latency_s, const std::vector<int>& resources,
               int overlap_group = -1);
  void add_edge(int from, int to);  // `to` waits for `from` to complete; ignored when either is -1
  void set_memory(int task, int account, double at_start, double at_end);
  void set_overlap_slowdown(double factor) { slowdown_ = factor; }
  int num_tasks() const { return static_cast<int>(g_.work_s.size()); }
  TaskGraph build();

 private:
  int add_task(int stream, TaskKind kind, double work, double latency, int group);
  TaskGraph g_;
  std::vector<std::vector<std::int32_t>> stream_lists_;
  std::vector<std::pair<std::int32_t, std::int32_t>> edges_;
  std::vector<std::vector<std::int32_t>> task_res_;
  double slowdown_ = 1.0;
};

struct MemoryTrack {
  double peak_bytes = 0;
  double peak_time_s = 0;
  std::vector<std::pair<double, double>> timeline;  // (time, bytes) after each change, when recorded
};

struct EngineResult {
  std::vector<double> start_s, end_s;  // per task
  double makespan_s = 0;
  std::int64_t events = 0;             // events popped from the queue (stale ones included)
  std::vector<MemoryTrack> memory;     // per memory account
};

struct EngineOptions {
  bool record_memory_timeline = false;
};

// Runs the graph to completion. Throws std::logic_error on a deadlock (a task never became ready: a bug in the
// graph, e.g. a dependency against stream order).
EngineResult run(const TaskGraph& g, const EngineOptions& opt = {});

}  // namespace strata::sim
