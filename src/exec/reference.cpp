// exec/reference: the single-process model over a flat weight vector (see reference.hpp), built from the same
// layers (ChunkRunner), initialisation (init_entry) and data stream (make_samples) as the runtime.
#include "strata/exec/reference.hpp"

#include "rt.hpp"

namespace strata::exec {

struct ReferenceModel::Impl {
  GptDims dims;
  std::uint64_t seed = 1;
  rt::TpCtx tp;
  rt::ChunkRunner runner;
  std::vector<std::vector<rt::Tensor>> params;  // per entry, leaves
  std::vector<std::int64_t> offsets;            // per entry
  std::vector<std::pair<std::int64_t, std::int64_t>> tied;  // (offset, numel) of the tied copies
  std::int64_t total = 0;
};

ReferenceModel::ReferenceModel(const GptDims& dims, std::uint64_t seed) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.dims = dims;
  m.seed = seed;
  m.runner.dims = dims;
  m.runner.tp = &m.tp;
  m.runner.first = 0;
  m.runner.last = dims.layers + 2;
  m.runner.recompute.assign(dims.layers + 2, rt::RecomputeMode::none);
  m.runner.prepare();
  for (int e = 0; e < dims.layers + 2; ++e) {
    m.offsets.push_back(m.total);
    std::vector<rt::Tensor> ps;
    for (auto& p : rt::init_entry(dims, e, 1, 0, false, seed)) {
      if (p.tied_embedding) m.tied.emplace_back(m.total, p.value.numel());
      m.total += p.value.numel();
      ps.push_back(p.value.requires_grad_(true));
    }
    m.params.push_back(ps);
  }
  m.offsets.push_back(m.total);
}

ReferenceModel::~ReferenceModel() = default;

std::vector<float> ReferenceModel::initial_weights() const {
  std::vector<float> w;
  w.reserve(impl_->total);
  for (int e = 0; e < impl_->dims.layers + 2; ++e)
    for (auto& p : rt::init_entry(impl_->dims, e, 1, 0, false, impl_->seed)) {
      const auto* d = p.value.contiguous().data_ptr<float>();
      w.insert(w.end(), d, d + p.value.numel());
    }
  return w;
}

std::vector<std::int64_t> ReferenceModel::entry_offsets() const { return impl_->offsets; }

double ReferenceModel::loss_and_grad(const std::vector<float>& w, const std::vector<std::int64_t>& sample_ids,
                                     double normalizer, std::vector<float>& grad) const {
  auto& m = *impl_;
  std::int64_t off = 0;
  {
    torch::NoGradGuard ng;
    for (auto& ps : m.params)
      for (auto& p : ps) {
        std::memcpy(p.data_ptr<float>(), w.data() + off, sizeof(float) * p.numel());
        p.mutable_grad().reset();
        off += p.numel();
      }
  }
  std::vector<rt::Tensor> rows;
  for (auto id : sample_ids) rows.push_back(rt::make_samples(m.dims, m.seed, id, 1));
  const rt::Tensor data = torch::cat(rows);
  const rt::Tensor tokens = data.narrow(1, 0, m.dims.seq), labels = data.narrow(1, 1, m.dims.seq);
  const rt::Tensor loss = m.runner.run(tokens, m.params, labels, normalizer);
  loss.backward();
  grad.assign(m.total, 0.0f);
  off = 0;
  for (auto& ps : m.params)
    for (auto& p : ps) {
      if (p.grad().defined()) std::memcpy(grad.data() + off, p.grad().contiguous().data_ptr<float>(), sizeof(float) * p.numel());
      off += p.numel();
    }
  if (m.tied.size() == 2) {
    const auto [a, n] = m.tied[0];
    const auto b = m.tied[1].first;
    for (std::int64_t i = 0; i < n; ++i) grad[a + i] = grad[b + i] = grad[a + i] + grad[b + i];
  }
  return loss.item<double>();
}

}  // namespace strata::exec
