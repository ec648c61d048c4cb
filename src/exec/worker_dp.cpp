// exec/worker_dp: data parallelism on a rank — ZeRO-3 parameter gathering (FSDP-style: the full copy's storage is
// freed after use and re-gathered before the next pass), gradient buckets all-reduced from backward hooks as they
// fill (overlapped with the backward), the sequence-parallel and tied-embedding gradient sums, and the optimizer
// (SGD, Adam) on full weights, ZeRO shards or a new PipeDream/2BW weight version.
#include <ATen/native/Resize.h>

#include <cmath>

#include "worker.hpp"

namespace strata::exec {

// ZeRO-3 acts on the SDP region (the whole chunk under zero = 3; the SDP layers' under a per-layer strategy).
void Worker::free_params(Chunk& c) {
  if (c.meta.sdp_elems == 0 || !c.materialized) return;
  at::native::resize_bytes_cpu(c.main->sflat.storage().unsafeGetStorageImpl(), 0);
  c.materialized = false;
}

void Worker::gather_params(Chunk& c) {
  if (c.meta.sdp_elems == 0 || c.materialized) return;
  at::native::resize_bytes_cpu(c.main->sflat.storage().unsafeGetStorageImpl(),
                               static_cast<std::size_t>(c.meta.sdp_elems) * sizeof(float));
  auto parts = c.main->sflat.chunk(L.dp);
  allgather(c.shard, parts, dp, "ZeRO-3 parameter all-gather");
  c.materialized = true;
}


void Worker::begin_backward(Chunk& c, ParamBuf* buf, bool final) {
  c.sync_final = final;
  c.sync_buf = buf;
  if (final) {
    c.arrived.assign(c.buckets.size(), 0);
    c.next_launch = 0;
    c.works.clear();
  }
}

void Worker::grad_ready(Chunk& c, ParamBuf* buf, int param) {
  if (!c.sync_final || buf != c.sync_buf || !overlapped_dp() || c.bucket_of[param] < 0) return;
  ++c.arrived[c.bucket_of[param]];
  const int before = c.next_launch;
  launch_ready(c, false);
  buckets_overlapped += c.next_launch - before;
}

void Worker::launch_ready(Chunk& c, bool all) {
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
void Worker::finish_dp_and_sp(Chunk& c, ParamBuf& buf) {
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

namespace {
// The tied sum itself: both copies on this rank, or one here and one over the first/last-stage group.
void sum_tied(std::vector<Tensor>& local, const Group& emb) {
  if (local.size() == 2) {
    Tensor sum = local[0] + local[1];
    local[0].copy_(sum);
    local[1].copy_(sum);
  } else if (local.size() == 1 && emb.size > 1) {
    allreduce_sum(local[0], emb, "tied-embedding gradient all-reduce");
  }
}
}  // namespace

// Per-stage strategies: `emb` holds every rank of the first and the last stage, whose dp and tp may differ. A copy
// already summed over its stage's dp (ZeRO 0/1 buckets, or dp = 1) is the same on all dp·tp ranks of the stage, so
// each contributes 1/(dp·tp) of it; a copy reduced later (ZeRO-2's or ZeRO-3's reduce-scatter) is this replica's
// partial sum, the same on its tp ranks: each contributes 1/tp, and after the all-reduce (which then holds the
// whole sum) only dp rank 0 keeps it, so the stage's reduce-scatter adds it once.
void Worker::sync_tied_per_stage(std::vector<Tensor>& local, const std::vector<bool>& summed) {
  if (local.size() == 2 || emb.size <= 1) {  // one stage holds both copies (or no partner): the plain sum
    if (local.size() == 2 && summed[0] != summed[1])
      throw std::logic_error("tied copies of one rank reduced at different times");
    sum_tied(local, emb);
    return;
  }
  if (local.size() != 1) return;
  local[0].div_(static_cast<double>(summed[0] ? L.dp * L.tp : L.tp));
  allreduce_sum(local[0], emb, "tied-embedding gradient all-reduce");
  if (!summed[0] && L.dp_rank != 0) local[0].zero_();
}

// Tied embeddings (Megatron): the embedding on the first stage and its copy in the head on the last stage
// receive the sum of both gradients, so both copies stay identical.
// Per-layer strategies may put the embedding and the head in regions reduced at different times (a DP layer's
// buckets are already summed over dp here, an SDP or ZeRO-2 layer's gradient is reduce-scattered later): then the
// later-reduced copy is summed over dp first and kept on dp rank 0 only, so its reduce-scatter adds nothing twice.
void Worker::sync_tied(const std::vector<std::pair<Chunk*, ParamBuf*>>& active) {
  if (!opt.model.tied_embeddings) return;
  const auto reduced_here = [&](int e) { return overlapped_dp() && !entry_sdp(e); };
  const bool mixed = reduced_here(0) != reduced_here(opt.model.chain_length() - 1);
  std::vector<Tensor> local, later;
  std::vector<bool> summed;  // per copy: already summed over dp (per-stage runs)
  for (auto [c, b] : active)
    for (std::size_t i = 0; i < c->meta.names.size(); ++i)
      if (c->meta.tied[i]) {
        local.push_back(b->gflat.narrow(0, c->meta.offsets[i], c->meta.numels[i]));
        const bool reduced_later = c->meta.offsets[i] >= c->meta.dp_elems || !overlapped_dp();
        summed.push_back(L.dp == 1 || !reduced_later);
        if (mixed && reduced_later) later.push_back(local.back());
      }
  if (L.per_stage()) return sync_tied_per_stage(local, summed);
  for (auto& g : later) allreduce_sum(g, dp, "tied-embedding gradient all-reduce (dp)");
  sum_tied(local, emb);
  if (L.dp_rank != 0)
    for (auto& g : later) g.zero_();
}

// c.opt_step is advanced by the caller, once per chunk and update.
void Worker::apply_update(Chunk& c, Tensor p, const Tensor& g, std::int64_t state_off) {
  torch::NoGradGuard ng;
  if (opt.optimizer == Optimizer::sgd) {
    p.add_(g, -opt.lr);
    return;
  }
  // Adam (Kingma & Ba 2015), as torch.optim.Adam: β1 0.9, β2 0.999, ε 1e-8, bias-corrected.
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  Tensor exp_avg = c.exp_avg.narrow(0, state_off, p.numel());
  Tensor exp_avg_sq = c.exp_avg_sq.narrow(0, state_off, p.numel());
  exp_avg.mul_(b1).add_(g, 1 - b1);
  exp_avg_sq.mul_(b2).addcmul_(g, g, 1 - b2);
  const double bc1 = 1 - std::pow(b1, static_cast<double>(c.opt_step));
  const double bc2 = 1 - std::pow(b2, static_cast<double>(c.opt_step));
  Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bc2)).add_(eps);
  p.addcdiv_(exp_avg, denom, -opt.lr / bc1);
}

namespace {
Tensor scatter_grads(const Tensor& g, int dp_size, const Group& dp) {
  if (dp_size == 1) return g;
  std::vector<Tensor> parts;
  for (const auto& p : g.chunk(dp_size)) parts.push_back(p);
  return reduce_scatter(parts, dp, "ZeRO gradient reduce-scatter");
}
}  // namespace

// The DP region per the strategy's zero stage (0: all-reduced buckets, 1: same, update own shard, 2: reduce-scatter),
// then the SDP region (ZeRO-3: reduce-scatter, update the persistent shard).
void Worker::reduce_and_update_flush(Chunk& c) {
  const std::int64_t D = c.meta.dp_elems, shard = D / L.dp, lo = L.dp_rank * shard;
  ParamBuf& b = *c.main;
  ++c.opt_step;
  const int z = dp_zero();
  if (D > 0) {
    Tensor g = b.gflat.narrow(0, 0, D);
    if (z >= 2) c.grad_shard = scatter_grads(g, L.dp, dp);
    if (z == 0)
      apply_update(c, b.flat, g);
    else
      apply_update(c, b.flat.narrow(0, lo, shard), z == 1 ? g.narrow(0, lo, shard) : c.grad_shard);
  }
  if (c.meta.sdp_elems > 0) {
    const Tensor g = scatter_grads(b.gflat.narrow(0, D, c.meta.sdp_elems), L.dp, dp);
    apply_update(c, c.shard, g, z >= 1 ? shard : D);
  }
}

void Worker::gather_updated_params(Chunk& c) {
  if ((dp_zero() != 1 && dp_zero() != 2) || c.meta.dp_elems == 0) return;
  const std::int64_t shard = c.meta.dp_elems / L.dp;
  ParamBuf& b = *c.main;
  Tensor mine = b.flat.narrow(0, L.dp_rank * shard, shard);
  auto parts = b.flat.chunk(L.dp);
  allgather(mine, parts, dp, "ZeRO parameter all-gather");
}

void Worker::update_async(Chunk& c, ParamBuf& buf) {
  const std::int64_t newest = c.versions.rbegin()->first;
  auto next = make_buf(c, c.versions.rbegin()->second->flat.clone());
  ++c.opt_step;
  apply_update(c, next->flat, buf.gflat);
  c.versions[newest + 1] = next;
  c.main = next;
  // Keep what later forwards can still ask for: 2BW W(t) and W(t+1); PipeDream only the newest (the in-flight
  // micro-batches hold their stashed versions themselves).
  const std::int64_t keep_from = S().schedule == cost::Schedule::two_bw ? newest : newest + 1;
  for (auto v = c.versions.begin(); v != c.versions.end();)
    v = v->first < keep_from ? c.versions.erase(v) : std::next(v);
}

}  // namespace strata::exec
