// model/layer_eager: the activations the eager PyTorch stack saves for backward (`elementwise=eager`: autocast
// bf16 over fp32 parameters, one kernel per op), op by op, and the LM head's loss path (`loss=fused|fp32`).
// transformer_cost and lm_head_cost sum these terms; eager_module_saved_bytes exposes them per module for the
// measured table data/calibration/saved_tensors_cpu.json (scripts/saved_tensors_probe.py; docs/cost-model.md
// §Activation memory per stack).
//
// What each op saves (PyTorch tools/autograd/derivatives.yaml, v2.x; measured with torch 1.13 on CPU):
//  - residual stream: fp32, because the embedding and the parameters are fp32 under autocast and x + f(x)
//    promotes the bf16 branch output to fp32 (torch.amp docs: autocast-ed ops' outputs may mix dtypes). So every
//    norm input (the block input, the residual after attention) is stored in 4 bytes. Residual adds save nothing.
//  - LayerNorm: CUDA autocast runs layer_norm in fp32 (its fp32 op list); native_layer_norm saves its input,
//    mean and rstd (2 fp32 per row).
//  - RMSNorm as Hugging Face LlamaRMSNorm writes it (x.float(); x·rsqrt(mean(x²)+eps); weight·x.to(dtype)): pow
//    and mul save x, rsqrt saves its output (1 fp32 per row), weight·x saves the normalised fp32 x. torch 1.13's
//    mean.dim also saved x² (legacy_mean); 2.x saves its sizes only.
//  - linear layers under autocast: the fp32 input is cast to bf16 per call (autocast caches casts of leaf
//    tensors only, i.e. weights), and mm/addmm saves the cast: a fused Q/K/V projection (GPT-2, nanoGPT, MPT)
//    saves one copy of the norm output, separate wq/wk/wv (Llama in HF and torchtitan) three, SwiGLU's w1 and w3
//    two. The bf16 weight copies autocast caches are not activations: fp32 weights 4 + grads 4 + Adam 8 + the
//    bf16 copy 2 = the bf16 recipe's 18 bytes/param.
//  - eager math attention softmax(QKᵀ/√d)V: matmul reshapes the per-head views into contiguous copies and bmm
//    saves them (Q, K, V: 3 [s,b,h] in bf16, K and V at every query head after GQA's repeat_kv); softmax runs in
//    fp32 under CUDA autocast and saves its fp32 output, the second matmul saves its bf16 cast; dropout saves a
//    1-byte mask (CUDA's fused native_dropout) and the matmul then saves the cast of the dropped probabilities.
//    The output's transpose().contiguous() copy is the projection's saved input. SDPA's fused kernels (flash,
//    memory-efficient) save Q, K, V (K/V repeated: the kernels of torch ≤ 2.4 take no GQA), the output (the
//    projection's input: one storage) and a fp32 log-sum-exp per row and head instead of the probabilities.
//  - with 16-bit parameters (LayerQuery::eager_bf16_params: FSDP/FSDP2 mixed precision, DeepSpeed bf16) the
//    residual stream is bf16, RMSNorm upcasts it (HF's and torchtitan's x.float(): a saved fp32 copy, 4h) and
//    casts back, LayerNorm saves its bf16 input as it is (torchtitan runs no autocast; MPT's LPLayerNorm runs in
//    bf16 with autocast off), and every GEMM reads that one 16-bit norm output (no per-GEMM casts).
//  - GELU saves its input and fc2 its output; SiLU saves its input, the gate product saves both factors and w2
//    saves the product (4 inner tensors); ReLU saves its output (= fc2's input).
#include <algorithm>

#include "layer_impl.hpp"

namespace strata::model::detail {

double eager_norm_saved_bytes(Norm norm, double width, double input_bytes, bool legacy_mean) {
  const double upcast = input_bytes < 4 ? 4 * width : 0;  // fp32 copy of a 16-bit input, saved in its place
  switch (norm) {
    // mean and rstd; a 16-bit input is saved as it is (the residual itself): torchtitan runs no autocast, and
    // MPT's LPLayerNorm (llm-foundry) runs layer_norm in bf16 with autocast disabled.
    case Norm::layernorm: return 8;
    case Norm::rmsnorm:  // + rsqrt, the normalised x in the input's dtype
      return upcast + 4 + input_bytes * width + (legacy_mean ? 4 * width : 0);
    case Norm::none: return 0;
  }
  return 0;
}

double eager_gemm_inputs_bytes(double width, double consumers, const Ctx& c) {
  // Autocast makes one bf16 copy per consuming GEMM; without a cast (fp32 training) they share the input.
  return (c.R != c.Bg ? consumers : 1.0) * c.Bg * width;
}

double eager_probs_bytes(double B, bool dropout) {
  // fp32 softmax output; the 1-byte dropout mask; the second matmul's cast (bf16) or the dropped fp32 output.
  return 4 + (dropout ? 1 : 0) + (B < 4 || dropout ? B : 0);
}

double eager_activation_bytes(Activation a, double B) {
  switch (a) {
    case Activation::gelu: return 2 * B;    // GELU input, fc2 input
    case Activation::relu: return B;        // ReLU output = fc2 input
    case Activation::swiglu: return 4 * B;  // SiLU input, SiLU output, up projection, product (w2 input)
  }
  return 0;
}

bool eager_autocast(const Ctx& c) { return c.eager && c.R > c.B; }

namespace {
// Traffic of an eager norm over a residual of R bytes per element (autocast runs layer_norm in fp32: read R,
// write 4; Hugging Face's RMSNorm: pow, mean, x·rsqrt and weight·x in fp32, plus the casts to and from fp32 when
// the input is 16-bit).
double eager_norm_traffic(Norm norm, double R) {
  switch (norm) {
    case Norm::layernorm: return R + 4;
    case Norm::rmsnorm: return 8 + 4 + 8 + 8 + (R < 4 ? (R + 4) + (4 + R) : 0);
    case Norm::none: return 0;
  }
  return 0;
}
}  // namespace

double eager_attention_traffic_bytes(const LayerSpec& l, const Ctx& c) {
  const double h = static_cast<double>(l.hidden), B = c.B, R = c.R, t = c.t;
  const double kv_heads = static_cast<double>(l.kv_heads > 0 ? l.kv_heads : l.heads);
  const double kvd = kv_heads * (h / static_cast<double>(l.heads));
  const bool fused_qkv = l.activation != Activation::swiglu;  // as eager_attention_stored
  double bytes = h * eager_norm_traffic(l.norm, R);
  bytes += (fused_qkv ? 1.0 : 3.0) * h * (R + B);  // autocast's cast of the input per projection
  // RoPE as Hugging Face writes it on q and k: q·cos, rotate_half (neg of a half, cat), ·sin, the sum.
  if (!l.learned_positions) bytes += (h + kvd) / t * (2 * B + B + 2 * B + 2 * B + 3 * B);
  if (kvd < h) bytes += 2 * (h + kvd) / t * B;  // repeat_kv: K and V copied to every query head
  bytes += 2 * h / t * B;                        // the output's transpose(1, 2).reshape copy
  if (l.dropout) bytes += h * (2 * B + 1);       // dropout on the output: read, write, mask
  bytes += h * (R + B + R);                      // the residual add (fp32 + 16-bit into fp32)
  return bytes;
}

double eager_mlp_traffic_bytes(const LayerSpec& l, const Ctx& c, double routed) {
  const double h = static_cast<double>(l.hidden), f = static_cast<double>(l.ffn), B = c.B, R = c.R;
  const bool swiglu = l.activation == Activation::swiglu;
  double bytes = h * eager_norm_traffic(l.norm, R);
  bytes += (swiglu ? 2.0 : 1.0) * h * (R + B);  // the casts of the MLP input
  // GELU/ReLU read and write the inner activation; SwiGLU's SiLU does, then the product reads two and writes one.
  bytes += routed * (f / c.t) * (swiglu ? 2 * B + 3 * B : 2 * B);
  if (l.dropout) bytes += h * (2 * B + 1);
  bytes += h * (R + B + R);
  return bytes;
}

LossBytes loss_bytes_per_token(LossPath loss, double vocab_per_rank) {
  LossBytes out;
  if (loss == LossPath::fused) {
    out.saved = 4 * vocab_per_rank;  // Megatron's fused vocab-parallel CE: the fp32 softmax, computed in place
  } else {
    // cross_entropy(logits.float()): log_softmax saves its fp32 output, nll_loss the int64 labels; the caller
    // holds the bf16 logits, and log_softmax's backward holds its fp32 incoming and outgoing gradients.
    out.saved = 4 * vocab_per_rank + 8;
    out.held = (2 + 4 + 4) * vocab_per_rank;
  }
  return out;
}

StoredPart eager_attention_stored(const LayerSpec& l, const Ctx& c, const AttentionDims& d) {
  const double h = static_cast<double>(l.hidden), h_r = h / c.t, B = c.B;
  const double a_r = static_cast<double>(l.heads) / c.t;
  const bool fused_qkv = l.activation != Activation::swiglu;  // GPT-2/nanoGPT/MPT vs Llama (HF, torchtitan)
  StoredPart p;
  // The norm input (fp32 residual), what the norm saves, the Q/K/V inputs' casts, the output dropout's mask.
  p.repl = d.q_tokens * (c.R * h + eager_norm_saved_bytes(l.norm, h, c.R, c.legacy_mean) +
                         eager_gemm_inputs_bytes(h, d.cross || fused_qkv ? 1 : 3, c) + (l.dropout ? h : 0));
  if (d.cross) p.repl += d.kv_tokens * eager_gemm_inputs_bytes(h, 2, c);  // K and V of the encoder output
  // Q and the projection input per query token; K and V at every query head per key token.
  p.split = d.q_tokens * 2 * h_r * B + (d.cross ? d.kv_tokens : d.q_tokens) * 2 * h_r * B;
  if (c.flash)
    p.split += d.q_tokens * a_r * 4.0;  // the fused kernel's log-sum-exp
  else
    p.score = d.probs * eager_probs_bytes(B, l.dropout);
  return p;
}

StoredPart eager_mlp_stored(const LayerSpec& l, const Ctx& c, double tokens, double routed) {
  const double h = static_cast<double>(l.hidden), f_r = static_cast<double>(l.ffn) / c.t;
  const bool moe = l.experts > 0;
  const double consumers = (l.activation == Activation::swiglu ? 2 : 1) + (moe ? 1 : 0);  // + the router
  StoredPart p;
  p.repl = tokens * (c.R * h + eager_norm_saved_bytes(l.norm, h, c.R, c.legacy_mean) +
                     eager_gemm_inputs_bytes(h, consumers, c) + (l.dropout ? h : 0) +
                     (moe ? static_cast<double>(l.experts) * c.B : 0));
  p.split = tokens * routed * f_r * eager_activation_bytes(l.activation, c.B);
  return p;
}

}  // namespace strata::model::detail

namespace strata::model {

SavedBytes eager_module_saved_bytes(const EagerModuleQuery& q) {
  const double h = static_cast<double>(q.hidden), f = static_cast<double>(q.ffn);
  const double tokens = static_cast<double>(q.micro_batch) * static_cast<double>(q.seq);
  const double in = q.input_bytes;
  const bool cast = q.autocast && in > 2;  // an fp32 input reaches a bf16 GEMM through a saved copy
  detail::Ctx c;
  c.B = c.Bg = 2;
  c.R = cast ? 4 : 2;
  const auto gemm_inputs = [&](double consumers) { return detail::eager_gemm_inputs_bytes(h, consumers, c); };
  SavedBytes s;
  switch (q.module) {
    case EagerModule::linear:
      if (cast) s.intermediate_bytes = gemm_inputs(1);
      else s.boundary_bytes = in * h;
      break;
    case EagerModule::layernorm:
    case EagerModule::rmsnorm: {
      const Norm n = q.module == EagerModule::layernorm ? Norm::layernorm : Norm::rmsnorm;
      // RMSNorm upcasts a 16-bit input and saves the copy instead; LayerNorm saves any input as it is.
      s.boundary_bytes = in >= 4 || n == Norm::layernorm ? in * h : 0;
      s.intermediate_bytes = detail::eager_norm_saved_bytes(n, h, in, q.legacy_mean_saves_input);
      break;
    }
    case EagerModule::mlp_gelu:
    case EagerModule::mlp_swiglu: {
      const bool swiglu = q.module == EagerModule::mlp_swiglu;
      s.intermediate_bytes = gemm_inputs(swiglu ? 2 : 1) + (q.dropout ? h : 0) +
                             f * detail::eager_activation_bytes(swiglu ? Activation::swiglu : Activation::gelu, 2);
      break;
    }
    case EagerModule::dropout: s.intermediate_bytes = q.dropout ? h : 0; break;
    case EagerModule::attention: {
      const double probs = static_cast<double>(q.heads) * static_cast<double>(q.seq);  // per query token
      s.intermediate_bytes = gemm_inputs(q.fused_qkv ? 1 : 3) + 4 * h * 2 + (q.dropout ? h : 0) +
                             probs * detail::eager_probs_bytes(2, q.dropout);
      break;
    }
    case EagerModule::loss_fp32:
      if (cast) s.intermediate_bytes = gemm_inputs(1);
      else s.boundary_bytes = in * h;
      s.intermediate_bytes += detail::loss_bytes_per_token(LossPath::fp32, static_cast<double>(q.vocab)).saved;
      break;
  }
  s.boundary_bytes *= tokens;
  s.intermediate_bytes *= tokens;
  return s;
}

}  // namespace strata::model
