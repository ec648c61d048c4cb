// exec/worker: one rank's state (private to exec) — the layout of the plan, each local chunk's parameters in flat
// buffers (weight versions for PipeDream/2BW, ZeRO shards, gradient buckets), the micro-batches in flight — and the
// interpreter of the pipeline program (cost/program) that drives it. The parts live in their own files:
// worker_setup (buffers, buckets), worker_dp (ZeRO gathers, gradient sync, optimizer), worker_p2p (pipeline sends
// and receives), worker_program (the interpreter), worker_checkpoint; exec/train holds rendezvous and records.
#pragma once
#include <torch/csrc/autograd/function_hook.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rt.hpp"
#include "strata/cost/program.hpp"
#include "strata/exec/run.hpp"

namespace strata::exec {
using namespace rt;  // private header: the worker is written in rt's vocabulary (Tensor, Group, ChunkRunner)
using Clock = std::chrono::steady_clock;
using cost::Schedule;

double seconds_since(Clock::time_point t0);

struct Layout {
  int rank = 0, world = 1, dp = 1, tp = 1, pp = 1, v = 1;
  int stage = 0, dp_rank = 0, tp_rank = 0;
  // Per-stage strategies (issue 14): stage s has stage_dp[s] replicas of stage_tp[s] ranks from first_rank[s]
  // (the stages' devices in order), and runs stage_m[s] = gbs/(dp_s·mbs) micro-batches per replica and step;
  // dp/tp above are this rank's stage's. Empty for the uniform form.
  std::vector<int> first_rank, stage_dp, stage_tp;
  std::vector<std::int64_t> stage_m;
  bool per_stage() const { return !first_rank.empty(); }
  // Megatron's order (cost::Strategy): r = (stage·dp + dp_rank)·tp + tp_rank; per stage: first_rank + d·tp + t.
  int rank_of(int s, int d, int t) const {
    return per_stage() ? first_rank[s] + d * stage_tp[s] + t : (s * dp + d) * tp + t;
  }
};

Layout make_layout(const cost::Strategy& s, int rank);
RecomputeMode recompute_mode_of(model::Recompute r);  // oases is refused before (unsupported_reason)

struct ParamMeta {
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::int64_t> offsets, numels;
  std::vector<bool> sp_partial, tied;
  std::vector<std::pair<int, int>> entry_range;  // per entry of the chunk: [first, last) parameter indices
  std::int64_t numel = 0, padded = 0;            // padded to a multiple of dp (equal ZeRO shards)
  // Two regions of the flat layout (per-layer strategies, issue 16): [0, dp_elems) the DP layers' parameters
  // (ZeRO 0..2), [dp_elems, padded) the SDP (ZeRO-3) layers'; each padded to a multiple of dp. Uniform: one of
  // them is empty (zero = 3: all SDP).
  std::int64_t dp_elems = 0, sdp_elems = 0;
};

struct Worker;
struct Chunk;

// One copy of a chunk's weights as autograd sees them: leaf tensors that are views into `flat`, with gradients
// that are views into `gflat` (AccumulateGrad adds in place into them, like Megatron's contiguous buffers).
struct ParamBuf {
  Tensor flat, gflat;  // flat: the DP region's weights; gflat: the gradients of both regions
  Tensor sflat;        // the SDP region's weights (own storage, freed between uses; undefined when empty)
  std::vector<Tensor> params;
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<std::vector<Tensor>> by_entry;
};

struct Bucket {
  std::int64_t lo = 0, hi = 0;
  int params = 0;
};

struct Chunk {
  int local = 0, global = 0, first = 0, last = 0;
  ParamMeta meta;
  std::unique_ptr<ChunkRunner> runner;
  std::shared_ptr<ParamBuf> main;                        // flush schedules: the weights
  std::map<std::int64_t, std::shared_ptr<ParamBuf>> versions;  // pipedream/2bw: weights by update count
  Tensor shard;              // ZeRO-3: this rank's persistent shard of the SDP region
  Tensor grad_shard;         // ZeRO-2: reduce-scattered gradient shard of the DP region
  bool materialized = true;  // ZeRO-3: full parameters currently allocated
  Tensor exp_avg, exp_avg_sq;
  std::int64_t opt_step = 0;
  std::vector<Bucket> buckets;
  std::vector<int> bucket_of;
  // Gradient-sync state of the backward pass in flight.
  bool sync_final = false;
  ParamBuf* sync_buf = nullptr;
  std::shared_ptr<ParamBuf> window_buf;  // PipeDream/2BW: keeps the closed window's stashed weights alive until
                                         // its optimizer op (the version may already be gone from `versions`)
  std::vector<int> arrived;
  int next_launch = 0;
  std::vector<WorkPtr> works;
};

struct GradReadyHook : torch::autograd::FunctionPostHook {
  Worker* worker;
  Chunk* chunk;
  ParamBuf* buf;
  int param;
  GradReadyHook(Worker* w, Chunk* c, ParamBuf* b, int p) : worker(w), chunk(c), buf(b), param(p) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override;
};

struct Flight {
  Tensor input, output;  // input: received activation (leaf) or undefined on chunk 0; output: hidden or loss
  std::shared_ptr<ParamBuf> buf;
  Tensor grad_in;        // received gradient of `output` (not on the last chunk)
};

struct PendingSend {
  WorkPtr work;
  Tensor tensor;
};

struct Worker {
  RunOptions opt;
  Layout L;
  rt::CommStats stats;
  rt::Group world, tp, dp, pp, emb;
  rt::TpCtx tpctx;
  std::vector<std::unique_ptr<Chunk>> chunks;
  int m = 1;                 // micro-batches per step per pipeline
  int first_step = 0;        // global index of the first step of this run
  bool async = false;        // pipedream / 2bw
  std::map<std::pair<std::int64_t, int>, Flight> flights;   // (micro-batch, local chunk) in flight
  std::map<std::pair<std::int64_t, int>, Tensor> grads_out;  // input gradients waiting for their send op
  std::vector<PendingSend> sends;
  std::vector<double> losses, iter_times;
  std::vector<cost::ProgramOp> executed;  // the program ops this rank ran, in order (RunOptions::record_ops)
  double compute_s = 0;
  double step_loss = 0;
  int buckets_total = 0, buckets_overlapped = 0;  // data-parallel buckets launched / launched during backward
  bool holds_loss = false;   // stage pp-1, dp 0, tp 0

  const cost::Strategy& S() const { return opt.strategy; }
  int num_chunks() const { return L.pp * L.v; }
  bool is_last_chunk(const Chunk& c) const { return c.global == num_chunks() - 1; }

  // ---- set-up -------------------------------------------------------------------------------------------------
  void build(const std::vector<int>& bounds);
  void init_chunk(Chunk& c);
  void make_buckets(Chunk& c);
  std::shared_ptr<ParamBuf> make_buf(Chunk& c, const Tensor& values);
  // ---- ZeRO-3 parameter gathering (FSDP-style: free the full copy's storage, re-gather before use) ----------
  void free_params(Chunk& c);
  void gather_params(Chunk& c);
  // ---- gradient synchronisation ---------------------------------------------------------------------------------
  void begin_backward(Chunk& c, ParamBuf* buf, bool final);
  bool overlapped_dp() const { return L.dp > 1 && S().zero_stage < 2; }
  // Whether chain entry e's weights are sharded (SDP / ZeRO-3): its layer choice, else the strategy's zero = 3.
  bool entry_sdp(int e) const {
    return opt.layer_choices.empty() ? S().zero_stage == 3
                                     : opt.layer_choices[e].data_parallel == cost::LayerDataParallel::sdp;
  }
  // ZeRO stage of the DP region (the strategy's, at most 2; a per-layer strategy's stand-in is already capped).
  int dp_zero() const { return std::min(S().zero_stage, 2); }
  void grad_ready(Chunk& c, ParamBuf* buf, int param);
  void launch_ready(Chunk& c, bool all);
  // After the last backward of a chunk in this update: finish the data-parallel all-reduce (ZeRO-0/1), sum the
  // sequence-parallel partial gradients over tp.
  void finish_dp_and_sp(Chunk& c, ParamBuf& buf);
  // Tied embeddings (Megatron): the embedding on the first stage and its copy in the head on the last stage
  // receive the sum of both gradients, so both copies stay identical.
  void sync_tied(const std::vector<std::pair<Chunk*, ParamBuf*>>& active);
  void sync_tied_per_stage(std::vector<Tensor>& local, const std::vector<bool>& summed);
  // ---- optimizer (worker_dp) -------------------------------------------------------------------------------------
  // One optimizer update of p by g; Adam's states are c.exp_avg[state_off, state_off + p.numel()) and its step
  // count c.opt_step (advanced once per chunk and step by reduce_and_update_flush / update_async).
  void apply_update(Chunk& c, Tensor p, const Tensor& g, std::int64_t state_off = 0);
  // Flush schedules: reduce the gradients (per ZeRO stage) and update this chunk's weights (or shard) in place.
  void reduce_and_update_flush(Chunk& c);
  // ZeRO-1/2: all-gather the updated parameter shards (the program's param_gather op).
  void gather_updated_params(Chunk& c);
  // PipeDream/2BW: a new weight version = the newest version − update(gradient of the stashed version `buf`).
  void update_async(Chunk& c, ParamBuf& buf);
  // ---- pipeline p2p (worker_p2p) ---------------------------------------------------------------------------------
  int tag(std::int64_t mb, int g, bool grad) const {
    return static_cast<int>(2 * (mb * num_chunks() + g) + (grad ? 1 : 0));
  }
  // Per-stage strategies deal a step's micro-batches to a stage's replicas in blocks (replica d of stage s runs
  // global micro-batches d·m_s … d·m_s + m_s − 1, as samples() reads them): the peer of a transfer and the tag are
  // found from the global micro-batch; the uniform form sends to the same dp/tp rank of the peer stage (pp group).
  // Stages of different tp: a receiver takes the tensor from one sender tp rank, a sender may feed several.
  std::int64_t p2p_micro(std::int64_t local_micro) const;
  int p2p_replica(int peer_stage, std::int64_t local_micro) const;
  int p2p_source(int peer_stage, std::int64_t local_micro) const;
  std::vector<int> p2p_targets(int peer_stage, std::int64_t local_micro) const;
  Tensor recv(int src_stage, int t, const std::string& what);
  void send(const Tensor& x, const std::vector<int>& dsts, int t);
  void drain_sends(bool all);
  // ---- the program interpreter (worker_program) ------------------------------------------------------------------
  Tensor samples(std::int64_t step, std::int64_t mb) const;
  double normalizer() const;
  void run_program(const cost::PipelineProgram& prog);
  void run_op(const cost::ProgramOp& op);
  void forward_op(const cost::ProgramOp& op);
  void backward_op(const cost::ProgramOp& op);
  void optimizer_op();
  void maybe_fault(int step_in_run);
  void finish_step_loss(int step_in_run, Clock::time_point t0);
  // ---- checkpoints -------------------------------------------------------------------------------------------------
  std::string meta_key() const;
  void save_checkpoint(const std::string& dir, int steps_done);
  void load_checkpoint(const std::string& dir);
  // ---- the record ------------------------------------------------------------------------------------------------
  nlohmann::ordered_json rank_json() const;
};

}  // namespace strata::exec
