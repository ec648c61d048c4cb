// exec/train: one rank of a run — rendezvous (TCPStore), the process groups of the plan, parameters in flat
// buffers with bucketed data-parallel gradient all-reduce overlapped with backward, ZeRO-1/2/3 sharding, the
// pipeline schedules (flush: GPipe, 1F1B, interleaved; flush-free: PipeDream weight stashing, 2BW double
// buffering), the optimizer, sharded checkpoints and the measured record. docs/executor.md explains the design.
#include <ATen/native/Resize.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "rt.hpp"
#include "strata/core/error.hpp"
#include "strata/core/json.hpp"
#include "strata/exec/schedule.hpp"

namespace strata::exec {
namespace {
using namespace rt;
using Clock = std::chrono::steady_clock;
using cost::Schedule;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Layout {
  int rank = 0, world = 1, dp = 1, tp = 1, pp = 1, v = 1;
  int stage = 0, dp_rank = 0, tp_rank = 0;
  // Megatron's order (cost::Strategy): r = (stage·dp + dp_rank)·tp + tp_rank.
  int rank_of(int s, int d, int t) const { return (s * dp + d) * tp + t; }
};

Layout make_layout(const cost::Strategy& s, int rank) {
  Layout l;
  l.rank = rank;
  l.dp = s.dp;
  l.tp = s.tp;
  l.pp = s.pp;
  l.v = s.virtual_stages;
  l.world = s.dp * s.tp * s.pp;
  l.tp_rank = rank % s.tp;
  l.dp_rank = (rank / s.tp) % s.dp;
  l.stage = rank / (s.tp * s.dp);
  return l;
}

struct ParamMeta {
  std::vector<std::string> names;
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<std::int64_t> offsets, numels;
  std::vector<bool> sp_partial, tied;
  std::vector<std::pair<int, int>> entry_range;  // per entry of the chunk: [first, last) parameter indices
  std::int64_t numel = 0, padded = 0;            // padded to a multiple of dp (equal ZeRO shards)
};

struct Worker;
struct Chunk;

// One copy of a chunk's weights as autograd sees them: leaf tensors that are views into `flat`, with gradients
// that are views into `gflat` (AccumulateGrad adds in place into them, like Megatron's contiguous buffers).
struct ParamBuf {
  Tensor flat, gflat;
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
  Tensor shard;              // ZeRO-3: this rank's persistent parameter shard
  Tensor grad_shard;         // ZeRO-2/3: reduce-scattered gradient shard
  bool materialized = true;  // ZeRO-3: full parameters currently allocated
  Tensor exp_avg, exp_avg_sq;
  std::int64_t opt_step = 0;
  std::vector<Bucket> buckets;
  std::vector<int> bucket_of;
  // Gradient-sync state of the backward pass in flight.
  bool sync_final = false;
  ParamBuf* sync_buf = nullptr;
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
};

struct PendingSend {
  WorkPtr work;
  Tensor tensor;
};

struct Worker {
  RunOptions opt;
  Layout L;
  CommStats stats;
  Group world, tp, dp, pp, emb;
  TpCtx tpctx;
  std::vector<std::unique_ptr<Chunk>> chunks;
  int m = 1;                 // micro-batches per step per pipeline
  int first_step = 0;        // global index of the first step of this run
  bool async = false;        // pipedream / 2bw
  std::map<std::pair<int, int>, Flight> flights;
  std::vector<PendingSend> sends;
  std::vector<double> losses, iter_times;
  double compute_s = 0;
  double step_loss = 0;
  int buckets_total = 0, buckets_overlapped = 0;  // data-parallel buckets launched / launched during backward
  bool holds_loss = false;   // stage pp-1, dp 0, tp 0

  const cost::Strategy& S() const { return opt.strategy; }
  int num_chunks() const { return L.pp * L.v; }
  bool is_last_chunk(const Chunk& c) const { return c.global == num_chunks() - 1; }

  // ---- set-up -------------------------------------------------------------------------------------------------
  void build(const std::vector<int>& bounds) {
    m = static_cast<int>(S().num_micro_batches());
    async = S().schedule == Schedule::pipedream || S().schedule == Schedule::two_bw;
    holds_loss = L.stage == L.pp - 1 && L.dp_rank == 0 && L.tp_rank == 0;
    tpctx.tp = tp;
    tpctx.sp = S().sequence_parallel && L.tp > 1;
    // Blocks recomputed on this stage: all (recompute given without rlayers) or the first rlayers[stage].
    int recompute_budget = S().recompute_layers.empty() ? 1 << 30 : S().recompute_layers[L.stage];
    const RecomputeMode mode = S().recompute == model::Recompute::full        ? RecomputeMode::full
                               : S().recompute == model::Recompute::selective ? RecomputeMode::selective
                                                                              : RecomputeMode::none;
    for (int c = 0; c < L.v; ++c) {
      auto ch = std::make_unique<Chunk>();
      ch->local = c;
      ch->global = c * L.pp + L.stage;
      ch->first = bounds[ch->global];
      ch->last = bounds[ch->global + 1];
      ch->runner = std::make_unique<ChunkRunner>();
      ch->runner->dims = opt.model;
      ch->runner->tp = &tpctx;
      ch->runner->first = ch->first;
      ch->runner->last = ch->last;
      ch->runner->recompute.assign(opt.model.layers + 2, RecomputeMode::none);
      for (int e = ch->first; e < ch->last; ++e)
        if (e >= 1 && e <= opt.model.layers && recompute_budget > 0 && mode != RecomputeMode::none) {
          ch->runner->recompute[e] = mode;
          --recompute_budget;
        }
      ch->runner->prepare();
      init_chunk(*ch);
      chunks.push_back(std::move(ch));
    }
  }

  void init_chunk(Chunk& c) {
    std::vector<Tensor> values;
    for (int e = c.first; e < c.last; ++e) {
      const int begin = static_cast<int>(c.meta.names.size());
      for (auto& p : init_entry(opt.model, e, L.tp, L.tp_rank, tpctx.sp, opt.seed)) {
        c.meta.names.push_back(p.name);
        c.meta.shapes.push_back(p.value.sizes().vec());
        c.meta.offsets.push_back(c.meta.numel);
        c.meta.numels.push_back(p.value.numel());
        c.meta.sp_partial.push_back(p.sp_partial);
        c.meta.tied.push_back(p.tied_embedding);
        c.meta.numel += p.value.numel();
        values.push_back(p.value);
      }
      c.meta.entry_range.emplace_back(begin, static_cast<int>(c.meta.names.size()));
    }
    c.meta.padded = (c.meta.numel + L.dp - 1) / L.dp * L.dp;
    Tensor flat = torch::zeros({c.meta.padded});
    for (std::size_t i = 0; i < values.size(); ++i)
      flat.narrow(0, c.meta.offsets[i], c.meta.numels[i]).copy_(values[i].reshape({-1}));
    make_buckets(c);
    c.main = make_buf(c, flat);
    if (async) c.versions[0] = c.main;
    const std::int64_t shard = c.meta.padded / L.dp;
    const std::int64_t opt_elems = S().zero_stage >= 1 ? shard : c.meta.padded;
    if (opt.optimizer == Optimizer::adam) {
      c.exp_avg = torch::zeros({opt_elems});
      c.exp_avg_sq = torch::zeros({opt_elems});
    }
    if (S().zero_stage == 3) {
      c.shard = flat.narrow(0, L.dp_rank * shard, shard).clone();
      free_params(c);
    }
  }

  void make_buckets(Chunk& c) {
    const auto n = static_cast<int>(c.meta.names.size());
    const auto per_bucket = std::max<std::int64_t>(1, static_cast<std::int64_t>(opt.bucket_bytes / 4));
    c.bucket_of.assign(n, 0);
    std::int64_t hi = c.meta.padded, acc = 0;
    Bucket cur;
    // Reverse parameter order: gradients become ready roughly from the last layer to the first (PyTorch DDP).
    for (int i = n - 1; i >= 0; --i) {
      c.bucket_of[i] = static_cast<int>(c.buckets.size());
      ++cur.params;
      acc += c.meta.numels[i];
      if (acc >= per_bucket || i == 0) {
        cur.lo = c.meta.offsets[i];
        cur.hi = hi;
        c.buckets.push_back(cur);
        hi = cur.lo;
        cur = Bucket{};
        acc = 0;
      }
    }
  }

  std::shared_ptr<ParamBuf> make_buf(Chunk& c, const Tensor& values) {
    auto b = std::make_shared<ParamBuf>();
    b->flat = values;
    b->gflat = torch::zeros({c.meta.padded});
    for (std::size_t i = 0; i < c.meta.names.size(); ++i) {
      Tensor p = torch::empty({0});
      p.set_data(b->flat.narrow(0, c.meta.offsets[i], c.meta.numels[i]).view(c.meta.shapes[i]));
      p.requires_grad_(true);
      p.mutable_grad() = b->gflat.narrow(0, c.meta.offsets[i], c.meta.numels[i]).view(c.meta.shapes[i]);
      auto acc = torch::autograd::impl::grad_accumulator(p);
      acc->add_post_hook(std::make_unique<GradReadyHook>(this, &c, b.get(), static_cast<int>(i)));
      b->accumulators.push_back(acc);
      b->params.push_back(p);
    }
    for (const auto& [lo, hi] : c.meta.entry_range)
      b->by_entry.emplace_back(b->params.begin() + lo, b->params.begin() + hi);
    return b;
  }

  // ---- ZeRO-3 parameter gathering (FSDP-style: free the full copy's storage, re-gather before use) ----------
  void free_params(Chunk& c) {
    if (S().zero_stage != 3 || !c.materialized) return;
    at::native::resize_bytes_cpu(c.main->flat.storage().unsafeGetStorageImpl(), 0);
    c.materialized = false;
  }
  void gather_params(Chunk& c) {
    if (S().zero_stage != 3 || c.materialized) return;
    at::native::resize_bytes_cpu(c.main->flat.storage().unsafeGetStorageImpl(),
                                 static_cast<std::size_t>(c.meta.padded) * sizeof(float));
    auto parts = c.main->flat.chunk(L.dp);
    allgather(c.shard, parts, dp, "ZeRO-3 parameter all-gather");
    c.materialized = true;
  }

  // ---- gradient synchronisation ---------------------------------------------------------------------------------
  void begin_backward(Chunk& c, ParamBuf* buf, bool final) {
    c.sync_final = final;
    c.sync_buf = buf;
    if (final) {
      c.arrived.assign(c.buckets.size(), 0);
      c.next_launch = 0;
      c.works.clear();
    }
  }
  bool overlapped_dp() const { return L.dp > 1 && S().zero_stage < 2; }
  void grad_ready(Chunk& c, ParamBuf* buf, int param) {
    if (!c.sync_final || buf != c.sync_buf || !overlapped_dp()) return;
    ++c.arrived[c.bucket_of[param]];
    const int before = c.next_launch;
    launch_ready(c, false);
    buckets_overlapped += c.next_launch - before;
  }
  void launch_ready(Chunk& c, bool all) {
    while (c.next_launch < static_cast<int>(c.buckets.size()) &&
           (all || c.arrived[c.next_launch] == c.buckets[c.next_launch].params)) {
      const auto& b = c.buckets[c.next_launch++];
      ++buckets_total;
      Tensor view = c.sync_buf->gflat.narrow(0, b.lo, b.hi - b.lo);
      c.works.push_back(allreduce_async(view, dp));
    }
  }
  // After the last backward of a chunk in this update: finish the data-parallel all-reduce (ZeRO-0/1), sum the
  // sequence-parallel partial gradients over tp.
  void finish_dp_and_sp(Chunk& c, ParamBuf& buf) {
    if (overlapped_dp()) {
      launch_ready(c, true);
      for (auto& w : c.works) wait_work(w, dp, "data-parallel gradient all-reduce");
      c.works.clear();
    }
    if (tpctx.sp) {
      std::vector<Tensor> views;
      for (std::size_t i = 0; i < c.meta.names.size(); ++i)
        if (c.meta.sp_partial[i]) views.push_back(buf.gflat.narrow(0, c.meta.offsets[i], c.meta.numels[i]));
      if (!views.empty()) {
        Tensor cat = torch::cat(views);
        allreduce_sum(cat, tp, "sequence-parallel LayerNorm/bias gradient all-reduce");
        std::int64_t off = 0;
        for (auto& v : views) {
          v.copy_(cat.narrow(0, off, v.numel()));
          off += v.numel();
        }
      }
    }
  }
  // Tied embeddings (Megatron): the embedding on the first stage and its copy in the head on the last stage
  // receive the sum of both gradients, so both copies stay identical.
  void sync_tied(const std::vector<std::pair<Chunk*, ParamBuf*>>& active) {
    if (!opt.model.tied_embeddings) return;
    std::vector<Tensor> local;
    for (auto [c, b] : active)
      for (std::size_t i = 0; i < c->meta.names.size(); ++i)
        if (c->meta.tied[i]) local.push_back(b->gflat.narrow(0, c->meta.offsets[i], c->meta.numels[i]));
    if (local.size() == 2) {
      Tensor sum = local[0] + local[1];
      local[0].copy_(sum);
      local[1].copy_(sum);
    } else if (local.size() == 1 && emb.size > 1) {
      allreduce_sum(local[0], emb, "tied-embedding gradient all-reduce");
    }
  }

  // ---- optimizer -----------------------------------------------------------------------------------------------
  void apply_update(Chunk& c, Tensor p, const Tensor& g) {
    torch::NoGradGuard ng;
    if (opt.optimizer == Optimizer::sgd) {
      p.add_(g, -opt.lr);
      return;
    }
    // Adam (Kingma & Ba 2015), as torch.optim.Adam: β1 0.9, β2 0.999, ε 1e-8, bias-corrected.
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    ++c.opt_step;
    c.exp_avg.mul_(b1).add_(g, 1 - b1);
    c.exp_avg_sq.mul_(b2).addcmul_(g, g, 1 - b2);
    const double bc1 = 1 - std::pow(b1, static_cast<double>(c.opt_step));
    const double bc2 = 1 - std::pow(b2, static_cast<double>(c.opt_step));
    Tensor denom = (c.exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(eps);
    p.addcdiv_(c.exp_avg, denom, -opt.lr / bc1);
  }

  // Flush schedules: reduce (per ZeRO stage) and update this chunk's weights in place.
  void reduce_and_step_flush(Chunk& c) {
    const std::int64_t shard = c.meta.padded / L.dp, lo = L.dp_rank * shard;
    ParamBuf& b = *c.main;
    if (S().zero_stage >= 2) {
      if (L.dp > 1) {
        std::vector<Tensor> parts;
        for (const auto& p : b.gflat.chunk(L.dp)) parts.push_back(p);
        c.grad_shard = reduce_scatter(parts, dp, "ZeRO gradient reduce-scatter");
      } else {
        c.grad_shard = b.gflat;
      }
    }
    if (S().zero_stage == 0) {
      apply_update(c, b.flat, b.gflat);
    } else if (S().zero_stage == 3) {
      apply_update(c, c.shard, c.grad_shard);
    } else {
      Tensor mine = b.flat.narrow(0, lo, shard);
      apply_update(c, mine, S().zero_stage == 1 ? b.gflat.narrow(0, lo, shard) : c.grad_shard);
      auto parts = b.flat.chunk(L.dp);
      allgather(mine, parts, dp, "ZeRO parameter all-gather");
    }
  }

  // ---- pipeline ops ----------------------------------------------------------------------------------------------
  Tensor samples(int step, int mb) const {
    const std::int64_t gbs = S().global_batch, mbs = S().micro_batch;
    return make_samples(opt.model, opt.seed, step * gbs + (static_cast<std::int64_t>(L.dp_rank) * m + mb) * mbs, mbs);
  }
  double normalizer() const {
    const double seq = static_cast<double>(opt.model.seq);
    if (S().schedule == Schedule::pipedream) return static_cast<double>(L.dp) * S().micro_batch * seq;
    return static_cast<double>(S().global_batch) * seq;
  }
  int tag(int mb, int g, bool grad) const { return 2 * (mb * num_chunks() + g) + (grad ? 1 : 0); }
  int peer_stage(int g) const { return ((g % L.pp) + L.pp) % L.pp; }

  Tensor recv(int src_stage, int t, const std::string& what) {
    Tensor x = torch::empty({S().micro_batch, opt.model.seq, opt.model.hidden});
    std::vector<Tensor> v{x};
    wait_work(pp.pg->recv(v, src_stage, t), pp, what);
    return x;
  }
  void send(const Tensor& x, int dst_stage, int t) {
    Tensor data = x.detach().contiguous();
    std::vector<Tensor> v{data};
    sends.push_back({pp.pg->send(v, dst_stage, t), data});
  }
  void drain_sends(bool all) {
    std::vector<PendingSend> keep;
    for (auto& s : sends) {
      if (all || s.work->isCompleted())
        wait_work(s.work, pp, "pipeline send");
      else
        keep.push_back(s);
    }
    sends.swap(keep);
  }

  void forward_op(int step, int mb_data, int mb_key, Chunk& c, std::shared_ptr<ParamBuf> buf) {
    const auto t0 = Clock::now();
    const double w0 = stats.wait_s;
    gather_params(c);
    Flight f;
    f.buf = buf;
    const Tensor data = samples(step, mb_data);
    const Tensor tokens = data.narrow(1, 0, opt.model.seq), labels = data.narrow(1, 1, opt.model.seq);
    Tensor x;
    if (c.global == 0) {
      x = tokens;
    } else {
      f.input = recv(peer_stage(c.global - 1), tag(mb_key, c.global - 1, false), "pipeline receive (activation)");
      f.input.requires_grad_(true);
      x = f.input;
    }
    f.output = c.runner->run(x, buf->by_entry, labels, normalizer());
    if (is_last_chunk(c))
      step_loss += f.output.item<double>();
    else
      send(f.output, peer_stage(c.global + 1), tag(mb_key, c.global, false));
    flights[{mb_key, c.local}] = std::move(f);
    free_params(c);
    compute_s += seconds_since(t0) - (stats.wait_s - w0);
  }

  void backward_op(int mb_key, Chunk& c) {
    const auto t0 = Clock::now();
    const double w0 = stats.wait_s;
    gather_params(c);
    auto it = flights.find({mb_key, c.local});
    if (it == flights.end()) throw std::logic_error("backward without forward");
    Flight f = std::move(it->second);
    flights.erase(it);
    if (is_last_chunk(c)) {
      torch::autograd::backward({f.output});
    } else {
      Tensor g = recv(peer_stage(c.global + 1), tag(mb_key, c.global + 1, true), "pipeline receive (gradient)");
      torch::autograd::backward({f.output}, {g});
    }
    if (c.global > 0) send(f.input.grad(), peer_stage(c.global - 1), tag(mb_key, c.global, true));
    free_params(c);
    compute_s += seconds_since(t0) - (stats.wait_s - w0);
  }

  void maybe_fault(int step_in_run) {
    if (opt.fault.rank != L.rank || opt.fault.step != step_in_run) return;
    std::fflush(stdout);
    std::fflush(stderr);
    if (opt.fault.mode == "kill") std::raise(SIGKILL);
    if (opt.fault.mode == "exit") ::_exit(5);
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));  // "hang"
  }

  void finish_step_loss(int step_in_run, Clock::time_point t0) {
    // Loss of the global batch: sum over the data-parallel replicas of the last stage.
    if (L.stage == L.pp - 1) {
      Tensor l = torch::tensor({step_loss}, torch::kFloat64);
      allreduce_sum(l, dp, "loss all-reduce");
      step_loss = l.item<double>();
      if (S().schedule == Schedule::pipedream) step_loss /= m;
    }
    losses.push_back(step_loss);
    iter_times.push_back(seconds_since(t0));
    if (opt.progress && holds_loss)
      fmt::print(stderr, "strata run: step {}/{}  loss {:.5f}  {:.3f} s\n", step_in_run + 1, opt.steps, step_loss,
                 iter_times.back());
    step_loss = 0;
  }

  // ---- the two kinds of schedules ----------------------------------------------------------------------------------
  void run_flush_step(int step_in_run) {
    const auto t0 = Clock::now();
    maybe_fault(step_in_run);
    const int step = first_step + step_in_run;
    for (auto& c : chunks) c->main->gflat.zero_();
    const auto ops = stage_schedule(S().schedule, L.pp, L.v, m, L.stage);
    std::vector<int> last_bwd(chunks.size(), -1);
    for (int i = 0; i < static_cast<int>(ops.size()); ++i)
      if (!ops[i].forward) last_bwd[ops[i].chunk] = i;
    for (int i = 0; i < static_cast<int>(ops.size()); ++i) {
      const auto& op = ops[i];
      Chunk& c = *chunks[op.chunk];
      if (op.forward) {
        forward_op(step, op.micro_batch, op.micro_batch, c, c.main);
      } else {
        begin_backward(c, c.main.get(), i == last_bwd[op.chunk]);
        backward_op(op.micro_batch, c);
      }
      drain_sends(false);
    }
    drain_sends(true);
    std::vector<std::pair<Chunk*, ParamBuf*>> active;
    for (auto& c : chunks) {
      finish_dp_and_sp(*c, *c->main);
      active.emplace_back(c.get(), c->main.get());
    }
    sync_tied(active);
    for (auto& c : chunks) reduce_and_step_flush(*c);
    finish_step_loss(step_in_run, t0);
  }

  // Weight version a forward of run micro-batch j uses. PipeDream: the latest weights (then stashed for its
  // backward). 2BW: W(t−1) for a micro-batch of step t (Narayanan et al. 2021, W(t+1) = W(t) − ν∇f(W(t−1))).
  std::int64_t version_for(Chunk& c, int j) const {
    if (S().schedule == Schedule::pipedream) return c.versions.rbegin()->first;
    const std::int64_t t = first_step + j / m;
    return std::max<std::int64_t>(0, t - 1);
  }

  void run_async() {
    const int total = opt.steps * m;
    const auto ops = stage_schedule(Schedule::one_f_one_b, L.pp, 1, total, L.stage);
    Chunk& c = *chunks[0];
    auto t0 = Clock::now();
    int faulted_step = -1;
    for (const auto& op : ops) {
      const int j = op.micro_batch, t_run = j / m, k = j % m;
      if (op.forward) {
        if (k == 0 && t_run != faulted_step) {
          faulted_step = t_run;
          maybe_fault(t_run);
        }
        const std::int64_t ver = version_for(c, j);
        auto it = c.versions.find(ver);
        if (it == c.versions.end())
          throw std::logic_error(fmt::format("weight version {} is not available on stage {}", ver, L.stage));
        forward_op(first_step + t_run, k, j, c, it->second);
      } else {
        const bool two_bw = S().schedule == Schedule::two_bw;
        const bool first = !two_bw || k == 0, final = !two_bw || k == m - 1;
        // Hold the stashed version: backward_op drops the flight, and the version may be gone from the map.
        const std::shared_ptr<ParamBuf> hold = flights.at({j, 0}).buf;
        ParamBuf* buf = hold.get();
        if (first) buf->gflat.zero_();
        begin_backward(c, buf, final);
        backward_op(j, c);
        if (final) {
          finish_dp_and_sp(c, *buf);
          sync_tied({{&c, buf}});
          // New version = newest version − update(gradient of the stashed version this micro-batch used).
          const std::int64_t newest = c.versions.rbegin()->first;
          auto next = make_buf(c, c.versions.rbegin()->second->flat.clone());
          apply_update(c, next->flat, buf->gflat);
          c.versions[newest + 1] = next;
          c.main = next;
          // Keep what later forwards can still ask for: 2BW W(t) and W(t+1); PipeDream only the newest (the
          // in-flight micro-batches hold their stashed versions themselves).
          const std::int64_t keep_from = two_bw ? newest : newest + 1;
          for (auto v = c.versions.begin(); v != c.versions.end();)
            v = v->first < keep_from ? c.versions.erase(v) : std::next(v);
        }
        if (k == m - 1) {
          drain_sends(false);
          finish_step_loss(t_run, t0);
          t0 = Clock::now();
        }
      }
      drain_sends(false);
    }
    drain_sends(true);
  }

  // ---- checkpoints -------------------------------------------------------------------------------------------------
  std::string meta_key() const {
    return fmt::format("model={} strategy={} world={} seed={} optimizer={}", opt.model.name,
                       cost::to_cli_string(S()), L.world, opt.seed, to_string(opt.optimizer));
  }

  void save_checkpoint(const std::string& dir, int steps_done) {
    std::filesystem::create_directories(dir);
    std::vector<Tensor> ts;
    for (auto& c : chunks) {
      if (S().zero_stage == 3)
        ts.push_back(c->shard);
      else
        ts.push_back(c->main->flat);
      ts.push_back(c->exp_avg.defined() ? c->exp_avg : torch::zeros({0}));
      ts.push_back(c->exp_avg_sq.defined() ? c->exp_avg_sq : torch::zeros({0}));
      ts.push_back(torch::tensor({c->opt_step}, torch::kInt64));
      if (async) {
        // 2BW needs W(t−1) as well as W(t) to continue exactly.
        Tensor prev = torch::zeros({0});
        if (c->versions.size() >= 2) prev = std::prev(c->versions.end(), 2)->second->flat;
        ts.push_back(prev);
      }
    }
    torch::save(ts, fmt::format("{}/rank{}.pt", dir, L.rank));
    if (L.rank == 0) {
      std::ofstream f(dir + "/meta.json");
      nlohmann::ordered_json j;
      j["steps_done"] = steps_done;
      j["key"] = meta_key();
      f << j.dump(2) << "\n";
      if (!f) throw ExecError("cannot write " + dir + "/meta.json");
    }
  }

  void load_checkpoint(const std::string& dir) {
    const std::string meta = dir + "/meta.json";
    const auto j = core::load_json_file(meta);
    const core::JsonWhere w{meta, ""};
    const auto key = core::get_string(j, "key", w);
    if (key != meta_key())
      throw core::InputError(fmt::format("--resume {}: the checkpoint was written by '{}', this run is '{}'", dir, key,
                                         meta_key()));
    first_step = static_cast<int>(core::get_int(j, "steps_done", w));
    std::vector<Tensor> ts;
    const std::string path = fmt::format("{}/rank{}.pt", dir, L.rank);
    if (!std::filesystem::exists(path)) throw core::InputError(fmt::format("--resume {}: {} is missing", dir, path));
    torch::load(ts, path);
    const std::size_t per = async ? 5 : 4;
    if (ts.size() != per * chunks.size())
      throw core::InputError(fmt::format("--resume {}: {} holds {} tensors, expected {}", dir, path, ts.size(),
                                         per * chunks.size()));
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      Chunk& c = *chunks[i];
      const Tensor* t = &ts[i * per];
      if (S().zero_stage == 3)
        c.shard.copy_(t[0]);
      else
        c.main->flat.copy_(t[0]);
      if (c.exp_avg.defined()) {
        c.exp_avg.copy_(t[1]);
        c.exp_avg_sq.copy_(t[2]);
      }
      c.opt_step = t[3].item<std::int64_t>();
      if (async) {
        const std::int64_t u = S().schedule == Schedule::two_bw ? first_step : static_cast<std::int64_t>(first_step) * m;
        c.versions.clear();
        c.versions[u] = c.main;
        if (t[4].numel() > 0) c.versions[u - 1] = make_buf(c, t[4].clone());
      }
    }
  }

  // ---- the record ------------------------------------------------------------------------------------------------
  nlohmann::ordered_json rank_json() const {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    nlohmann::ordered_json j;
    j["rank"] = L.rank;
    j["stage"] = L.stage;
    j["dp_rank"] = L.dp_rank;
    j["tp_rank"] = L.tp_rank;
    j["compute_s"] = compute_s;
    j["wait_s"] = stats.wait_s;
    j["peak_rss_bytes"] = static_cast<double>(ru.ru_maxrss) * 1024.0;
    j["iteration_times_s"] = iter_times;
    j["dp_buckets"] = buckets_total;
    j["dp_buckets_overlapped"] = buckets_overlapped;
    if (holds_loss) j["losses"] = losses;
    return j;
  }
};

torch::autograd::variable_list GradReadyHook::operator()(const torch::autograd::variable_list& outputs,
                                                         const torch::autograd::variable_list&) {
  worker->grad_ready(*chunk, buf, param);
  return outputs;
}

RunRecord merge_records(const RunOptions& o, const std::vector<nlohmann::json>& ranks, int first_step) {
  RunRecord r;
  r.plan = {{"model", to_json(o)["model"]},
            {"strategy", cost::to_json(o.strategy)},
            {"strategy_cli", cost::to_cli_string(o.strategy)},
            {"optimizer", std::string(to_string(o.optimizer))},
            {"lr", o.lr},
            {"seed", o.seed},
            {"steps", o.steps},
            {"runtime_dtype", "fp32"}};
  r.world_size = static_cast<int>(ranks.size());
  r.first_step = first_step;
  std::map<int, std::pair<double, double>> stage_sum;
  std::map<int, int> stage_n;
  for (const auto& j : ranks) {
    RankRecord k;
    const core::JsonWhere w{"rank record", ""};
    k.rank = static_cast<int>(core::get_int(j, "rank", w));
    k.stage = static_cast<int>(core::get_int(j, "stage", w));
    k.dp_rank = static_cast<int>(core::get_int(j, "dp_rank", w));
    k.tp_rank = static_cast<int>(core::get_int(j, "tp_rank", w));
    k.compute_s = core::get_number(j, "compute_s", w);
    k.wait_s = core::get_number(j, "wait_s", w);
    k.peak_rss_bytes = core::get_number(j, "peak_rss_bytes", w);
    k.iteration_times_s = j.at("iteration_times_s").get<std::vector<double>>();
    k.dp_buckets = j.value("dp_buckets", 0);
    k.dp_buckets_overlapped = j.value("dp_buckets_overlapped", 0);
    if (j.contains("losses")) r.losses = j.at("losses").get<std::vector<double>>();
    if (r.iteration_times_s.size() < k.iteration_times_s.size()) r.iteration_times_s.resize(k.iteration_times_s.size(), 0);
    for (std::size_t i = 0; i < k.iteration_times_s.size(); ++i)
      r.iteration_times_s[i] = std::max(r.iteration_times_s[i], k.iteration_times_s[i]);
    stage_sum[k.stage].first += k.compute_s;
    stage_sum[k.stage].second += k.wait_s;
    ++stage_n[k.stage];
    r.ranks.push_back(k);
  }
  std::sort(r.ranks.begin(), r.ranks.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  const double steps = std::max(1, o.steps);
  for (const auto& [s, sum] : stage_sum)
    r.stages.push_back({s, sum.first / stage_n[s] / steps, sum.second / stage_n[s] / steps});
  r.iteration_time_s = steady_median(r.iteration_times_s);
  return r;
}

std::shared_ptr<gloo::transport::Device> make_device(const DistEnv& env) {
  if (env.loopback) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname)
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

RunRecord worker_run(const RunOptions& o, const DistEnv& env, const std::string& result_path) {
  const auto& s = o.strategy;
  if (const auto why = unsupported_reason(o.model, s); !why.empty())
    throw core::InputError("the executor does not support this strategy: " + why);
  const int world = s.dp * s.tp * s.pp;
  if (env.world_size != world)
    throw core::InputError(fmt::format("WORLD_SIZE is {} but the strategy needs dp·tp·pp = {} ranks", env.world_size, world));
  at::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  Worker w;
  w.opt = o;
  w.L = make_layout(s, env.rank);
  const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(o.timeout_s * 1000));
  c10::intrusive_ptr<c10d::Store> store;
  std::shared_ptr<gloo::transport::Device> device;
  const auto make_group = [&](const std::string& name, std::vector<int> members) {
    Group g;
    g.name = name;
    g.timeout = timeout;
    g.stats = &w.stats;
    g.size = static_cast<int>(members.size());
    g.rank = static_cast<int>(std::find(members.begin(), members.end(), env.rank) - members.begin());
    if (g.size <= 1) return g;
    std::string prefix = name;
    for (int r : members) prefix += "_" + std::to_string(r);
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(device);
    opts->threads = 2;
    try {
      g.pg = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>(prefix, store), g.rank,
                                                          g.size, opts);
    } catch (const std::exception& e) {
      throw ExecError(fmt::format("creating the {} process group failed (a peer did not join within {} s): {}", name,
                                  o.timeout_s, e.what()));
    }
    return g;
  };
  const Layout& L = w.L;
  if (world > 1) {
    c10d::TCPStoreOptions so;
    so.port = static_cast<std::uint16_t>(env.master_port);
    so.isServer = env.rank == 0;
    so.numWorkers = world;
    so.waitWorkers = true;
    so.timeout = timeout;
    try {
      store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, so);
    } catch (const std::exception& e) {
      throw ExecError(fmt::format("TCPStore rendezvous at {}:{} failed: {}", env.master_addr, env.master_port, e.what()));
    }
    device = make_device(env);
    std::vector<int> all(world), tpm, dpm, ppm;
    for (int r = 0; r < world; ++r) all[r] = r;
    for (int t = 0; t < L.tp; ++t) tpm.push_back(L.rank_of(L.stage, L.dp_rank, t));
    for (int d = 0; d < L.dp; ++d) dpm.push_back(L.rank_of(L.stage, d, L.tp_rank));
    for (int st = 0; st < L.pp; ++st) ppm.push_back(L.rank_of(st, L.dp_rank, L.tp_rank));
    // Same creation order on every rank (world, tp, dp, pp, embedding): each rank is in exactly one group of
    // each kind, so the blocking Gloo rendezvous of every group completes.
    w.world = make_group("world", all);
    w.tp = make_group("tp", tpm);
    w.dp = make_group("dp", dpm);
    w.pp = make_group("pp", ppm);
    if (o.model.tied_embeddings && L.pp > 1 && (L.stage == 0 || L.stage == L.pp - 1))
      w.emb = make_group("embedding", {L.rank_of(0, L.dp_rank, L.tp_rank), L.rank_of(L.pp - 1, L.dp_rank, L.tp_rank)});
  }
  w.build(cost::chunk_boundaries(s));
  if (!o.resume_dir.empty()) w.load_checkpoint(o.resume_dir);
  barrier(w.world, "start barrier");
  w.stats.wait_s = 0;
  if (w.async)
    w.run_async();
  else
    for (int t = 0; t < o.steps; ++t) w.run_flush_step(t);
  if (!o.checkpoint_dir.empty()) w.save_checkpoint(o.checkpoint_dir, w.first_step + o.steps);

  // Gather the rank records on rank 0 through the store (works for local and torchrun launches alike).
  std::vector<nlohmann::json> ranks{nlohmann::json::parse(w.rank_json().dump())};
  if (world > 1) {
    const std::string mine = w.rank_json().dump();
    store->set(fmt::format("strata/record/{}", env.rank), std::vector<std::uint8_t>(mine.begin(), mine.end()));
    if (env.rank != 0) {
      RunRecord own;
      own.world_size = world;
      return own;
    }
    ranks.clear();
    for (int r = 0; r < world; ++r) {
      const auto key = fmt::format("strata/record/{}", r);
      store->wait({key}, timeout);
      const auto bytes = store->get(key);
      ranks.push_back(nlohmann::json::parse(std::string(bytes.begin(), bytes.end())));
    }
  }
  RunRecord rec = merge_records(o, ranks, w.first_step);
  if (!result_path.empty()) {
    std::ofstream f(result_path);
    f << to_json(rec).dump(2) << "\n";
    if (!f) throw ExecError("cannot write " + result_path);
  }
  return rec;
}

RunRecord run_in_process(const RunOptions& o) {
  if (o.strategy.dp * o.strategy.tp * o.strategy.pp != 1)
    throw core::InputError("run_in_process: the strategy must have dp = tp = pp = 1");
  DistEnv env;
  env.world_size = 1;
  return worker_run(o, env, "");
}

void worker_process_main(const std::string& config_path, const std::string& result_path) {
  int rank = -1;
  std::string where;
  try {
    const RunOptions o = run_options_from_json(core::load_json_file(config_path), config_path);
    const DistEnv env = dist_env_from_environment();
    if (env.world_size == 0) throw core::InputError("exec-worker: RANK and WORLD_SIZE must be set");
    rank = env.rank;
    const Layout L = make_layout(o.strategy, rank);
    where = fmt::format(" (stage {}, dp {}, tp {})", L.stage, L.dp_rank, L.tp_rank);
    worker_run(o, env, result_path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "strata: rank {}{}: error: {}\n", rank, where, e.what());
    std::fflush(stderr);
    std::fflush(stdout);
    ::_exit(3);
  }
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(0);
}

}  // namespace strata::exec
