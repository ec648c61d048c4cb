// exec/worker_p2p: the pipeline's point-to-point transfers — blocking receives with a timeout and wait accounting,
// asynchronous sends kept alive until completed (tags: 2·(micro-batch·chunks + global chunk) + gradient?), and the
// peers of a per-stage transfer between stages of different dp and tp (re-sharding).
#include "worker.hpp"

namespace strata::exec {

std::int64_t Worker::p2p_micro(std::int64_t local_micro) const {
  if (!L.per_stage()) return local_micro;
  const std::int64_t step = local_micro / m, j = local_micro % m;
  const std::int64_t total = S().global_batch / S().micro_batch;
  return step * total + L.dp_rank * static_cast<std::int64_t>(m) + j;
}

// The replica of `peer_stage` that holds this rank's local micro-batch (micro-batches dealt in blocks per replica).
int Worker::p2p_replica(int peer_stage, std::int64_t local_micro) const {
  const std::int64_t k = L.dp_rank * static_cast<std::int64_t>(m) + local_micro % m;  // in the step
  return static_cast<int>(k / L.stage_m[peer_stage]);
}

// A boundary tensor (activation or its gradient) is whole on every tp rank of both stages: the chunk's output is
// replicated over tp (sp gathers it), and its input gradient too (Megatron's f all-reduce). So tp rank u of the
// receiving stage takes it from tp rank u mod tp_sender of the replica that holds the micro-batch, and each sender
// feeds the receivers congruent to it — every receiver gets exactly one copy, whichever of the two tp is larger.
int Worker::p2p_source(int peer_stage, std::int64_t local_micro) const {
  if (!L.per_stage()) return peer_stage;  // rank in the pp group
  return L.rank_of(peer_stage, p2p_replica(peer_stage, local_micro), L.tp_rank % L.stage_tp[peer_stage]);
}

std::vector<int> Worker::p2p_targets(int peer_stage, std::int64_t local_micro) const {
  if (!L.per_stage()) return {peer_stage};
  std::vector<int> out;
  const int d = p2p_replica(peer_stage, local_micro);
  for (int u = L.tp_rank; u < L.stage_tp[peer_stage]; u += L.tp) out.push_back(L.rank_of(peer_stage, d, u));
  return out;
}

Tensor Worker::recv(int src, int t, const std::string& what) {
  Group& g = L.per_stage() ? world : pp;
  Tensor x = torch::empty({S().micro_batch, opt.model.seq, opt.model.hidden});
  std::vector<Tensor> v{x};
  wait_work(g.pg->recv(v, src, t), g, what);
  return x;
}

void Worker::send(const Tensor& x, const std::vector<int>& dsts, int t) {
  Group& g = L.per_stage() ? world : pp;
  Tensor data = x.detach().contiguous();
  for (int dst : dsts) {
    std::vector<Tensor> v{data};
    sends.push_back({g.pg->send(v, dst, t), data});
  }
}

void Worker::drain_sends(bool all) {
  std::vector<PendingSend> keep;
  for (auto& s : sends) {
    if (all || s.work->isCompleted())
      wait_work(s.work, L.per_stage() ? world : pp, "pipeline send");
    else
      keep.push_back(s);
  }
  sends.swap(keep);
}

}  // namespace strata::exec
