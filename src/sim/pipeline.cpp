// sim/pipeline: builds the task graph of a training run from abstract inputs and summarises the simulated
// timeline (see pipeline.hpp). Pass 1 creates every worker's compute-stream tasks and p2p sends in schedule
// order; pass 2 adds the pipeline dependencies and the data-parallel group traffic (gradient buckets released
// during the last backward of each chunk, ZeRO gathers) in each rank's op order, so that every in-order stream
// receives its tasks in an order consistent with the dependencies (no deadlock by construction).
#include "strata/sim/pipeline.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

namespace strata::sim {

std::string_view to_string(TaskTag t) {
  switch (t) {
    case TaskTag::forward: return "forward";
    case TaskTag::backward: return "backward";
    case TaskTag::recompute: return "recompute";
    case TaskTag::tp_comm: return "tp-collective";
    case TaskTag::optimizer: return "optimizer";
    case TaskTag::send_fwd: return "send-activation";
    case TaskTag::send_bwd: return "send-gradient";
    case TaskTag::dp_sync: return "dp-grad-sync";
    case TaskTag::param_gather: return "param-allgather";
    case TaskTag::zero3_gather: return "zero3-gather";
  }
  return "?";
}

namespace {

using cost::Schedule;

bool async_schedule(Schedule s) { return s == Schedule::pipedream || s == Schedule::two_bw; }

// One rank's compute-stream ops, taken from the pipeline program (cost/program: the one schedule generator, which
// the executor interprets too): which backward ops release gradient buckets, the batch of each op, weight-version
// memory deltas. p2p and DP traffic are modelled here on their own streams, driven by these ops.
struct ProgramOp {
  cost::ProgramOpKind kind;
  std::int64_t micro;  // global micro-batch; optimizer: its update window
  int chunk;           // local chunk (optimizer: 0)
};

struct OrderInfo {
  std::vector<ProgramOp> ops;
  std::vector<char> sync_b;             // backward op that releases its chunk's DP buckets
  std::vector<std::int64_t> batch;      // batch (iteration) of each op
  std::vector<int> wver_start_delta;    // weight versions added at op start
  std::vector<int> wver_end_delta;      // ... at op end
  int max_versions = 1;
  std::int64_t max_in_flight = 0;
  bool version_rule_ok = true;
};

bool is_compute(cost::ProgramOpKind k) {
  return k == cost::ProgramOpKind::forward || k == cost::ProgramOpKind::backward || k == cost::ProgramOpKind::optimizer;
}

OrderInfo analyse(const PipelineInput& in, const cost::StageProgram& sp, bool program_valid) {
  using PK = cost::ProgramOpKind;
  OrderInfo o;
  std::vector<std::int64_t> version;  // per compute op: weights used (forward/backward) or produced (optimizer)
  for (const auto& op : sp.ops) {
    if (!is_compute(op.kind)) continue;
    o.ops.push_back(ProgramOp{op.kind, op.kind == PK::optimizer ? op.window : op.micro, std::max(op.chunk, 0)});
    // ZeRO-3 reduce-scatters the gradients after every backward (FSDP); otherwise the window's last backward.
    o.sync_b.push_back(op.kind == PK::backward && (op.closes_window || in.zero_stage == 3));
    o.batch.push_back(op.iteration);
    version.push_back(op.weight_version);
  }
  const auto n = o.ops.size();
  o.wver_start_delta.assign(n, 0);
  o.wver_end_delta.assign(n, 0);
  o.max_versions = sp.max_weight_versions;
  o.max_in_flight = sp.max_in_flight;
  o.version_rule_ok = program_valid;
  // Memory of weight versions: creating version k+1 allocates a buffer unless version k is dead by then (update in
  // place); a superseded version is freed after its last backward. A version asked for before it exists (2BW with
  // m < p: the program check fails) is charged as the latest one.
  std::map<std::int64_t, std::size_t> last_use, created_at;
  std::int64_t latest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (o.ops[i].kind == PK::optimizer) {
      latest = version[i];
      created_at[latest] = i;
    } else if (o.ops[i].kind == PK::backward) {
      last_use[std::min(version[i], latest)] = i;
    }
  }
  for (const auto& [ver, at] : created_at) {
    auto prev = last_use.find(ver - 1);
    if (prev != last_use.end() && prev->second > at) {
      o.wver_start_delta[at] += 1;
      o.wver_end_delta[prev->second] -= 1;
    }
  }
  return o;
}

void validate(const PipelineInput& in) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("simulate_pipeline: " + what); };
  if (in.p < 1 || in.v < 1 || in.dp < 1 || in.m < 1 || in.iterations < 1) bad("p, v, dp, m, iterations must be >= 1");
  if (static_cast<int>(in.workers.size()) != in.p * in.dp) bad("workers must have p*dp entries");
  for (auto& w : in.workers)
    if (static_cast<int>(w.chunks.size()) != in.v) bad("every worker needs v chunks");
  if (in.v > 1 && in.schedule != Schedule::interleaved) bad("v > 1 needs the interleaved schedule");
  if (in.schedule == Schedule::interleaved && in.m % in.p != 0) bad("interleaved needs m % p == 0");
  if (!in.sync.empty() && static_cast<int>(in.sync.size()) != in.p) bad("sync must be empty or have p entries");
  if (!(in.overlap_slowdown >= 1.0)) bad("overlap_slowdown must be >= 1");
  if (!in.replica_count.empty() && static_cast<int>(in.replica_count.size()) != in.dp)
    bad("replica_count must be empty or have dp entries");
}

class Builder {
 public:
  explicit Builder(const PipelineInput& in) : in_(in) {}

  SimResult run(const SimOptions& opt) {
    validate(in_);
    setup();
    const auto prog = cost::build_program(cost::ProgramShape{in_.schedule, in_.p, in_.v, in_.m, in_.iterations, 0,
                                                             in_.zero_stage});
    const bool valid = cost::check_program(prog).empty();
    for (int r = 0; r < in_.p; ++r) orders_.push_back(analyse(in_, prog.stages[r], valid));
    for (int w = 0; w < nw_; ++w) pass1(w);
    for (int w = 0; w < nw_; ++w) pipeline_edges(w);
    for (int r = 0; r < in_.p; ++r) group_traffic(r);
    return finish(opt);
  }

 private:
  struct WorkerTasks {
    std::vector<std::int32_t> op_first, op_last;  // per op
    std::vector<std::vector<std::int32_t>> b_parts;  // per op: backward compute parts (buckets)
    std::vector<std::int32_t> fwd_out, bwd_out;   // per micro·v + chunk: completion = output ready to send
    std::vector<std::int32_t> send_f, send_b;     // per micro·v + chunk
  };

  int worker_of(int global_chunk, int d) const { return (global_chunk % in_.p) * in_.dp + d; }
  const StageSync* sync_of(int r) const { return in_.sync.empty() ? nullptr : &in_.sync[r]; }

  void setup() {
    nw_ = in_.p * in_.dp;
    for (double bw : in_.resource_bw) b_.add_resource(bw);
    b_.set_overlap_slowdown(in_.overlap_slowdown);
    for (int r = 0; r < in_.p; ++r) group_.push_back(in_.overlap_slowdown > 1.0 ? b_.add_overlap_group() : -1);
    tasks_.resize(nw_);
    for (int w = 0; w < nw_; ++w) {
      compute_.push_back(new_stream(StreamRole::compute, w, -1));
      sendf_.push_back(new_stream(StreamRole::send_fwd, w, -1));
      sendb_.push_back(new_stream(StreamRole::send_bwd, w, -1));
      bool overlaps = false;  // a TP stream only for workers with overlapped chunks (Oases)
      for (const auto& ch : in_.workers[w].chunks) overlaps = overlaps || ch.tp_blocks_fwd > 0 || ch.tp_blocks_bwd > 0;
      tpstream_.push_back(overlaps ? new_stream(StreamRole::tp, w, -1) : -1);
      mem_.push_back(b_.add_memory_account(in_.workers[w].static_bytes));
    }
  }
  int new_stream(StreamRole role, int worker, int tp) {
    role_.push_back(role);
    stream_worker_.push_back(worker);
    stream_tp_.push_back(tp);
    return b_.add_stream();
  }
  int dp_stream(int r, int tp) {
    auto key = std::make_pair(r, tp);
    auto it = dp_streams_.find(key);
    if (it != dp_streams_.end()) return it->second;
    const int s = new_stream(StreamRole::dp, r * in_.dp, tp);
    dp_streams_[key] = s;
    return s;
  }
  int compute_task(int w, double dur, TaskTag tag, std::int64_t micro, int gchunk) {
    const int r = w / in_.dp;
    const int t = b_.add_compute(compute_[w], dur, group_[r]);
    info_.push_back(TaskInfo{tag, w, -1, micro, gchunk});
    return t;
  }
  int tp_task(int w, double dur, std::int64_t micro, int gchunk) {
    const int t = b_.add_comm(compute_[w], dur, 0.0, {});
    info_.push_back(TaskInfo{TaskTag::tp_comm, w, -1, micro, gchunk});
    return t;
  }
  // Oases' two-sub-batch chain of one pass (docs/simulator.md): for each block v and sub-batch a, b in turn
  // (the first ones after `after`),
  // [recompute share] compute share on the compute stream, after that sub-batch's previous block collective;
  // then its block collective on the TP stream (in the stage's overlap group). Returns the compute tasks in
  // order; `last` = the final collective.
  std::vector<int> overlapped_pass(int w, bool fwd, const ChunkWork& cw, std::int64_t micro, int g, int& last,
                                   int after = -1) {
    const int r = w / in_.dp;
    const int blocks = fwd ? cw.tp_blocks_fwd : cw.tp_blocks_bwd;
    const double n = 2.0 * blocks;
    const double comp = (fwd ? cw.fwd_s : cw.bwd_s) / n, rec = fwd ? 0.0 : cw.recompute_s / n;
    const double comm = (fwd ? cw.tp_sub_fwd_s : cw.tp_sub_bwd_s) / blocks;
    std::vector<int> out;
    int prev[2] = {after, after};  // the backward waits for its forward's last collective (on the TP stream)
    for (int v = 0; v < blocks; ++v)
      for (int sb = 0; sb < 2; ++sb) {
        int first = -1;
        if (rec > 0) {
          first = compute_task(w, rec, TaskTag::recompute, micro, g);
          out.push_back(first);
        }
        const int t = compute_task(w, comp, fwd ? TaskTag::forward : TaskTag::backward, micro, g);
        out.push_back(t);
        b_.add_edge(prev[sb], first >= 0 ? first : t);
        prev[sb] = b_.add_comm(tpstream_[w], comm, 0.0, {}, group_[r]);
        info_.push_back(TaskInfo{TaskTag::tp_comm, w, -1, micro, g});
        b_.add_edge(t, prev[sb]);
      }
    last = prev[1];
    return out;
  }
  // A blocking TP task of `dur` after `after` (Megatron; or an overlapped chunk's layers that do not overlap);
  // `after` itself when there is none.
  int then_tp(int w, int after, double dur, std::int64_t micro, int g) {
    if (!(dur > 0)) return after;
    const int t = tp_task(w, dur, micro, g);
    b_.add_edge(after, t);
    return t;
  }
  int flow_task(int stream, const Flow& f, TaskTag tag, int w, int tp, std::int64_t micro, int gchunk, int grp) {
    const int t = b_.add_comm(stream, f.time_s, f.latency_s, f.resources, grp);
    info_.push_back(TaskInfo{tag, w, tp, micro, gchunk});
    return t;
  }

  // The backward of op i under overlapped TP: the chain, its compute tasks standing in for the bucket parts
  // (part k released by the compute task ⌈(k+1)·n/parts⌉ − 1), memory and the gradient send as in pass1.
  void backward_overlapped(int w, std::size_t i, const ChunkWork& cw, const ProgramOp& op, int g, bool rec) {
    const int r = w / in_.dp;
    const OrderInfo& o = orders_[r];
    WorkerTasks& wt = tasks_[w];
    const std::int64_t key = op.micro * in_.v + op.chunk;
    int last = -1;
    const std::vector<int> comp = overlapped_pass(w, false, cw, op.micro, g, last, wt.fwd_out[key]);
    last = then_tp(w, last, cw.tp_bwd_s, op.micro, g);
    if (rec) b_.set_memory(comp.front(), mem_[w], cw.recompute_bytes, 0);
    std::size_t parts = 1;
    const StageSync* ss = sync_of(r);
    if (o.sync_b[i] && ss && op.chunk < static_cast<int>(ss->grad_buckets.size()))
      parts = std::max<std::size_t>(1, ss->grad_buckets[op.chunk].size());
    for (std::size_t k = 0; k < parts; ++k)
      wt.b_parts[i].push_back(comp[std::min(comp.size() - 1, ((k + 1) * comp.size() + parts - 1) / parts - 1)]);
    // The activations are freed when the last compute that reads them ends (the tail collective moves the input
    // gradient only), as the cost model counts micro-batches in flight.
    b_.set_memory(comp.back(), mem_[w], 0,
                  -(cw.act_bytes + (rec ? cw.recompute_bytes : 0.0)) + o.wver_end_delta[i] * in_.workers[w].weight_bytes);
    wt.op_first[i] = comp.front();
    wt.op_last[i] = wt.bwd_out[key] = last;
    if (g > 0 && worker_of(g - 1, w % in_.dp) != w) {
      wt.send_b[key] = flow_task(sendb_[w], cw.send_prev, TaskTag::send_bwd, w, -1, op.micro, g, -1);
      b_.add_edge(last, wt.send_b[key]);
    }
  }

  void pass1(int w) {
    const int r = w / in_.dp;
    const OrderInfo& o = orders_[r];
    const WorkerInput& wi = in_.workers[w];
    WorkerTasks& wt = tasks_[w];
    const std::int64_t keys = in_.m * in_.iterations * in_.v;
    wt.fwd_out.assign(keys, -1);
    wt.bwd_out.assign(keys, -1);
    wt.send_f.assign(keys, -1);
    wt.send_b.assign(keys, -1);
    const auto n = o.ops.size();
    wt.op_first.assign(n, -1);
    wt.op_last.assign(n, -1);
    wt.b_parts.assign(n, {});
    const int last_chunk = in_.p * in_.v - 1;
    const double wbytes = wi.weight_bytes;
    for (std::size_t i = 0; i < n; ++i) {
      const ProgramOp& op = o.ops[i];
      const int g = op.chunk * in_.p + r;
      const std::int64_t key = op.micro * in_.v + op.chunk;
      if (op.kind == cost::ProgramOpKind::optimizer) {
        const int t = compute_task(w, wi.optimizer_s, TaskTag::optimizer, op.micro, -1);
        b_.set_memory(t, mem_[w], o.wver_start_delta[i] * wbytes, o.wver_end_delta[i] * wbytes);
        wt.op_first[i] = wt.op_last[i] = t;
        continue;
      }
      const ChunkWork& cw = wi.chunks[op.chunk];
      const bool overlap_f = cw.tp_blocks_fwd > 0, overlap_b = cw.tp_blocks_bwd > 0;
      if (op.kind == cost::ProgramOpKind::forward) {
        int last = -1;
        const int f = overlap_f ? overlapped_pass(w, true, cw, op.micro, g, last).front()
                                : compute_task(w, cw.fwd_s, TaskTag::forward, op.micro, g);
        if (!overlap_f) last = f;
        last = then_tp(w, last, cw.tp_fwd_s, op.micro, g);
        b_.set_memory(f, mem_[w], cw.act_bytes, 0);  // forwards never change weight versions
        wt.op_first[i] = f;
        wt.op_last[i] = wt.fwd_out[key] = last;
        if (g < last_chunk && worker_of(g + 1, w % in_.dp) != w) {
          wt.send_f[key] = flow_task(sendf_[w], cw.send_next, TaskTag::send_fwd, w, -1, op.micro, g, -1);
          b_.add_edge(last, wt.send_f[key]);
        }
        continue;
      }
      // Backward: [recompute] backward compute (split into bucket parts when it releases DP buckets) [tp].
      // Memory: recompute re-materialises its bytes at its start; the backward's end frees the micro-batch's
      // activations and, at a version's last use, a superseded weight version.
      int first = -1;
      const bool rec = cw.recompute_s > 0;
      if (overlap_b) {
        backward_overlapped(w, i, cw, op, g, rec);
        continue;
      }
      if (rec) {
        first = compute_task(w, cw.recompute_s, TaskTag::recompute, op.micro, g);
        b_.set_memory(first, mem_[w], cw.recompute_bytes, 0);
      }
      std::size_t parts = 1;
      const StageSync* ss = sync_of(r);
      if (o.sync_b[i] && ss && op.chunk < static_cast<int>(ss->grad_buckets.size()))
        parts = std::max<std::size_t>(1, ss->grad_buckets[op.chunk].size());
      for (std::size_t k = 0; k < parts; ++k) {
        const int t = compute_task(w, cw.bwd_s / static_cast<double>(parts), TaskTag::backward, op.micro, g);
        wt.b_parts[i].push_back(t);
        if (first < 0) first = t;
      }
      int last = wt.b_parts[i].back();
      if (cw.tp_bwd_s > 0) last = tp_task(w, cw.tp_bwd_s, op.micro, g);
      b_.set_memory(last, mem_[w], 0,
                    -(cw.act_bytes + (rec ? cw.recompute_bytes : 0.0)) + o.wver_end_delta[i] * wbytes);
      wt.op_first[i] = first;
      wt.op_last[i] = wt.bwd_out[key] = last;
      if (g > 0 && worker_of(g - 1, w % in_.dp) != w) {
        wt.send_b[key] = flow_task(sendb_[w], cw.send_prev, TaskTag::send_bwd, w, -1, op.micro, g, -1);
        b_.add_edge(last, wt.send_b[key]);
      }
    }
  }

  // Data dependencies along the pipeline: forward of chunk g needs chunk g−1's output; backward (and its
  // recompute) of chunk g needs chunk g+1's gradient.
  void pipeline_edges(int w) {
    const int r = w / in_.dp, d = w % in_.dp;
    const OrderInfo& o = orders_[r];
    const int last_chunk = in_.p * in_.v - 1;
    for (std::size_t i = 0; i < o.ops.size(); ++i) {
      const ProgramOp& op = o.ops[i];
      if (op.kind == cost::ProgramOpKind::optimizer) continue;
      const int g = op.chunk * in_.p + r;
      if (op.kind == cost::ProgramOpKind::forward && g > 0) {
        const int src = worker_of(g - 1, d);
        const std::int64_t key = op.micro * in_.v + (g - 1) / in_.p;
        b_.add_edge(src == w ? tasks_[src].fwd_out[key] : tasks_[src].send_f[key], tasks_[w].op_first[i]);
      } else if (op.kind == cost::ProgramOpKind::backward && g < last_chunk) {
        const int src = worker_of(g + 1, d);
        const std::int64_t key = op.micro * in_.v + (g + 1) / in_.p;
        b_.add_edge(src == w ? tasks_[src].bwd_out[key] : tasks_[src].send_b[key], tasks_[w].op_first[i]);
      }
    }
  }

  // The dp group of rank r: gradient buckets (released by each replica's backward part k), the optimizer waiting
  // for its window's buckets, ZeRO-1/2 parameter all-gather after the step, ZeRO-3 gathers before each pass.
  void group_traffic(int r) {
    const StageSync* ss = sync_of(r);
    if (!ss) return;
    const OrderInfo& o = orders_[r];
    std::vector<std::int32_t> pending;  // bucket flows since the last optimizer step
    std::vector<std::int32_t> gathers_after_opt;
    for (std::size_t i = 0; i < o.ops.size(); ++i) {
      const ProgramOp& op = o.ops[i];
      const int g = op.chunk * in_.p + r;
      if (op.kind != cost::ProgramOpKind::optimizer && !gathers_after_opt.empty()) {
        for (int d = 0; d < in_.dp; ++d)
          for (int t : gathers_after_opt) b_.add_edge(t, tasks_[r * in_.dp + d].op_first[i]);
        gathers_after_opt.clear();
      }
      if (op.kind != cost::ProgramOpKind::optimizer && in_.zero_stage == 3 && op.chunk < static_cast<int>(ss->zero3_gather.size())) {
        const auto& flows = ss->zero3_gather[op.chunk];
        for (std::size_t tp = 0; tp < flows.size(); ++tp) {
          const int t = flow_task(dp_stream(r, static_cast<int>(tp)), flows[tp], TaskTag::zero3_gather, r * in_.dp,
                                  static_cast<int>(tp), op.micro, g, group_[r]);
          for (int d = 0; d < in_.dp; ++d) {
            const auto& wt = tasks_[r * in_.dp + d];
            if (i >= 2) b_.add_edge(wt.op_last[i - 2], t);  // prefetch one pass ahead
            b_.add_edge(t, wt.op_first[i]);
          }
        }
      }
      if (op.kind == cost::ProgramOpKind::backward && o.sync_b[i] && op.chunk < static_cast<int>(ss->grad_buckets.size())) {
        const auto& buckets = ss->grad_buckets[op.chunk];
        for (std::size_t k = 0; k < buckets.size(); ++k) {
          for (std::size_t tp = 0; tp < buckets[k].size(); ++tp) {
            const int t = flow_task(dp_stream(r, static_cast<int>(tp)), buckets[k][tp], TaskTag::dp_sync, r * in_.dp,
                                    static_cast<int>(tp), op.micro, g, group_[r]);
            for (int d = 0; d < in_.dp; ++d) b_.add_edge(tasks_[r * in_.dp + d].b_parts[i][k], t);
            pending.push_back(t);
          }
        }
      }
      if (op.kind == cost::ProgramOpKind::optimizer) {
        for (int d = 0; d < in_.dp; ++d)
          for (int t : pending) b_.add_edge(t, tasks_[r * in_.dp + d].op_first[i]);
        pending.clear();
        if (in_.zero_stage == 1 || in_.zero_stage == 2) {
          for (int c = 0; c < static_cast<int>(ss->param_gather.size()); ++c) {
            const auto& flows = ss->param_gather[c];
            for (std::size_t tp = 0; tp < flows.size(); ++tp) {
              const int t = flow_task(dp_stream(r, static_cast<int>(tp)), flows[tp], TaskTag::param_gather,
                                      r * in_.dp, static_cast<int>(tp), op.micro, c * in_.p + r, group_[r]);
              for (int d = 0; d < in_.dp; ++d) b_.add_edge(tasks_[r * in_.dp + d].op_last[i], t);
              gathers_after_opt.push_back(t);
              batch_tail_.push_back({o.batch[i], t});
            }
          }
        }
      }
    }
  }

  SimResult finish(const SimOptions& opt) {
    SimResult res;
    res.tasks = b_.num_tasks();
    res.graph = b_.build();
    EngineOptions eo;
    eo.record_memory_timeline = opt.record_memory_timeline;
    res.engine = sim::run(res.graph, eo);
    res.events = res.engine.events;
    res.makespan_s = res.engine.makespan_s;
    // End of each batch: the last op of that batch on every worker, and its parameter gathers.
    res.iteration_end_s.assign(in_.iterations, 0.0);
    for (int w = 0; w < nw_; ++w) {
      const OrderInfo& o = orders_[w / in_.dp];
      for (std::size_t i = 0; i < o.ops.size(); ++i) {
        const auto b = std::min<std::int64_t>(o.batch[i], in_.iterations - 1);
        res.iteration_end_s[b] = std::max(res.iteration_end_s[b], res.engine.end_s[tasks_[w].op_last[i]]);
      }
    }
    for (auto [b, t] : batch_tail_) {
      const auto bb = std::min<std::int64_t>(b, in_.iterations - 1);
      res.iteration_end_s[bb] = std::max(res.iteration_end_s[bb], res.engine.end_s[t]);
    }
    for (int i = 1; i < in_.iterations; ++i)
      res.iteration_end_s[i] = std::max(res.iteration_end_s[i], res.iteration_end_s[i - 1]);
    const int n = in_.iterations;
    if (async_schedule(in_.schedule) && n >= 2) {
      // Steady state: from the end of the first batch (pipeline filled) to the end of the last batch that is
      // not drained (the final batch's cool-down is not part of the steady state when there are ≥ 3 batches).
      const int last = n >= 3 ? n - 2 : n - 1;
      res.window_begin_s = res.iteration_end_s[0];
      res.window_end_s = res.iteration_end_s[last];
      res.iteration_time_s = (res.window_end_s - res.window_begin_s) / last;
    } else {
      res.window_begin_s = 0;
      res.window_end_s = res.iteration_end_s[n - 1];
      res.iteration_time_s = res.window_end_s / n;
    }
    stats(res);
    for (int t = 0; t < res.graph.num_tasks(); ++t) {
      const double actual = res.engine.end_s[t] - res.engine.start_s[t];
      const double alone = res.graph.work_s[t] + res.graph.latency_s[t];
      if (actual - alone <= 1e-9 * alone) continue;  // rounding of re-timed tasks, not a slowdown
      // A representative's own task stands for replica_count of them; the dp group's flows are there once.
      const double times = in_.replica_count.empty() || info_[t].tp_rank >= 0
                               ? 1.0 : in_.replica_count[info_[t].worker % in_.dp];
      if (res.graph.kind[t] == TaskKind::compute) {
        res.overlap_extra_s += times * (actual - alone);
      } else if (res.graph.res_begin[t + 1] > res.graph.res_begin[t] && alone > 0) {
        res.flow_contention_s += times * std::max(0.0, actual - alone);
        res.max_flow_stretch = std::max(res.max_flow_stretch, actual / alone);
      }
    }
    if (opt.keep_timeline) {
      res.info = std::move(info_);
      res.stream_role = role_;
      res.stream_worker = stream_worker_;
      res.stream_tp = stream_tp_;
    } else {
      res.graph = TaskGraph{};
      res.engine.start_s.clear();
      res.engine.end_s.clear();
    }
    return res;
  }

  void stats(SimResult& res) const {
    const double wb = res.window_begin_s, we = res.window_end_s, len = std::max(we - wb, 1e-300);
    res.workers.resize(nw_);
    double bubble_sum = 0;
    for (int w = 0; w < nw_; ++w) {
      auto& st = res.workers[w];
      const auto& g = res.graph;
      const int s = compute_[w];
      for (int i = g.stream_begin[s]; i < g.stream_begin[s + 1]; ++i) {
        const int t = g.stream_tasks[i];
        st.busy_s += std::max(0.0, std::min(we, res.engine.end_s[t]) - std::max(wb, res.engine.start_s[t]));
      }
      st.idle_s = std::max(0.0, (we - wb) - st.busy_s);
      st.bubble_fraction = st.idle_s / len;
      bubble_sum += st.bubble_fraction;
      st.peak_memory_bytes = res.engine.memory[mem_[w]].peak_bytes;
      st.peak_memory_time_s = res.engine.memory[mem_[w]].peak_time_s;
      const OrderInfo& o = orders_[w / in_.dp];
      st.max_weight_versions = o.max_versions;
      st.max_in_flight = o.max_in_flight;
      st.version_rule_ok = o.version_rule_ok;
    }
    res.bubble_fraction = bubble_sum / nw_;
  }

  const PipelineInput& in_;
  int nw_ = 0;
  TaskGraphBuilder b_;
  std::vector<OrderInfo> orders_;
  std::vector<WorkerTasks> tasks_;
  std::vector<int> compute_, sendf_, sendb_, tpstream_, mem_, group_;
  std::map<std::pair<int, int>, int> dp_streams_;
  std::vector<TaskInfo> info_;
  std::vector<StreamRole> role_;
  std::vector<std::int32_t> stream_worker_, stream_tp_;
  std::vector<std::pair<std::int64_t, int>> batch_tail_;
};

}  // namespace

SimResult simulate_pipeline(const PipelineInput& in, const SimOptions& opt) { return Builder(in).run(opt); }

PipelineInput uniform_pipeline(Schedule s, int p, std::int64_t m, int v, double fwd_s, double bwd_s, int iterations,
                               int dp) {
  PipelineInput in;
  in.schedule = s;
  in.p = p;
  in.v = v;
  in.dp = dp;
  in.m = m;
  in.iterations = iterations;
  in.workers.resize(static_cast<std::size_t>(p) * dp);
  for (auto& w : in.workers) {
    w.chunks.resize(v);
    for (auto& c : w.chunks) {
      c.fwd_s = fwd_s / v;
      c.bwd_s = bwd_s / v;
      c.act_bytes = 1.0;
    }
    w.weight_bytes = 0;
  }
  return in;
}

}  // namespace strata::sim
