// exec/worker_p2p: the pipeline's point-to-point transfers — blocking receives with a timeout and wait accounting,
// asynchronous sends kept alive until completed (tags: 2·(micro-batch·chunks + global chunk) + gradient?).
#include "worker.hpp"

namespace strata::exec {

std::int64_t Worker::p2p_micro(std::int64_t local_micro) const {
  if (!L.per_stage()) return local_micro;
  const std::int64_t step = local_micro / m, j = local_micro % m;
  const std::int64_t total = S().global_batch / S().micro_batch;
  return step * total + L.dp_rank * static_cast<std::int64_t>(m) + j;
}

int Worker::p2p_peer(int peer_stage, std::int64_t local_micro) const {
  if (!L.per_stage()) return peer_stage;  // rank in the pp group
  const std::int64_t k = L.dp_rank * static_cast<std::int64_t>(m) + local_micro % m;  // in the step
  return L.rank_of(peer_stage, static_cast<int>(k / L.stage_m[peer_stage]), L.tp_rank);  // world rank
}

Tensor Worker::recv(int src, int t, const std::string& what) {
  Group& g = L.per_stage() ? world : pp;
  Tensor x = torch::empty({S().micro_batch, opt.model.seq, opt.model.hidden});
  std::vector<Tensor> v{x};
  wait_work(g.pg->recv(v, src, t), g, what);
  return x;
}

void Worker::send(const Tensor& x, int dst, int t) {
  Group& g = L.per_stage() ? world : pp;
  Tensor data = x.detach().contiguous();
  std::vector<Tensor> v{data};
  sends.push_back({g.pg->send(v, dst, t), data});
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
