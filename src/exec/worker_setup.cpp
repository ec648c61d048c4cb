// exec/worker_setup: building a rank's chunks — runners with their recompute modes, parameters in one flat buffer
// per chunk (padded to equal ZeRO shards), leaf tensors viewing it with gradients viewing a flat gradient buffer,
// and the data-parallel gradient buckets in reverse parameter order (PyTorch DDP).
#include <fmt/format.h>

#include "worker.hpp"

namespace strata::exec {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

void Worker::build(const std::vector<int>& bounds) {
  m = static_cast<int>(S().num_micro_batches());
  async = S().schedule == Schedule::pipedream || S().schedule == Schedule::two_bw;
  holds_loss = L.stage == L.pp - 1 && L.dp_rank == 0 && L.tp_rank == 0;
  tpctx.tp = tp;
  tpctx.sp = S().sequence_parallel && L.tp > 1;
  tpctx.overlap = S().tp_overlap && L.tp > 1;
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

void Worker::init_chunk(Chunk& c) {
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

void Worker::make_buckets(Chunk& c) {
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

std::shared_ptr<ParamBuf> Worker::make_buf(Chunk& c, const Tensor& values) {
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


torch::autograd::variable_list GradReadyHook::operator()(const torch::autograd::variable_list& outputs,
                                                         const torch::autograd::variable_list&) {
  worker->grad_ready(*chunk, buf, param);
  return outputs;
}

}  // namespace strata::exec
