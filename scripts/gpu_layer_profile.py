#!/usr/bin/env python3
# scripts/gpu_layer_profile: times one Llama-3-shaped transformer block (the tensor-parallel shard of one rank,
# no collectives) on a CUDA GPU with PyTorch, forward and backward separately, and writes strata profile files
# (docs/cost-model.md §Measured profile) with the measurement's provenance.  Issue 13 item 8: real GPU numbers
# next to the cost model's predictions (`strata validate` prints them; they are a check, never fitted).
#
# The block is what torchtitan runs without torch.compile: RMSNorm, q/k/v projections, rotary embedding,
# causal scaled-dot-product attention (PyTorch's flash backend, grouped-query heads), output projection,
# residual, RMSNorm, SwiGLU MLP (w1, w3, w2), residual.  A tp shard holds heads/tp query heads, kv_heads/tp
# key/value heads and ffn/tp MLP columns; norms and residuals stay full width (no sequence parallelism).
#
# fp8: the seven projections run as torch._scaled_mm with per-tensor current scaling (amax of each operand on
# every call): e4m3 activations and weights, e5m2 gradients, the transposes the backward GEMMs need made
# explicitly.  That is plain PyTorch, not Transformer Engine's fused cast-transpose kernels, so it is an upper
# bound on a tuned fp8 layer's time; norms, rotary, attention and the SwiGLU product stay bf16.
#
# --compile runs the block under torch.compile (inductor), which fuses the element-wise ops (strata's
# elementwise=fused; the files say "elementwise": "fused", the eager ones "eager").
#
# Usage: python3 scripts/gpu_layer_profile.py --out-dir DIR [--tp 1,2,4,8] [--seq 8192] [--mbs 1]
#        [--dtypes bf16,fp8] [--repeats 20] [--warmup 5] [--gpu-type h100-sxm] [--compile]
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

import torch
import torch.nn.functional as F

HIDDEN, HEADS, KV_HEADS, FFN = 4096, 32, 8, 14336  # Llama 3 8B (strata's llama3-8b)
HEAD_DIM = HIDDEN // HEADS
FP8_E4M3_MAX = 448.0
FP8_E5M2_MAX = 57344.0


def to_fp8(x, dtype, fmax):
    """Per-tensor current scaling: the tensor's amax maps to the format's largest value."""
    amax = x.abs().amax().float().clamp(min=1e-12)
    scale = fmax / amax
    return (x.float() * scale).to(dtype), (1.0 / scale)


def scaled_mm(a, b, a_inv, b_inv):
    """a (row-major) @ b (column-major) in fp8, output bf16; handles the old tuple-returning signature."""
    out = torch._scaled_mm(a, b, scale_a=a_inv, scale_b=b_inv, out_dtype=torch.bfloat16)
    return out[0] if isinstance(out, tuple) else out


class Fp8Linear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):  # x [M, K] bf16, w [N, K] bf16 -> y [M, N]
        xq, xs = to_fp8(x, torch.float8_e4m3fn, FP8_E4M3_MAX)
        wq, ws = to_fp8(w, torch.float8_e4m3fn, FP8_E4M3_MAX)
        ctx.save_for_backward(xq, xs, wq, ws)
        return scaled_mm(xq, wq.t(), xs, ws)

    @staticmethod
    def backward(ctx, gy):  # gy [M, N]
        xq, xs, wq, ws = ctx.saved_tensors
        gq, gs = to_fp8(gy.contiguous(), torch.float8_e5m2, FP8_E5M2_MAX)
        # dgrad: gy [M,N] @ w [N,K]; w must be column-major for the second operand.
        gx = scaled_mm(gq, wq.t().contiguous().t(), gs, ws)
        # wgrad: gy^T [N,M] @ x [M,K]
        gw = scaled_mm(gq.t().contiguous(), xq.t().contiguous().t(), gs, xs)
        return gx, gw


def linear(x, w, fp8):
    if not fp8:
        return F.linear(x, w)
    shape = x.shape
    y = Fp8Linear.apply(x.reshape(-1, shape[-1]), w)
    return y.reshape(*shape[:-1], w.shape[0])


def rms_norm(x, weight, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight


def rotary(x, cos, sin):  # x [b, heads, s, d]
    x1, x2 = x[..., : HEAD_DIM // 2], x[..., HEAD_DIM // 2:]
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class Block(torch.nn.Module):
    def __init__(self, tp, seq, fp8, device):
        super().__init__()
        self.h, self.kv = HEADS // tp, KV_HEADS // tp
        self.fp8 = fp8
        p = lambda *shape: torch.nn.Parameter(torch.randn(*shape, device=device, dtype=torch.bfloat16) * 0.02)
        self.wq, self.wk, self.wv = p(self.h * HEAD_DIM, HIDDEN), p(self.kv * HEAD_DIM, HIDDEN), p(self.kv * HEAD_DIM, HIDDEN)
        self.wo = p(HIDDEN, self.h * HEAD_DIM)
        self.w1, self.w3, self.w2 = p(FFN // tp, HIDDEN), p(FFN // tp, HIDDEN), p(HIDDEN, FFN // tp)
        self.n1 = torch.nn.Parameter(torch.ones(HIDDEN, device=device, dtype=torch.bfloat16))
        self.n2 = torch.nn.Parameter(torch.ones(HIDDEN, device=device, dtype=torch.bfloat16))
        pos = torch.arange(seq, device=device, dtype=torch.float32)
        inv = 1.0 / (500000.0 ** (torch.arange(0, HEAD_DIM // 2, device=device, dtype=torch.float32) / (HEAD_DIM // 2)))
        ang = torch.outer(pos, inv)
        self.cos, self.sin = ang.cos().to(torch.bfloat16), ang.sin().to(torch.bfloat16)

    def attention(self, q, k, v):
        try:
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        except TypeError:  # PyTorch < 2.5: no enable_gqa; expand K/V (costs a copy)
            rep = q.shape[1] // k.shape[1]
            return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                                  is_causal=True)

    def forward(self, x):  # x [b, s, HIDDEN]
        b, s, _ = x.shape
        y = rms_norm(x, self.n1)
        q = linear(y, self.wq, self.fp8).view(b, s, self.h, HEAD_DIM).transpose(1, 2)
        k = linear(y, self.wk, self.fp8).view(b, s, self.kv, HEAD_DIM).transpose(1, 2)
        v = linear(y, self.wv, self.fp8).view(b, s, self.kv, HEAD_DIM).transpose(1, 2)
        q, k = rotary(q, self.cos, self.sin), rotary(k, self.cos, self.sin)
        a = self.attention(q, k, v).transpose(1, 2).reshape(b, s, self.h * HEAD_DIM)
        x = x + linear(a, self.wo, self.fp8)
        y = rms_norm(x, self.n2)
        m = F.silu(linear(y, self.w1, self.fp8)) * linear(y, self.w3, self.fp8)
        return x + linear(m, self.w2, self.fp8)


def time_pair(fwd, bwd, repeats, warmup):
    """Median forward and backward times (CUDA events), each step timed on its own."""
    fs, bs = [], []
    for i in range(warmup + repeats):
        e0, e1, e2 = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        e0.record()
        out = fwd()
        e1.record()
        bwd(out)
        e2.record()
        torch.cuda.synchronize()
        if i >= warmup:
            fs.append(e0.elapsed_time(e1) / 1e3)
            bs.append(e1.elapsed_time(e2) / 1e3)
    return statistics.median(fs), statistics.median(bs)


def gemm_fwd_time(tp, seq, mbs, fp8, repeats, warmup):
    """The block's seven forward GEMMs alone, operands ready (fp8: already quantized, fast accumulation as
    Transformer Engine's forward uses): the GEMM speed an fp8 recipe can reach at these shapes."""
    dev, m = torch.device("cuda"), mbs * seq
    h, kv = HEADS // tp * HEAD_DIM, KV_HEADS // tp * HEAD_DIM
    shapes = [(h, HIDDEN), (kv, HIDDEN), (kv, HIDDEN), (HIDDEN, h), (FFN // tp, HIDDEN), (FFN // tp, HIDDEN),
              (HIDDEN, FFN // tp)]
    total = 0.0
    for n, k in shapes:
        a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
        w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
        if fp8:
            aq, as_ = to_fp8(a, torch.float8_e4m3fn, FP8_E4M3_MAX)
            wq, ws = to_fp8(w, torch.float8_e4m3fn, FP8_E4M3_MAX)
            run = lambda: torch._scaled_mm(aq, wq.t(), scale_a=as_, scale_b=ws, out_dtype=torch.bfloat16,
                                           use_fast_accum=True)
        else:
            run = lambda: a @ w.t()
        times = []
        for i in range(warmup + repeats):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            run()
            e1.record()
            torch.cuda.synchronize()
            if i >= warmup:
                times.append(e0.elapsed_time(e1) / 1e3)
        total += statistics.median(times)
    return total


def profile_block(tp, seq, mbs, fp8, repeats, warmup, compiled=False):
    dev = torch.device("cuda")
    torch.manual_seed(0)
    blk = Block(tp, seq, fp8, dev)
    run = torch.compile(blk) if compiled else blk
    x = torch.randn(mbs, seq, HIDDEN, device=dev, dtype=torch.bfloat16, requires_grad=True)
    gy = torch.randn(mbs, seq, HIDDEN, device=dev, dtype=torch.bfloat16)

    def bwd(out):
        out.backward(gy)
        x.grad = None
        for p in blk.parameters():
            p.grad = None

    fwd_s, bwd_s = time_pair(lambda: run(x), bwd, repeats, warmup)
    # Components: the attention kernel alone (forward and backward) at the shard's shape.
    q = torch.randn(mbs, blk.h, seq, HEAD_DIM, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(mbs, blk.kv, seq, HEAD_DIM, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(mbs, blk.kv, seq, HEAD_DIM, device=dev, dtype=torch.bfloat16, requires_grad=True)
    ga = torch.randn(mbs, blk.h, seq, HEAD_DIM, device=dev, dtype=torch.bfloat16)
    att_f, att_b = time_pair(lambda: blk.attention(q, k, v), lambda o: o.backward(ga), repeats, warmup)
    peak = torch.cuda.max_memory_allocated()
    gemm_f = gemm_fwd_time(tp, seq, mbs, fp8, repeats, warmup)
    del blk, x, gy, q, k, v, ga
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    return {"kind": "transformer", "hidden": HIDDEN, "heads": HEADS, "kv_heads": KV_HEADS, "ffn": FFN,
            "seq": seq, "tp": tp, "mbs": mbs, "fwd_s": round(fwd_s, 9), "bwd_s": round(bwd_s, 9),
            "includes_tp_comm": False, "attention_fwd_s": round(att_f, 9), "attention_bwd_s": round(att_b, 9),
            "gemm_fwd_s": round(gemm_f, 9),
            "peak_allocated_bytes": int(peak)}


def nvidia_smi():
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,power.limit,clocks.max.sm,memory.total,driver_version",
                               "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
    except Exception as e:  # noqa: BLE001 - provenance only
        return f"nvidia-smi unavailable: {e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--tp", default="1,2,4,8")
    ap.add_argument("--seq", type=int, default=8192)
    ap.add_argument("--mbs", type=int, default=1)
    ap.add_argument("--dtypes", default="bf16,fp8")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--gpu-type", default="", help="strata catalog GPU name (default: from the device name)")
    ap.add_argument("--compile", action="store_true", help="time the block under torch.compile (fused element-wise)")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_layer_profile: no CUDA device")
    name = torch.cuda.get_device_name(0)
    gpu_type = a.gpu_type or ("h200" if "H200" in name else "h100-sxm" if "H100" in name else name.lower())
    torch.backends.cuda.matmul.allow_tf32 = False
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
    os.makedirs(a.out_dir, exist_ok=True)
    for dtype in a.dtypes.split(","):
        fp8 = dtype == "fp8"
        rows, note = [], ""
        for tp in (int(t) for t in a.tp.split(",")):
            try:
                rows.append(profile_block(tp, a.seq, a.mbs, fp8, a.repeats, a.warmup, a.compile))
                print(f"{dtype} tp={tp}: {json.dumps(rows[-1])}", flush=True)
            except Exception as e:  # noqa: BLE001 - an fp8 path the build lacks must not lose the bf16 rows
                note = f"{dtype} tp={tp} failed: {type(e).__name__}: {e}"
                print(note, flush=True)
                break
        if not rows:
            continue
        doc = {"source": "strata scripts/gpu_layer_profile.py (issue 13 item 8), measured " + when,
               "device": "cuda", "gpu_type": gpu_type, "dtype": dtype,
               "elementwise": "fused" if a.compile else "eager",
               "provenance": {"gpu": name, "nvidia_smi": nvidia_smi(), "torch": torch.__version__,
                              "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
                              "timing": f"CUDA events, median of {a.repeats} after {a.warmup} warm-up steps"
                                        + (" (torch.compile, inductor; compilation in the warm-up)" if a.compile else ""),
                              "block": "Llama-3-8B shard (see the script header); attention = "
                                       "F.scaled_dot_product_attention(is_causal=True)",
                              "fp8": "torch._scaled_mm, per-tensor current scaling, e4m3 fwd / e5m2 grads, "
                                     "explicit transposes (not Transformer Engine)" if fp8 else "",
                              "components": "attention_*: F.scaled_dot_product_attention alone at the shard's "
                                            "shape; gemm_fwd_s: the seven forward projections alone, operands "
                                            "ready (fp8: pre-quantized, use_fast_accum)",
                              "note": note},
               "layers": rows}
        suffix = ("_mbs%d" % a.mbs if a.mbs != 1 else "") + ("_compiled" if a.compile else "")
        path = os.path.join(a.out_dir, f"gpu_layer_{gpu_type}_{dtype}{suffix}.json")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        print("wrote", path, flush=True)


if __name__ == "__main__":
    main()
