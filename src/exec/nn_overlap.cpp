// exec/nn_overlap: Oases' overlapped tensor-parallel schedule run for real (seed_002 §3, notes_002 §4.2; the cost
// side is cost/overlap.hpp). The micro-batch is split into two sub-batches a, b along the batch dimension; each
// block's two TP regions (attention, MLP) become a chain of segments k = 0..2V−1 per sub-batch:
//
//   u_k (residual stream) → n_k = LayerNorm(u_k) → [f] → p_k = column→row-parallel partial sum → [g: all-reduce]
//   u_{k+1} = u_k + (AR(p_k) + bias_k)
//
// Forward, for k = 0..2V−1 and h = a, b: wait AR_h(k−1), form u_h(k), compute segment k of h, *issue* AR_h(k)
// (c10d work handle) — so AR_a(k) runs while b computes segment k, AR_b(k) while a computes segment k+1: the
// chain c₀ + Σ_v [max(c_v, d_v) + max(c_{v+1}, d_v)] of cost/overlap.hpp. Backward mirrors it: for k = 2V−1..0 and
// h = a, b: wait the input-gradient all-reduce of h's segment k+1 (Megatron's f backward), finish its LayerNorm
// backward, run the TP region's backward of segment k and issue its input-gradient all-reduce.
//
// The chain is one autograd Function (like exec's recompute): inside, each segment's LayerNorm and TP region are
// small graphs over detached leaves, so this file decides the order of compute and communication instead of the
// autograd engine (which orders nodes by creation and would wait on every collective at once). Parameter gradients
// of the two sub-batches are summed (a + b) and handed back to autograd, so AccumulateGrad and the data-parallel
// bucket hooks see them as usual. Same arithmetic as ChunkRunner::block (the same attention_partial/mlp_partial),
// only summed in two halves: losses agree with the unsplit run to fp32 rounding.
#include <fmt/format.h>

#include <array>

#include "rt.hpp"

namespace strata::exec::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// One segment of one sub-batch: leaves u (residual in) and m (LayerNorm output as the TP region sees it), graphs
// n = LN(u) and p = partial(m); `buf`/`work` is the all-reduce in flight (forward: p; backward: ∂L/∂m).
struct Segment {
  Tensor u, n, m, p, buf, grad_out;
  WorkPtr work;
};

// Flat positions of a block's parameters (init_entry order) relative to the block's first one.
struct BlockIdx {
  int ln1_w = 0, ln1_b = 1, w_qkv = 2, b_qkv = -1, w_o, b_o = -1, ln2_w, ln2_b, w_fc1, b_fc1 = -1, w_fc2, b_fc2 = -1;
  int count;
  explicit BlockIdx(bool bias) {
    int i = 3;
    if (bias) b_qkv = i++;
    w_o = i++;
    if (bias) b_o = i++;
    ln2_w = i++;
    ln2_b = i++;
    w_fc1 = i++;
    if (bias) b_fc1 = i++;
    w_fc2 = i++;
    if (bias) b_fc2 = i++;
    count = i;
  }
};

struct ChainState : torch::CustomClassHolder {
  const ChunkRunner* runner = nullptr;
  int first_entry = 0, blocks = 0;
  BlockIdx ix{false};
  std::vector<Tensor> leaves;                // detached parameter leaves, flat (block-major)
  std::array<std::vector<Segment>, 2> seg;   // [sub-batch][segment]
  std::array<std::int64_t, 2> rows{};        // samples of a and b

  const Group& group() const { return runner->tp->tp; }
  int base(int k) const { return (k / 2) * ix.count; }
  Tensor leaf(int k, int rel) const { return rel < 0 ? Tensor() : leaves.at(base(k) + rel); }
  bool attn(int k) const { return k % 2 == 0; }
  int bias_index(int k) const { return attn(k) ? ix.b_o : ix.b_fc2; }

  Tensor partial(int k, const Tensor& m) const {
    const RecomputeMode mode = runner->recompute.at(first_entry + k / 2);
    return attn(k) ? runner->attention_partial(m, leaf(k, ix.w_qkv), leaf(k, ix.b_qkv), leaf(k, ix.w_o), mode)
                   : runner->mlp_partial(m, leaf(k, ix.w_fc1), leaf(k, ix.b_fc1), leaf(k, ix.w_fc2));
  }

  // Forward of segment k of sub-batch h on residual `u`: both graphs, then the all-reduce issued, not awaited.
  void start_forward(int h, int k, const Tensor& u) {
    Segment& s = seg[h][k];
    torch::AutoGradMode enable(true);
    s.u = u.detach().requires_grad_(true);
    s.n = torch::layer_norm(s.u, {runner->dims.hidden}, leaf(k, attn(k) ? ix.ln1_w : ix.ln2_w),
                            leaf(k, attn(k) ? ix.ln1_b : ix.ln2_b), 1e-5);
    s.m = s.n.detach().requires_grad_(true);
    s.p = partial(k, s.m);
    s.buf = s.p.detach().clone();
    s.work = allreduce_async(s.buf, group());
  }

  // Waits for segment k's all-reduce and returns u_{k+1} = u_k + (AR(p_k) + bias_k), as ChunkRunner::block adds.
  Tensor finish_forward(int h, int k) {
    Segment& s = seg[h][k];
    wait_work(s.work, group(), "tensor-parallel all-reduce (overlapped forward)");
    Tensor o = s.buf;
    if (const Tensor b = leaf(k, bias_index(k)); b.defined()) o = o + b.detach();
    Tensor next = s.u.detach() + o;
    s.buf = Tensor();
    s.work.reset();
    return next;
  }

  void add_grad(std::vector<Tensor>& acc, int flat, const Tensor& g) const {
    if (!g.defined()) return;
    acc.at(flat) = acc[flat].defined() ? acc[flat] + g : g;
  }

  // Backward of segment k's TP region for ∂L/∂u_{k+1} = g: bias and TP-weight gradients, then the all-reduce of
  // ∂L/∂m (f backward) issued, not awaited.
  void start_backward(int h, int k, const Tensor& g, std::vector<Tensor>& acc) {
    Segment& s = seg[h][k];
    s.grad_out = g;
    if (const int bi = bias_index(k); bi >= 0) add_grad(acc, base(k) + bi, g.sum(std::vector<std::int64_t>{0, 1}));
    std::vector<Tensor> wrt{s.m};
    for (int i = 0; i < ix.count; ++i) wrt.push_back(leaf(k, i));
    const auto grads = torch::autograd::grad({s.p}, wrt, {g}, false, false, true);
    for (int i = 0; i < ix.count; ++i) add_grad(acc, base(k) + i, grads[1 + i]);
    s.p = Tensor();
    s.m = Tensor();
    s.buf = grads[0].contiguous().clone();
    s.work = allreduce_async(s.buf, group());
  }

  // Waits for that all-reduce and returns ∂L/∂u_k = g + LayerNorm backward of the reduced gradient.
  Tensor finish_backward(int h, int k, std::vector<Tensor>& acc) {
    Segment& s = seg[h][k];
    wait_work(s.work, group(), "tensor-parallel all-reduce (overlapped backward)");
    const int lw = attn(k) ? ix.ln1_w : ix.ln2_w, lb = attn(k) ? ix.ln1_b : ix.ln2_b;
    const auto grads = torch::autograd::grad({s.n}, {s.u, leaf(k, lw), leaf(k, lb)}, {s.buf}, false, false, true);
    add_grad(acc, base(k) + lw, grads[1]);
    add_grad(acc, base(k) + lb, grads[2]);
    Tensor gu = s.grad_out + grads[0];
    s = Segment{};
    return gu;
  }
};

struct OverlapChain : torch::autograd::Function<OverlapChain> {
  // inputs = {x, the blocks' parameters flat}; runner = const ChunkRunner*.
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, std::int64_t runner,
                               std::int64_t first_entry, std::int64_t blocks) {
    auto st = c10::make_intrusive<ChainState>();
    st->runner = reinterpret_cast<const ChunkRunner*>(runner);
    st->first_entry = static_cast<int>(first_entry);
    st->blocks = static_cast<int>(blocks);
    st->ix = BlockIdx(st->runner->dims.bias);
    for (std::size_t i = 1; i < inputs.size(); ++i) st->leaves.push_back(inputs[i].detach().requires_grad_(true));
    const Tensor& x = inputs[0];
    const std::int64_t b = x.size(0);
    st->rows = {b / 2, b - b / 2};
    std::array<Tensor, 2> r{x.narrow(0, 0, st->rows[0]), x.narrow(0, st->rows[0], st->rows[1])};
    const int segments = 2 * st->blocks;
    for (auto& s : st->seg) s.resize(static_cast<std::size_t>(segments));
    for (int k = 0; k < segments; ++k)
      for (int h = 0; h < 2; ++h) {
        if (k > 0) r[h] = st->finish_forward(h, k - 1);
        st->start_forward(h, k, r[h]);
      }
    for (int h = 0; h < 2; ++h) r[h] = st->finish_forward(h, segments - 1);
    ctx->saved_data["chain"] = c10::IValue::make_capsule(st);
    return {torch::cat({r[0], r[1]}, 0)};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad) {
    auto st = c10::static_intrusive_pointer_cast<ChainState>(ctx->saved_data["chain"].toCapsule());
    const int segments = 2 * st->blocks;
    std::vector<Tensor> acc(st->leaves.size());
    const Tensor g0 = grad[0].contiguous();
    std::array<Tensor, 2> g{g0.narrow(0, 0, st->rows[0]), g0.narrow(0, st->rows[0], st->rows[1])};
    for (int k = segments - 1; k >= 0; --k)
      for (int h = 0; h < 2; ++h) {
        if (k < segments - 1) g[h] = st->finish_backward(h, k + 1, acc);
        st->start_backward(h, k, g[h], acc);
      }
    for (int h = 0; h < 2; ++h) g[h] = st->finish_backward(h, 0, acc);
    variable_list out{torch::cat({g[0], g[1]}, 0)};
    out.insert(out.end(), acc.begin(), acc.end());
    out.insert(out.end(), {Tensor(), Tensor(), Tensor()});
    ctx->saved_data.erase("chain");
    return out;
  }
};

}  // namespace

Tensor ChunkRunner::overlapped_blocks(const Tensor& x, const std::vector<std::vector<Tensor>>& params,
                                      int first_entry, int end_entry) const {
  if (x.size(0) < 2)
    throw std::logic_error(fmt::format("overlapped TP needs at least 2 samples per micro-batch, got {}", x.size(0)));
  std::vector<Tensor> inputs{x};
  for (int e = first_entry; e < end_entry; ++e) {
    if (recompute.at(e) == RecomputeMode::full)
      throw std::logic_error("overlapped TP with full recompute (refused by the executor's options)");
    const auto& p = params.at(e - first);
    inputs.insert(inputs.end(), p.begin(), p.end());
  }
  return OverlapChain::apply(at::TensorList(inputs), reinterpret_cast<std::int64_t>(this),
                             static_cast<std::int64_t>(first_entry), static_cast<std::int64_t>(end_entry - first_entry))[0];
}

}  // namespace strata::exec::rt
