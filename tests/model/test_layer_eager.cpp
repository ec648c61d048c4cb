// tests/model/test_layer_eager: the eager PyTorch stack's saved-tensor closed forms (model/layer_eager.cpp) against
// every row of the measured table data/calibration/saved_tensors_cpu.json (torch 1.13, CPU), whole blocks by hand,
// recompute under the eager stack, and the LM head's loss paths.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "layer_fixtures.hpp"
#include "strata/core/data.hpp"
#include "strata/core/error.hpp"
#include "strata/model/layer.hpp"

namespace strata::model {
namespace {

using testing::gpt_block;
using testing::llama3_8b_block;

std::int64_t field(const core::Json& sh, const char* k) { return sh.value(k, std::int64_t{0}); }

LayerQuery eager_query(std::int64_t b, std::int64_t s) {
  LayerQuery q;
  q.micro_batch = b;
  q.seq = s;
  q.eager_elementwise = true;
  return q;
}

// The closed form of one table row: blocks through layer_cost (the planner's formula), modules through
// eager_module_saved_bytes. Both with torch 1.13's mean.dim (the table's version).
double closed_form(const core::Json& row) {
  const core::Json& sh = row.at("shape");
  const std::string kind = row.at("kind").get<std::string>();
  if (kind.rfind("block_", 0) == 0) {
    const bool gpt = kind == "block_gpt";
    LayerSpec l = gpt ? gpt_block(field(sh, "hidden"), field(sh, "heads"), field(sh, "seq")) : llama3_8b_block();
    l.hidden = field(sh, "hidden");
    l.heads = field(sh, "heads");
    l.kv_heads = field(sh, "kv_heads");
    l.ffn = field(sh, "ffn");
    l.seq = field(sh, "seq");
    l.dropout = sh.value("dropout", 0.0) > 0;
    l.causal = true;
    LayerQuery q = eager_query(field(sh, "mbs"), l.seq);
    q.legacy_mean_saves_input = true;
    return layer_cost(l, q).act_total_bytes();
  }
  EagerModuleQuery q;
  q.module = parse_eager_module(kind, "test");
  q.hidden = field(sh, "hidden");
  q.ffn = field(sh, "ffn");
  q.heads = field(sh, "heads");
  q.kv_heads = field(sh, "kv_heads");
  q.vocab = field(sh, "vocab");
  q.micro_batch = field(sh, "mbs");
  q.seq = field(sh, "seq");
  q.dropout = sh.value("dropout", 0.0) > 0;
  q.fused_qkv = sh.value("fused_qkv", true);
  q.input_bytes = row.at("input_dtype").get<std::string>() == "fp32" ? 4 : 2;
  q.autocast = row.at("autocast_bf16").get<bool>();
  q.legacy_mean_saves_input = true;
  const SavedBytes s = eager_module_saved_bytes(q);
  // The split matters too: the input is the layer boundary (act_boundary_bytes), the rest intermediate.
  EXPECT_DOUBLE_EQ(s.boundary_bytes, row.at("boundary_bytes").get<double>()) << row.dump();
  return s.boundary_bytes + s.intermediate_bytes;
}

// Every measured row is matched exactly: the table's bytes are sums of whole tensors, and the closed forms
// count the same tensors (0-dim constants, parameters, buffers and autocast's weight casts are excluded on both
// sides; see scripts/saved_tensors_probe.py).
TEST(EagerStack, EveryMeasuredRowMatchesTheClosedForm) {
  const core::Json doc = core::embedded_json("calibration/saved_tensors_cpu.json");
  ASSERT_GE(doc.at("rows").size(), 20u);
  int blocks = 0;
  for (const auto& row : doc.at("rows")) {
    const double measured = row.at("boundary_bytes").get<double>() + row.at("intermediate_bytes").get<double>();
    EXPECT_DOUBLE_EQ(closed_form(row), measured) << row.dump();
    blocks += row.at("kind").get<std::string>().rfind("block_", 0) == 0;
  }
  EXPECT_GE(blocks, 4);
}

// A Llama block on the eager stack by hand, per token (current PyTorch, eager math attention, t = 1): fp32
// block input and mid-block residual 8h, each RMSNorm's normalised fp32 x and rsqrt 2·(4h + 4), three bf16
// casts for wq/wk/wv and two for w1/w3 10h, Q, K and V at all heads 6h, the projection input 2h, SwiGLU 8f, and
// per head and key the fp32 softmax and its bf16 cast 6as.
TEST(EagerStack, LlamaBlockByHand) {
  const LayerSpec l = llama3_8b_block();
  const double h = 4096, f = 14336, a = 32, s = 2048, b = 2;
  const LayerCost c = layer_cost(l, eager_query(2, 2048));
  const double per_token = 8 * h + 2 * (4 * h + 4) + 10 * h + 6 * h + 2 * h + 8 * f + 6 * a * s;
  EXPECT_DOUBLE_EQ(c.act_total_bytes(), b * s * per_token);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, b * s * 4 * h);  // the fp32 residual stream
  // Against the fused stack (Korthikanti accounting), the eager one stores more than 1.5× as much.
  LayerQuery fused = eager_query(2, 2048);
  fused.eager_elementwise = false;
  EXPECT_GT(c.act_total_bytes(), 1.5 * layer_cost(l, fused).act_total_bytes());
}

// With 16-bit parameters (FSDP mixed precision) the residual stream is bf16 and each GEMM group reads one bf16
// norm output; the RMSNorms still save their fp32 upcast: per token inputs 4h, norms 2·(4h + 4 + 2h), norm
// outputs 4h, Q/K/V/projection 8h, SwiGLU 8f, probabilities 6as.
TEST(EagerStack, Bf16ParametersKeepABf16ResidualStream) {
  const LayerSpec l = llama3_8b_block();
  LayerQuery q = eager_query(1, 1024);
  q.eager_bf16_params = true;
  const double h = 4096, f = 14336, a = 32, s = 1024;
  const LayerCost c = layer_cost(l, q);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, s * 2 * h);
  EXPECT_DOUBLE_EQ(c.act_total_bytes(), s * (4 * h + 2 * (6 * h + 4) + 4 * h + 8 * h + 8 * f + 6 * a * s));
  q.eager_bf16_params = false;
  EXPECT_GT(layer_cost(l, q).act_total_bytes(), c.act_total_bytes());
}

// Under a fused attention kernel (SDPA flash) the s² term disappears; K and V are still repeated to every head
// (repeat_kv before SDPA) and the kernel adds its fp32 log-sum-exp.
TEST(EagerStack, FlashKeepsRepeatedKeysAndValues) {
  const LayerSpec l = llama3_8b_block();
  LayerQuery math = eager_query(1, 4096), flash = math;
  flash.attention = AttentionKernel::flash;
  const double s = 4096, a = 32, h = 4096;
  const double diff = layer_cost(l, math).act_total_bytes() - layer_cost(l, flash).act_total_bytes();
  EXPECT_DOUBLE_EQ(diff, s * (6 * a * s - 4 * a));
  // The fused stack stores K and V at the 8 kv heads: 2·2·(8/32)·h = h per token; the eager stack 4h.
  LayerQuery fused = flash;
  fused.eager_elementwise = false;
  EXPECT_GT(layer_cost(l, flash).act_intermediate_bytes - layer_cost(l, fused).act_intermediate_bytes, s * 3 * h);
}

// Recompute modes keep their meaning on the eager stack: full keeps the fp32 input only, selective drops the
// score terms (6as per token here), and both report what they drop as re-materialised.
TEST(EagerStack, RecomputeModes) {
  const LayerSpec l = llama3_8b_block();
  LayerQuery q = eager_query(1, 1024);
  const LayerCost none = layer_cost(l, q);
  q.recompute = Recompute::full;
  const LayerCost full = layer_cost(l, q);
  EXPECT_DOUBLE_EQ(full.act_total_bytes(), 1024.0 * 4 * 4096);
  EXPECT_DOUBLE_EQ(full.act_recomputed_bytes, none.act_total_bytes() - full.act_total_bytes());
  q.recompute = Recompute::selective;
  EXPECT_DOUBLE_EQ(none.act_total_bytes() - layer_cost(l, q).act_total_bytes(), 1024.0 * 6 * 32 * 1024);
}

// A GPT block with dropout: the 1-byte masks after attention and MLP and on the probabilities (7as per token:
// fp32 softmax, mask, bf16 cast of the dropped probabilities).
TEST(EagerStack, GptBlockWithDropoutByHand) {
  LayerSpec l = gpt_block(1024, 16, 512);
  l.causal = true;
  const double h = 1024, f = 4096, a = 16, s = 512;
  const LayerCost c = layer_cost(l, eager_query(1, 512));
  // inputs 8h, LayerNorm stats 16, casts (fused QKV, fc) 4h, Q/K/V/proj 8h, masks 2h, GELU 4f, scores 7as.
  EXPECT_DOUBLE_EQ(c.act_total_bytes(), s * (8 * h + 16 + 4 * h + 8 * h + 2 * h + 4 * f + 7 * a * s));
}

// Tensor parallelism splits the head and ffn terms; the norms, casts and masks stay on every rank.
TEST(EagerStack, TensorParallelSplitsHeadTerms) {
  const LayerSpec l = llama3_8b_block();
  LayerQuery q = eager_query(1, 1024);
  const double t1 = layer_cost(l, q).act_total_bytes();
  q.tp = 4;
  const double t4 = layer_cost(l, q).act_total_bytes();
  const double h = 4096, f = 14336, a = 32, s = 1024;
  const double repl = s * (8 * h + 2 * (4 * h + 4) + 10 * h);
  const double split = s * (8 * h + 8 * f + 6 * a * s);
  EXPECT_DOUBLE_EQ(t1, repl + split);
  EXPECT_DOUBLE_EQ(t4, repl + split / 4);
}

LayerSpec head(std::int64_t h, std::int64_t vocab) {
  LayerSpec l;
  l.kind = LayerKind::lm_head;
  l.name = "head";
  l.hidden = h;
  l.vocab = vocab;
  l.seq = 1024;
  l.norm = Norm::rmsnorm;
  l.bias = false;
  return l;
}

// The loss path: fused keeps the fp32 softmax (4 B per logit, today's number); fp32 (cross_entropy(logits.float()))
// adds the caller's bf16 logits, the gradient pair of log_softmax's backward and the labels: 10 B per logit + 8.
TEST(LossPath, Fp32AddsLogitsAndGradients) {
  const LayerSpec l = head(4096, 128256);
  for (int t : {1, 2}) {
    LayerQuery q;
    q.micro_batch = 2;
    q.tp = t;
    const LayerCost fused = layer_cost(l, q);
    EXPECT_DOUBLE_EQ(fused.act_intermediate_bytes, 2 * 1024 * (4096 * 2.0 + 4.0 * 128256 / t));
    q.loss = LossPath::fp32;
    const LayerCost fp32 = layer_cost(l, q);
    EXPECT_DOUBLE_EQ(fp32.act_intermediate_bytes - fused.act_intermediate_bytes, 2 * 1024 * (10.0 * 128256 / t + 8));
  }
  EXPECT_EQ(parse_loss_path("FP32", "x"), LossPath::fp32);
  EXPECT_EQ(to_string(LossPath::fused), "fused");
  EXPECT_THROW(parse_loss_path("bf16", "x"), core::InputError);
}

// The eager head: the fp32 final-norm input, what the RMSNorm saves, and the head GEMM's bf16 cast.
TEST(LossPath, EagerHeadSavesNormAndCast) {
  const LayerSpec l = head(4096, 128256);
  LayerQuery q = eager_query(1, 1024);
  const LayerCost c = layer_cost(l, q);
  EXPECT_DOUBLE_EQ(c.act_boundary_bytes, 1024.0 * 4 * 4096);
  EXPECT_DOUBLE_EQ(c.act_intermediate_bytes, 1024.0 * ((4 * 4096 + 4) + 2 * 4096 + 4 * 128256));
}

}  // namespace
}  // namespace strata::model
