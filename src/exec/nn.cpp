// exec/nn: the torch side of the model — process-group wrappers (timeouts, wait accounting, ring
// reduce-scatter), Megatron's tensor-parallel autograd operators, activation recompute, the GPT layers with
// deterministic sharded initialisation, and the synthetic data stream.
#include <fmt/format.h>

#include <cmath>

#include "rt.hpp"

namespace strata::exec::rt {
namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using Clock = std::chrono::steady_clock;

std::string first_line(const std::string& s) {
  const auto p = s.find('\n');
  return p == std::string::npos ? s : s.substr(0, p);
}

TpCtx* ctx_of(AutogradContext* ctx) { return reinterpret_cast<TpCtx*>(ctx->saved_data["tp"].toInt()); }
std::int64_t as_int(TpCtx* c) { return reinterpret_cast<std::int64_t>(c); }

Tensor cat_gathered(const Tensor& x, TpCtx* c, int dim, const std::string& what) {
  std::vector<Tensor> parts(c->tp.size);
  for (auto& p : parts) p = torch::empty_like(x);
  allgather(x.contiguous(), parts, c->tp, what);
  return torch::cat(parts, dim);
}

Tensor own_chunk(const Tensor& x, TpCtx* c, int dim) { return x.chunk(c->tp.size, dim)[c->tp.rank].contiguous(); }

Tensor reduce_scatter_dim(const Tensor& x, TpCtx* c, int dim, const std::string& what) {
  std::vector<Tensor> parts;
  for (const auto& p : x.chunk(c->tp.size, dim)) parts.push_back(p.contiguous());
  return reduce_scatter(parts, c->tp, what);
}

struct CopyToTp : torch::autograd::Function<CopyToTp> {
  static Tensor forward(AutogradContext* ctx, Tensor x, std::int64_t c) {
    ctx->saved_data["tp"] = c;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor grad = g[0].contiguous().clone();
    allreduce_sum(grad, ctx_of(ctx)->tp, "tensor-parallel all-reduce (f backward)");
    return {grad, Tensor()};
  }
};

struct ReduceFromTp : torch::autograd::Function<ReduceFromTp> {
  static Tensor forward(AutogradContext*, Tensor x, std::int64_t c) {
    Tensor y = x.contiguous().clone();
    allreduce_sum(y, reinterpret_cast<TpCtx*>(c)->tp, "tensor-parallel all-reduce (g forward)");
    return y;
  }
  static variable_list backward(AutogradContext*, variable_list g) { return {g[0], Tensor()}; }
};

struct GatherSeq : torch::autograd::Function<GatherSeq> {
  static Tensor forward(AutogradContext* ctx, Tensor x, std::int64_t c, bool tp_consumer) {
    ctx->saved_data["tp"] = c;
    ctx->saved_data["tp_consumer"] = tp_consumer;
    return cat_gathered(x, reinterpret_cast<TpCtx*>(c), 1, "sequence-parallel all-gather");
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    TpCtx* c = ctx_of(ctx);
    // A tensor-parallel consumer leaves partial gradients on each rank (reduce-scatter them); a replicated one
    // leaves the full gradient everywhere (take our slice).
    Tensor out = ctx->saved_data["tp_consumer"].toBool()
                     ? reduce_scatter_dim(g[0], c, 1, "sequence-parallel reduce-scatter (backward)")
                     : own_chunk(g[0], c, 1);
    return {out, Tensor(), Tensor()};
  }
};

struct ReduceScatterSeq : torch::autograd::Function<ReduceScatterSeq> {
  static Tensor forward(AutogradContext* ctx, Tensor x, std::int64_t c) {
    ctx->saved_data["tp"] = c;
    return reduce_scatter_dim(x, reinterpret_cast<TpCtx*>(c), 1, "sequence-parallel reduce-scatter");
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {cat_gathered(g[0], ctx_of(ctx), 1, "sequence-parallel all-gather (backward)"), Tensor()};
  }
};

struct ScatterSeq : torch::autograd::Function<ScatterSeq> {
  static Tensor forward(AutogradContext* ctx, Tensor x, std::int64_t c) {
    ctx->saved_data["tp"] = c;
    return own_chunk(x, reinterpret_cast<TpCtx*>(c), 1);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    return {cat_gathered(g[0], ctx_of(ctx), 1, "sequence-parallel all-gather (backward)"), Tensor()};
  }
};

struct Recompute : torch::autograd::Function<Recompute> {
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, std::int64_t fn) {
    ctx->saved_data["fn"] = fn;
    ctx->save_for_backward(inputs.vec());
    // Custom-function forwards run with grad mode off: nothing inside fn is stored for backward.
    return {(*reinterpret_cast<const RecomputeFn*>(fn))(inputs.vec())};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto* fn = reinterpret_cast<const RecomputeFn*>(ctx->saved_data["fn"].toInt());
    const auto saved = ctx->get_saved_variables();
    std::vector<Tensor> inputs, wanted;
    std::vector<int> wanted_index(saved.size(), -1);
    for (std::size_t i = 0; i < saved.size(); ++i) {
      Tensor t = saved[i].detach();
      if (saved[i].requires_grad()) {
        t.requires_grad_(true);
        wanted_index[i] = static_cast<int>(wanted.size());
        wanted.push_back(t);
      }
      inputs.push_back(t);
    }
    Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = (*fn)(inputs);
    }
    const auto grads = torch::autograd::grad({y}, wanted, {g[0]}, false, false, true);
    variable_list out;
    for (std::size_t i = 0; i < saved.size(); ++i) out.push_back(wanted_index[i] >= 0 ? grads[wanted_index[i]] : Tensor());
    out.push_back(Tensor());
    return out;
  }
};

}  // namespace

// ---- process groups ----------------------------------------------------------------------------------------------

void wait_work(const WorkPtr& w, const Group& g, const std::string& what) {
  const auto t0 = Clock::now();
  const double limit_s = std::chrono::duration<double>(g.timeout).count();
  try {
    if (!w->wait(g.timeout))
      throw ExecError(fmt::format("{} on the {} group timed out after {} s", what, g.name, limit_s));
  } catch (const ExecError&) {
    throw;
  } catch (const c10::Error& e) {
    throw ExecError(fmt::format("{} on the {} group failed (a peer rank died or did not answer within {} s): {}",
                                what, g.name, limit_s, first_line(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    throw ExecError(fmt::format("{} on the {} group failed (a peer rank died or did not answer within {} s): {}",
                                what, g.name, limit_s, first_line(e.what())));
  }
  if (g.stats) g.stats->wait_s += std::chrono::duration<double>(Clock::now() - t0).count();
}

WorkPtr allreduce_async(Tensor& t, const Group& g) {
  std::vector<Tensor> v{t};
  return g.pg->allreduce(v);
}

void allreduce_sum(Tensor& t, const Group& g, const std::string& what) {
  if (g.size <= 1) return;
  wait_work(allreduce_async(t, g), g, what);
}

void allgather(const Tensor& input, std::vector<Tensor>& outputs, const Group& g, const std::string& what) {
  if (g.size <= 1) {
    if (!outputs[0].is_same(input)) outputs[0].copy_(input);
    return;
  }
  std::vector<std::vector<Tensor>> out{outputs};
  std::vector<Tensor> in{input.is_same(outputs[g.rank]) ? input.clone() : input};
  wait_work(g.pg->allgather(out, in), g, what);
}

Tensor reduce_scatter(const std::vector<Tensor>& chunks, const Group& g, const std::string& what) {
  const int n = g.size, r = g.rank;
  if (n <= 1) return chunks[0].clone();
  const int next = (r + 1) % n, prev = (r + n - 1) % n;
  const auto mod = [n](int x) { return ((x % n) + n) % n; };
  Tensor acc = chunks[mod(r - 1)].clone();
  for (int k = 0; k < n - 1; ++k) {
    std::vector<Tensor> out{acc};
    auto send = g.pg->send(out, next, 9000 + k);
    std::vector<Tensor> in{torch::empty_like(acc)};
    wait_work(g.pg->recv(in, prev, 9000 + k), g, what);
    wait_work(send, g, what);
    acc = in[0] + chunks[mod(r - k - 2)];
  }
  return acc;
}

void barrier(const Group& g, const std::string& what) {
  if (g.size <= 1) return;
  // A tiny all-reduce instead of Gloo's barrier(): the same timeout handling and no device guessing.
  Tensor t = torch::zeros({1});
  allreduce_sum(t, g, what);
}

// ---- tensor-parallel operators -----------------------------------------------------------------------------------

Tensor copy_to_tp(const Tensor& x, TpCtx* c) {
  return c->tp.size <= 1 || c->compute_only ? x : CopyToTp::apply(x, as_int(c));
}
Tensor reduce_from_tp(const Tensor& x, TpCtx* c) {
  return c->tp.size <= 1 || c->compute_only ? x : ReduceFromTp::apply(x, as_int(c));
}
Tensor gather_seq(const Tensor& x, TpCtx* c, bool tp_consumer) {
  return c->tp.size <= 1 ? x : GatherSeq::apply(x, as_int(c), tp_consumer);
}
Tensor reduce_scatter_seq(const Tensor& x, TpCtx* c) {
  return c->tp.size <= 1 ? x : ReduceScatterSeq::apply(x, as_int(c));
}
Tensor scatter_seq(const Tensor& x, TpCtx* c) { return c->tp.size <= 1 ? x : ScatterSeq::apply(x, as_int(c)); }

Tensor checkpointed(const RecomputeFn* fn, const std::vector<Tensor>& inputs) {
  return Recompute::apply(at::TensorList(inputs), reinterpret_cast<std::int64_t>(fn))[0];
}

// ---- data and initialisation -------------------------------------------------------------------------------------

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t z = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL ^
                    (c + 0x85157AF5ULL) * 0x94D049BB133111EBULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

Tensor make_samples(const GptDims& d, std::uint64_t seed, std::int64_t first_sample, std::int64_t count) {
  const std::int64_t len = d.seq + 1, vocab = d.vocab;
  Tensor out = torch::empty({count, len}, torch::kInt64);
  auto* p = out.data_ptr<std::int64_t>();
  const std::int64_t mult = 1 + 2 * static_cast<std::int64_t>(mix_seed(seed, 1) % static_cast<std::uint64_t>(std::max<std::int64_t>(1, vocab / 2)));
  const std::int64_t add = static_cast<std::int64_t>(mix_seed(seed, 2) % static_cast<std::uint64_t>(vocab));
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint64_t state = mix_seed(seed, 3, static_cast<std::uint64_t>(first_sample + i));
    const auto next = [&state] { return state = mix_seed(state, 7); };
    std::int64_t tok = static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(vocab));
    for (std::int64_t t = 0; t < len; ++t) {
      p[i * len + t] = tok;
      const std::uint64_t r = next();
      tok = (r % 4 != 0) ? (mult * tok + add) % vocab : static_cast<std::int64_t>((r >> 8) % static_cast<std::uint64_t>(vocab));
    }
  }
  return out;
}

namespace {

Tensor normal(std::vector<std::int64_t> shape, double std, std::uint64_t seed) {
  auto gen = at::detail::createCPUGenerator(seed);
  return torch::empty(shape).normal_(0.0, std, gen);
}

}  // namespace

std::vector<ParamInit> init_entry(const GptDims& d, int entry, int tp, int r, bool sp, std::uint64_t seed) {
  const std::int64_t h = d.hidden, hl = d.hidden / tp, f = d.ffn, fl = d.ffn / tp;
  const double std = 0.02, out_std = 0.02 / std::sqrt(2.0 * d.layers);  // Megatron's scaled output init
  sp = sp && tp > 1;
  std::vector<ParamInit> ps;
  const auto wte = [&] { return normal({d.vocab, h}, std, mix_seed(seed, 0, 1)); };
  if (entry == 0) {
    ps.push_back({"wte", wte(), false, d.tied_embeddings});
    if (d.learned_positions) ps.push_back({"wpe", normal({d.seq, h}, std, mix_seed(seed, 0, 2)), false, false});
    return ps;
  }
  if (entry == d.layers + 1) {
    ps.push_back({"lnf_w", torch::ones({h}), false, false});
    ps.push_back({"lnf_b", torch::zeros({h}), false, false});
    ps.push_back({"w_out", d.tied_embeddings ? wte() : normal({d.vocab, h}, std, mix_seed(seed, entry, 1)), false,
                  d.tied_embeddings});
    return ps;
  }
  const std::string b = fmt::format("block{}.", entry - 1);
  const auto rows = [&](const Tensor& t, std::int64_t n) { return t.narrow(0, r * n, n).contiguous(); };
  const auto cols = [&](const Tensor& t, std::int64_t n) { return t.narrow(1, r * n, n).contiguous(); };
  ps.push_back({b + "ln1_w", torch::ones({h}), sp, false});
  ps.push_back({b + "ln1_b", torch::zeros({h}), sp, false});
  // Column-parallel QKV: rank r holds the rows of its heads in each of Q, K and V.
  ps.push_back({b + "w_qkv",
                torch::cat({rows(normal({h, h}, std, mix_seed(seed, entry, 2)), hl),
                            rows(normal({h, h}, std, mix_seed(seed, entry, 3)), hl),
                            rows(normal({h, h}, std, mix_seed(seed, entry, 4)), hl)}),
                false, false});
  if (d.bias) ps.push_back({b + "b_qkv", torch::zeros({3 * hl}), false, false});
  ps.push_back({b + "w_o", cols(normal({h, h}, out_std, mix_seed(seed, entry, 5)), hl), false, false});
  if (d.bias) ps.push_back({b + "b_o", torch::zeros({h}), sp, false});
  ps.push_back({b + "ln2_w", torch::ones({h}), sp, false});
  ps.push_back({b + "ln2_b", torch::zeros({h}), sp, false});
  ps.push_back({b + "w_fc1", rows(normal({f, h}, std, mix_seed(seed, entry, 6)), fl), false, false});
  if (d.bias) ps.push_back({b + "b_fc1", torch::zeros({fl}), false, false});
  ps.push_back({b + "w_fc2", cols(normal({h, f}, out_std, mix_seed(seed, entry, 7)), fl), false, false});
  if (d.bias) ps.push_back({b + "b_fc2", torch::zeros({h}), sp, false});
  return ps;
}

// ---- the GPT forward ---------------------------------------------------------------------------------------------

void ChunkRunner::prepare() {
  fns.clear();
  for (int e = 0; e <= dims.layers + 1; ++e) {
    fns.push_back(std::make_unique<RecomputeFn>([this](const std::vector<Tensor>& in) {
      return block(in[0], std::vector<Tensor>(in.begin() + 1, in.end()), RecomputeMode::none);
    }));
  }
  // The selective recompute target: softmax(QKᵀ)V of one block (Korthikanti et al. 2022 §5).
  fns.push_back(std::make_unique<RecomputeFn>(
      [this](const std::vector<Tensor>& in) { return attention_core(in[0], in[1], in[2]); }));
}

Tensor ChunkRunner::attention_core(const Tensor& q, const Tensor& k, const Tensor& v) const {
  const auto s = q.size(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(dims.hidden / dims.heads));
  Tensor scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  const Tensor mask = torch::ones({s, s}, torch::kBool).triu(1);
  scores = scores.masked_fill(mask, -std::numeric_limits<float>::infinity());
  return torch::matmul(torch::softmax(scores, -1), v);
}

Tensor ChunkRunner::attention_partial(const Tensor& y, const Tensor& w_qkv, const Tensor& b_qkv, const Tensor& w_o,
                                      RecomputeMode mode) const {
  const int t = tp->tp.size;
  const std::int64_t hl = dims.hidden / t, heads_l = dims.heads / t, hd = dims.hidden / dims.heads;
  const auto b = y.size(0), s = y.size(1);
  const Tensor qkv = torch::linear(y, w_qkv, b_qkv);
  const auto parts = qkv.split(hl, -1);
  const auto heads = [&](const Tensor& z) { return z.reshape({b, s, heads_l, hd}).transpose(1, 2); };
  const Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  Tensor ctx = mode == RecomputeMode::selective ? checkpointed(fns.back().get(), {q, k, v}) : attention_core(q, k, v);
  ctx = ctx.transpose(1, 2).reshape({b, s, hl});
  return torch::linear(ctx, w_o);
}

Tensor ChunkRunner::mlp_partial(const Tensor& y, const Tensor& w_fc1, const Tensor& b_fc1, const Tensor& w_fc2) const {
  return torch::linear(torch::gelu(torch::linear(y, w_fc1, b_fc1)), w_fc2);
}

Tensor ChunkRunner::block(const Tensor& x, const std::vector<Tensor>& p, RecomputeMode mode) const {
  const int t = tp->tp.size;
  const std::int64_t h = dims.hidden;
  const bool sp = tp->sp && t > 1;
  std::size_t i = 0;
  const auto next = [&] { return p.at(i++); };
  const auto opt = [&] { return dims.bias ? p.at(i++) : Tensor(); };
  const Tensor ln1_w = next(), ln1_b = next(), w_qkv = next(), b_qkv = opt(), w_o = next(), b_o = opt();
  const Tensor ln2_w = next(), ln2_b = next(), w_fc1 = next(), b_fc1 = opt(), w_fc2 = next(), b_fc2 = opt();

  Tensor y = torch::layer_norm(x, {h}, ln1_w, ln1_b, 1e-5);
  y = sp ? gather_seq(y, tp, true) : copy_to_tp(y, tp);
  Tensor o = attention_partial(y, w_qkv, b_qkv, w_o, mode);
  o = sp ? reduce_scatter_seq(o, tp) : reduce_from_tp(o, tp);
  if (b_o.defined()) o = o + b_o;
  Tensor x1 = x + o;
  y = torch::layer_norm(x1, {h}, ln2_w, ln2_b, 1e-5);
  y = sp ? gather_seq(y, tp, true) : copy_to_tp(y, tp);
  Tensor z = mlp_partial(y, w_fc1, b_fc1, w_fc2);
  z = sp ? reduce_scatter_seq(z, tp) : reduce_from_tp(z, tp);
  if (b_fc2.defined()) z = z + b_fc2;
  return x1 + z;
}

Tensor ChunkRunner::run(const Tensor& x, const std::vector<std::vector<Tensor>>& params, const Tensor& labels,
                        double normalizer) const {
  const bool sp = tp->sp && tp->tp.size > 1;
  Tensor hstate = x;
  bool sharded = false;
  for (int e = first; e < last; ++e) {
    const auto& p = params.at(e - first);
    if (e == 0) {
      hstate = torch::embedding(p[0], x);
      if (dims.learned_positions) hstate = hstate + p[1].narrow(0, 0, x.size(1));
    } else if (e <= dims.layers) {
      if (overlapped()) {  // Oases: all of this chunk's blocks as one two-sub-batch chain (nn_overlap.cpp)
        const int end = std::min(last, dims.layers + 1);
        hstate = overlapped_blocks(hstate, params, e, end);
        e = end - 1;
        continue;
      }
      if (sp && !sharded) {
        hstate = scatter_seq(hstate, tp);
        sharded = true;
      }
      const RecomputeMode mode = recompute.at(e);
      if (mode == RecomputeMode::full) {
        std::vector<Tensor> in{hstate};
        in.insert(in.end(), p.begin(), p.end());
        hstate = checkpointed(fns.at(e).get(), in);
      } else {
        hstate = block(hstate, p, mode);
      }
    } else {
      if (sharded) {
        hstate = gather_seq(hstate, tp, false);
        sharded = false;
      }
      const Tensor y = torch::layer_norm(hstate, {dims.hidden}, p[0], p[1], 1e-5);
      const Tensor logits = torch::linear(y, p[2]);
      const Tensor logp = torch::log_softmax(logits.reshape({-1, dims.vocab}), -1);
      return torch::nll_loss(logp, labels.reshape({-1}), {}, at::Reduction::Sum) / normalizer;
    }
  }
  if (sharded) hstate = gather_seq(hstate, tp, false);
  return hstate;
}

}  // namespace strata::exec::rt
