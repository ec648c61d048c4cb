// exec/worker_p2p: the pipeline's point-to-point transfers — blocking receives with a timeout and wait accounting,
// asynchronous sends kept alive until completed (tags: 2·(micro-batch·chunks + global chunk) + gradient?).
#include "worker.hpp"

namespace strata::exec {

Tensor Worker::recv(int src_stage, int t, const std::string& what) {
  Tensor x = torch::empty({S().micro_batch, opt.model.seq, opt.model.hidden});
  std::vector<Tensor> v{x};
  wait_work(pp.pg->recv(v, src_stage, t), pp, what);
  return x;
}

void Worker::send(const Tensor& x, int dst_stage, int t) {
  Tensor data = x.detach().contiguous();
  std::vector<Tensor> v{data};
  sends.push_back({pp.pg->send(v, dst_stage, t), data});
}

void Worker::drain_sends(bool all) {
  std::vector<PendingSend> keep;
  for (auto& s : sends) {
    if (all || s.work->isCompleted())
      wait_work(s.work, pp, "pipeline send");
    else
      keep.push_back(s);
  }
  sends.swap(keep);
}

}  // namespace strata::exec
