// exec/worker_setup: building a rank's chunks — runners with their recompute modes, parameters in one flat buffer
// per chunk (padded to equal ZeRO shards), leaf tensors viewing it with gradients viewing a flat gradient buffer,
// and the data-parallel gradient buckets in reverse parameter order (PyTorch DDP).
#include <fmt/format.h>

#include "worker.hpp"

namespace strata::exec {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

RecomputeMode recompute_mode_of(model::Recompute r) {
  return r == model::Recompute::full        ? RecomputeMode::full
         : r == model::Recompute::selective ? RecomputeMode::selective
                                            : RecomputeMode::none;
}

Layout make_layout(const cost::Strategy& s, int rank) {
  Layout l;
  l.rank = rank;
  if (!cost::is_uniform(s)) {  // per-stage: ranks are the stages' devices in order (issue 14)
    l.pp = static_cast<int>(s.stages.size());
    l.world = cost::devices_used(s);
    for (const auto& st : s.stages) {
      l.first_rank.push_back(l.stage_dp.empty() ? 0 : l.first_rank.back() + l.stage_dp.back() * l.stage_tp.back());
      l.stage_dp.push_back(st.dp);
      l.stage_tp.push_back(st.tp);
      l.stage_m.push_back(s.global_batch / (static_cast<std::int64_t>(st.dp) * s.micro_batch));
    }
    for (int i = 0; i < l.pp; ++i)
      if (rank >= l.first_rank[i] && rank < l.first_rank[i] + l.stage_dp[i] * l.stage_tp[i]) l.stage = i;
    l.dp = l.stage_dp[l.stage];
    l.tp = l.stage_tp[l.stage];
    l.tp_rank = (rank - l.first_rank[l.stage]) % l.tp;
    l.dp_rank = (rank - l.first_rank[l.stage]) / l.tp;
    return l;
  }
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

void Worker::build(const std::vector<int>& bounds) {
  m = static_cast<int>(S().num_micro_batches());
  async = S().schedule == Schedule::pipedream || S().schedule == Schedule::two_bw;
  holds_loss = L.stage == L.pp - 1 && L.dp_rank == 0 && L.tp_rank == 0;
  tpctx.tp = tp;
  tpctx.sp = S().sequence_parallel && L.tp > 1;
  tpctx.overlap = S().tp_overlap && L.tp > 1;
  // Blocks recomputed on this stage: all (recompute given without rlayers) or the first rlayers[stage]; a
  // per-layer strategy gives each entry's mode itself (opt.layer_choices).
  int recompute_budget = S().recompute_layers.empty() ? 1 << 30 : S().recompute_layers[L.stage];
  const RecomputeMode mode = recompute_mode_of(S().recompute);
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
      if (!opt.layer_choices.empty()) {
        if (e >= 1 && e <= opt.model.layers) ch->runner->recompute[e] = recompute_mode_of(opt.layer_choices[e].recompute);
      } else if (e >= 1 && e <= opt.model.layers && recompute_budget > 0 && mode != RecomputeMode::none) {
        ch->runner->recompute[e] = mode;
        --recompute_budget;
      }
    ch->runner->prepare();
    init_chunk(*ch);
    chunks.push_back(std::move(ch));
  }
}

void Worker::init_chunk(Chunk& c) {
  std::vector<Tensor> values;
  const auto pad = [&](std::int64_t n) { return (n + L.dp - 1) / L.dp * L.dp; };
  // The DP entries' parameters first, then the SDP entries' (each region padded to equal shards).
  std::vector<std::vector<ParamInit>> inits;
  std::int64_t next[2] = {0, 0};
  for (int e = c.first; e < c.last; ++e) {
    inits.push_back(init_entry(opt.model, e, L.tp, L.tp_rank, tpctx.sp, opt.seed));
    for (const auto& p : inits.back()) next[entry_sdp(e) ? 1 : 0] += p.value.numel();
  }
  c.meta.dp_elems = pad(next[0]);
  c.meta.sdp_elems = pad(next[1]);
  next[0] = 0;
  next[1] = c.meta.dp_elems;
  for (int e = c.first; e < c.last; ++e) {
    const int begin = static_cast<int>(c.meta.names.size());
    const int region = entry_sdp(e) ? 1 : 0;
    for (auto& p : inits[e - c.first]) {
      c.meta.names.push_back(p.name);
      c.meta.shapes.push_back(p.value.sizes().vec());
      c.meta.offsets.push_back(next[region]);
      c.meta.numels.push_back(p.value.numel());
      c.meta.sp_partial.push_back(p.sp_partial);
      c.meta.tied.push_back(p.tied_embedding);
      c.meta.numel += p.value.numel();
      next[region] += p.value.numel();
      values.push_back(p.value);
    }
    c.meta.entry_range.emplace_back(begin, static_cast<int>(c.meta.names.size()));
  }
  c.meta.padded = c.meta.dp_elems + c.meta.sdp_elems;
  Tensor flat = torch::zeros({c.meta.padded});
  for (std::size_t i = 0; i < values.size(); ++i)
    flat.narrow(0, c.meta.offsets[i], c.meta.numels[i]).copy_(values[i].reshape({-1}));
  make_buckets(c);
  c.main = make_buf(c, flat);
  if (async) c.versions[0] = c.main;
  // Adam's states: the DP region's (sharded from ZeRO-1 on), then the SDP region's shard.
  const std::int64_t dp_shard = c.meta.dp_elems / L.dp, sdp_shard = c.meta.sdp_elems / L.dp;
  const std::int64_t opt_elems = (dp_zero() >= 1 ? dp_shard : c.meta.dp_elems) + sdp_shard;
  if (opt.optimizer == Optimizer::adam) {
    c.exp_avg = torch::zeros({opt_elems});
    c.exp_avg_sq = torch::zeros({opt_elems});
  }
  if (c.meta.sdp_elems > 0) {
    c.shard = flat.narrow(0, c.meta.dp_elems + L.dp_rank * sdp_shard, sdp_shard).clone();
    free_params(c);
  }
}

void Worker::make_buckets(Chunk& c) {
  const auto n = static_cast<int>(c.meta.names.size());
  const auto per_bucket = std::max<std::int64_t>(1, static_cast<std::int64_t>(opt.bucket_bytes / 4));
  // Buckets cover the DP region only (SDP gradients are reduce-scattered at the optimizer step): bucket_of = -1.
  c.bucket_of.assign(n, -1);
  int first_dp = n;
  for (int i = 0; i < n; ++i)
    if (c.meta.offsets[i] < c.meta.dp_elems) first_dp = std::min(first_dp, i);
  std::int64_t hi = c.meta.dp_elems, acc = 0;
  Bucket cur;
  // Reverse parameter order: gradients become ready roughly from the last layer to the first (PyTorch DDP).
  for (int i = n - 1; i >= first_dp; --i) {
    if (c.meta.offsets[i] >= c.meta.dp_elems) continue;
    c.bucket_of[i] = static_cast<int>(c.buckets.size());
    ++cur.params;
    acc += c.meta.numels[i];
    if (acc >= per_bucket || i == first_dp) {
      cur.lo = c.meta.offsets[i];
      cur.hi = hi;
      c.buckets.push_back(cur);
      hi = cur.lo;
      cur = Bucket{};
      acc = 0;
    }
  }
}

std::shared_ptr<ParamBuf> Worker::make_buf(Chunk& c, const Tensor& values) {
  auto b = std::make_shared<ParamBuf>();
  const std::int64_t D = c.meta.dp_elems;
  // The SDP region gets its own storage (freed between uses, free_params); uniform runs keep `values` as it is.
  if (c.meta.sdp_elems == 0) {
    b->flat = values;
  } else if (D == 0) {
    b->flat = torch::zeros({0});
    b->sflat = values;
  } else {
    b->flat = values.narrow(0, 0, D).clone();
    b->sflat = values.narrow(0, D, c.meta.sdp_elems).clone();
  }
  b->gflat = torch::zeros({c.meta.padded});
  for (std::size_t i = 0; i < c.meta.names.size(); ++i) {
    Tensor p = torch::empty({0});
    const std::int64_t off = c.meta.offsets[i];
    const Tensor weights = off < D ? b->flat.narrow(0, off, c.meta.numels[i])
                                   : b->sflat.narrow(0, off - D, c.meta.numels[i]);
    p.set_data(weights.view(c.meta.shapes[i]));
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


torch::autograd::variable_list GradReadyHook::operator()(const torch::autograd::variable_list& outputs,
                                                         const torch::autograd::variable_list&) {
  worker->grad_ready(*chunk, buf, param);
  return outputs;
}

}  // namespace strata::exec
