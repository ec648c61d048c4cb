// tests/exec/test_async_pipelines: PipeDream (1F1B without flushes, weight stashing) and PipeDream-2BW (double
// buffered weights) follow their defined update rules. The reference applies each rule in one process on the
// flat weight vector (exec::ReferenceModel gives loss and gradient), independently of the runtime's pipeline:
//   2BW (Narayanan et al. 2021, eq. 1):  W(t+1) = W(t) − ν ∇f(W(t−1))      (W(−1) = W(0))
//   PipeDream (Narayanan et al. 2019):   micro-batch j updates every stage s with the gradient computed at that
//                                        stage's weights after max(0, j − (pp−1−s)) updates (weight stashing).
#include "exec_test_util.hpp"
#include "strata/exec/reference.hpp"

namespace strata::exec {
namespace {
using testing::expect_close;
using testing::tiny;

void sgd(std::vector<float>& w, const std::vector<float>& g, double lr) {
  for (std::size_t i = 0; i < w.size(); ++i) w[i] -= static_cast<float>(lr * g[i]);
}

std::vector<double> two_bw_reference(const RunOptions& o) {
  ReferenceModel ref(o.model, o.seed);
  const auto gbs = o.strategy.global_batch;
  std::vector<std::vector<float>> W{ref.initial_weights()};
  std::vector<double> losses;
  std::vector<float> g;
  for (int t = 0; t < o.steps; ++t) {
    std::vector<std::int64_t> ids;
    for (std::int64_t i = 0; i < gbs; ++i) ids.push_back(t * gbs + i);
    losses.push_back(ref.loss_and_grad(W[std::max(0, t - 1)], ids, static_cast<double>(gbs * o.model.seq), g));
    auto next = W[t];
    sgd(next, g, o.lr);
    W.push_back(std::move(next));
  }
  return losses;
}

std::vector<double> pipedream_reference(const RunOptions& o) {
  ReferenceModel ref(o.model, o.seed);
  const auto& s = o.strategy;
  const int m = static_cast<int>(s.num_micro_batches()), pp = s.pp;
  const auto offsets = ref.entry_offsets();
  const auto bounds = cost::chunk_boundaries(s);
  std::vector<std::vector<float>> W{ref.initial_weights()};
  std::vector<double> losses(o.steps, 0.0);
  std::vector<float> g;
  for (int j = 0; j < o.steps * m; ++j) {
    const int t = j / m, k = j % m;
    std::vector<float> mixed(W.back().size());
    for (int st = 0; st < pp; ++st) {
      const auto& src = W[std::max(0, j - (pp - 1 - st))];
      for (auto i = offsets[bounds[st]]; i < offsets[bounds[st + 1]]; ++i) mixed[i] = src[i];
    }
    // Micro-batch k of every data-parallel replica: samples t·gbs + (d·m + k)·mbs + i.
    std::vector<std::int64_t> ids;
    for (int d = 0; d < s.dp; ++d)
      for (std::int64_t i = 0; i < s.micro_batch; ++i)
        ids.push_back(t * s.global_batch + (static_cast<std::int64_t>(d) * m + k) * s.micro_batch + i);
    const double loss =
        ref.loss_and_grad(mixed, ids, static_cast<double>(s.dp * s.micro_batch * o.model.seq), g);
    losses[t] += loss / m;
    auto next = W.back();
    sgd(next, g, o.lr);
    W.push_back(std::move(next));
  }
  return losses;
}

TEST(AsyncPipelines, TwoBwFollowsItsUpdateRule) {
  auto o = tiny("dp=1,tp=1,pp=2,mbs=2,gbs=8,schedule=2bw", Optimizer::sgd);
  const auto want = two_bw_reference(o);
  expect_close(run_local(o).losses, want, 1e-5, "2bw pp2");
  // The rule differs from synchronous SGD from step 2 on (the gradient is one version stale).
  const auto sync = testing::reference_losses(8, Optimizer::sgd);
  EXPECT_NE(want[3], sync[3]);
}

TEST(AsyncPipelines, TwoBwWithDataParallelism) {
  auto o = tiny("dp=2,tp=1,pp=2,mbs=1,gbs=8,schedule=2bw", Optimizer::sgd);
  expect_close(run_local(o).losses, two_bw_reference(o), 1e-5, "2bw dp2 pp2");
}

TEST(AsyncPipelines, PipeDreamFollowsWeightStashingRule) {
  auto o = tiny("dp=1,tp=1,pp=3,mbs=2,gbs=8,schedule=pipedream,split=2+2+2", Optimizer::sgd);
  o.lr = 0.05;
  expect_close(run_local(o).losses, pipedream_reference(o), 1e-5, "pipedream pp3");
}

TEST(AsyncPipelines, ReferenceGradientMatchesFiniteDifference) {
  // The reference itself: d loss / d w for a few weights against a central difference.
  const auto o = tiny("dp=1,tp=1,pp=1,mbs=2,gbs=2");
  ReferenceModel ref(o.model, o.seed);
  auto w = ref.initial_weights();
  std::vector<float> g, scratch;
  const std::vector<std::int64_t> ids{0, 1};
  const double norm = 2.0 * o.model.seq;
  ref.loss_and_grad(w, ids, norm, g);
  const auto offsets = ref.entry_offsets();
  for (const std::int64_t i : {offsets[1] + 5, offsets[2] + 300, offsets[5] - 7}) {
    const float h = 1e-2f, w0 = w[i];
    w[i] = w0 + h;
    const double up = ref.loss_and_grad(w, ids, norm, scratch);
    w[i] = w0 - h;
    const double down = ref.loss_and_grad(w, ids, norm, scratch);
    w[i] = w0;
    EXPECT_NEAR((up - down) / (2 * h), g[i], 2e-3 + 0.05 * std::abs(g[i])) << "weight " << i;
  }
}

}  // namespace
}  // namespace strata::exec
