#!/usr/bin/env python3
# scripts/saved_tensors_probe: measures the bytes real PyTorch modules save for backward (eager stack, autocast
# bf16 over fp32 parameters) on CPU and writes data/calibration/saved_tensors_cpu.json (docs/cost-model.md
# §Activation memory per stack). Run with Debian's python3-torch: /usr/bin/python3 scripts/saved_tensors_probe.py
"""Saved-tensor probe.

Every row runs one module forward under torch.autograd.graph.saved_tensors_hooks and sums the bytes of the
unique storages (deduplicated by storage data_ptr) its autograd graph saves for backward, split into:
  boundary_bytes      the module's own input, when saved (strata: act_boundary_bytes)
  intermediate_bytes  everything else that is an activation (strata: act_intermediate_bytes)
  param_bytes         parameters and buffers saved (not activations: strata counts them as weights)
  constant_bytes      0-dim tensors (the loss's total weight, wrapped Python scalars): not per token
  weight_cast_bytes   autocast's bf16 copies of parameters (its weight cache; strata counts them in the
                      recipe's 2 bytes/param of weights: fp32 params 4 + grads 4 + Adam 8 + bf16 copy 2 = 18)

Two behaviours of torch 1.13 on CPU differ from CUDA and are reproduced explicitly so the rows hold for GPUs:
  - CUDA autocast runs softmax in fp32 (its fp32 op list); CPU autocast keeps bf16. The modules call
    softmax(..., dtype=torch.float32), which saves the same fp32 output CUDA autocast saves.
  - F.dropout on CUDA is the fused native_dropout (saves a 1-byte bool mask); on CPU torch 1.13 saves a noise
    tensor of the input's dtype. The modules call torch.native_dropout, CUDA's path. The raw CPU behaviour is
    recorded once under "cpu_native" for reference.
Attention is the eager math form softmax(QK^T/sqrt(d))V (torch 1.13 has no scaled_dot_product_attention); its
saved tensors depend on the kernel (SDPA's flash/efficient kernels keep only Q, K, V, the output and the row
statistics), which is the only device-dependent part.
"""
import argparse
import datetime
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

BF16 = torch.bfloat16


def cuda_dropout(x, p, training=True):
    """F.dropout as CUDA runs it (native_dropout: bool mask); identity when p == 0 (at::dropout's shortcut)."""
    if p == 0 or not training:
        return x
    return torch.native_dropout(x, p, True)[0]


def softmax_fp32(x):
    """softmax as CUDA autocast runs it (fp32 op list): fp32 output."""
    return F.softmax(x, dim=-1, dtype=torch.float32)


class RMSNormHF(nn.Module):
    """RMSNorm as Hugging Face LlamaRMSNorm and torchtitan (pre-2025) write it: upcast, normalise, cast back."""

    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        var = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(dtype)


class GeluMLP(nn.Module):
    """GPT-2/GPT-3 MLP (nanoGPT layout): fc h->f, GELU, proj f->h, dropout."""

    def __init__(self, h, f, p):
        super().__init__()
        self.fc, self.proj, self.p = nn.Linear(h, f), nn.Linear(f, h), p

    def forward(self, x):
        return cuda_dropout(self.proj(F.gelu(self.fc(x))), self.p)


class SwiGLU(nn.Module):
    """Llama FeedForward: w2(silu(w1 x) * w3 x), no biases."""

    def __init__(self, h, f):
        super().__init__()
        self.w1, self.w2, self.w3 = nn.Linear(h, f, bias=False), nn.Linear(f, h, bias=False), nn.Linear(h, f, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Attention(nn.Module):
    """Causal self-attention in eager math form. fused_qkv: one h->3h projection split into views (nanoGPT,
    GPT-2, MPT); otherwise separate wq/wk/wv (Llama in HF and torchtitan) with K/V repeated to every query head
    (HF repeat_kv, torchtitan repeat_kv) when kv_heads < heads."""

    def __init__(self, h, heads, kv_heads, p, fused_qkv, bias):
        super().__init__()
        self.h, self.a, self.kv, self.d, self.p, self.fused = h, heads, kv_heads, h // heads, p, fused_qkv
        if fused_qkv:
            self.qkv = nn.Linear(h, h + 2 * kv_heads * self.d, bias=bias)
        else:
            self.wq = nn.Linear(h, h, bias=bias)
            self.wk = nn.Linear(h, kv_heads * self.d, bias=bias)
            self.wv = nn.Linear(h, kv_heads * self.d, bias=bias)
        self.wo = nn.Linear(h, h, bias=bias)
        # The causal mask as a buffer (nanoGPT's `bias`): a constant, not an activation.
        self.register_buffer("causal", torch.ones(1024, 1024, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, x):
        b, s, _ = x.shape
        if self.fused:
            q, k, v = self.qkv(x).split([self.h, self.kv * self.d, self.kv * self.d], dim=-1)
        else:
            q, k, v = self.wq(x), self.wk(x), self.wv(x)
        q = q.view(b, s, self.a, self.d).transpose(1, 2)
        k = k.view(b, s, self.kv, self.d).transpose(1, 2)
        v = v.view(b, s, self.kv, self.d).transpose(1, 2)
        if self.kv < self.a:  # GQA: every query head gets its K/V head (a new contiguous tensor)
            rep = self.a // self.kv
            k = k[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.a, s, self.d)
            v = v[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.a, s, self.d)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d))
        att = softmax_fp32(att.masked_fill(self.causal[:s, :s], float("-inf")))
        att = cuda_dropout(att, self.p)
        y = (att @ v).transpose(1, 2).contiguous().view(b, s, self.h)
        return cuda_dropout(self.wo(y), self.p)


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(norm1(x)), then + mlp(norm2(x)). gpt: LayerNorm, fused QKV, GELU,
    biases, dropout p; llama: RMSNorm (HF), separate projections, GQA, SwiGLU, no biases, no dropout."""

    def __init__(self, kind, h, heads, kv_heads, f, p):
        super().__init__()
        gpt = kind == "gpt"
        self.n1 = nn.LayerNorm(h) if gpt else RMSNormHF(h)
        self.n2 = nn.LayerNorm(h) if gpt else RMSNormHF(h)
        self.attn = Attention(h, heads, kv_heads, p, fused_qkv=gpt, bias=gpt)
        self.mlp = GeluMLP(h, f, p) if gpt else SwiGLU(h, f)

    def forward(self, x):
        x = x + self.attn(self.n1(x))
        return x + self.mlp(self.n2(x))


class Linear(nn.Module):
    def __init__(self, h, f):
        super().__init__()
        self.fc = nn.Linear(h, f)

    def forward(self, x):
        return self.fc(x)


class Dropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return cuda_dropout(x, self.p)


class LossFp32(nn.Module):
    """Untied LM head + cross_entropy(logits.float()) (the loop most PyTorch users write; nanoGPT, HF)."""

    def __init__(self, h, vocab):
        super().__init__()
        self.head = nn.Linear(h, vocab, bias=False)

    def forward(self, x):
        logits = self.head(x)
        target = torch.randint(0, logits.shape[-1], logits.shape[:-1])
        return F.cross_entropy(logits.float().flatten(0, 1), target.flatten())


VIEW_FNS = {"TBackward0", "ViewBackward0", "TransposeBackward0", "ExpandBackward0", "UnsafeViewBackward0",
            "PermuteBackward0", "AsStridedBackward0"}


def is_param_cast(t, param_ids):
    """True for autocast's cast of a parameter (ToCopyBackward0 fed by the parameter's AccumulateGrad), also
    when saved through a view of it (mm saves weight.t())."""
    fn = t.grad_fn
    while fn is not None and type(fn).__name__ in VIEW_FNS:
        fn = fn.next_functions[0][0]
    if fn is None or type(fn).__name__ != "ToCopyBackward0":
        return False
    nxt = fn.next_functions[0][0]
    return nxt is not None and type(nxt).__name__ == "AccumulateGrad" and id(nxt.variable) in param_ids


def measure(module, x_leaf, autocast):
    """Bytes of unique storages saved for backward by module(x), split as described in the module doc. The
    input is a non-leaf copy of x_leaf, as a block's input is in a model: autocast caches casts of leaf tensors
    that require grad (meant for weights), so a leaf input would get one cached cast where a model makes one
    cast per consuming matmul."""
    params = {p.storage().data_ptr() for p in module.parameters()} | {b.storage().data_ptr() for b in module.buffers()}
    param_ids = {id(p) for p in module.parameters()}
    x = x_leaf * 1
    seen = {}

    def pack(t):
        ptr = t.storage().data_ptr()
        if ptr not in seen:
            if ptr in params:
                cls = "param"
            elif ptr == x.storage().data_ptr():
                cls = "boundary"
            elif is_param_cast(t, param_ids):
                cls = "weight_cast"
            elif t.numel() <= 1:
                cls = "constant"  # 0-dim scalars (loss weight total, wrapped Python numbers)
            else:
                cls = "intermediate"
            seen[ptr] = (cls, t.storage().nbytes())
        return t

    torch.manual_seed(0)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if autocast:
            with torch.autocast("cpu", dtype=BF16):
                out = module(x)
        else:
            out = module(x)
    out.float().sum().backward()  # the graph is complete and usable
    sums = {"boundary": 0, "intermediate": 0, "param": 0, "weight_cast": 0, "constant": 0}
    for cls, nbytes in seen.values():
        sums[cls] += nbytes
    return {f"{k}_bytes": v for k, v in sums.items()}


def make_input(shape, dtype):
    return torch.randn(*shape, dtype=torch.float32).to(dtype).requires_grad_(True)


def rows():
    """(name, kind, shape, module factory, input dtype, autocast)."""
    out = []
    for h, f, b, s in [(256, 1024, 2, 64), (512, 2048, 1, 128)]:
        shp = {"hidden": h, "ffn": f, "mbs": b, "seq": s}
        out += [
            ("linear", "linear", shp, lambda h=h, f=f: Linear(h, f), torch.float32, True),
            ("linear_bf16_input", "linear", shp, lambda h=h, f=f: Linear(h, f), BF16, True),
            ("layernorm", "layernorm", shp, lambda h=h: nn.LayerNorm(h), torch.float32, True),
            ("rmsnorm_hf", "rmsnorm", shp, lambda h=h: RMSNormHF(h), torch.float32, True),
            ("rmsnorm_hf_bf16_input", "rmsnorm", shp, lambda h=h: RMSNormHF(h), BF16, False),
            ("mlp_gelu", "mlp_gelu", dict(shp, dropout=0.1), lambda h=h, f=f: GeluMLP(h, f, 0.1), torch.float32, True),
            ("mlp_swiglu", "mlp_swiglu", shp, lambda h=h, f=f: SwiGLU(h, f), torch.float32, True),
            ("dropout", "dropout", dict(shp, dropout=0.1), lambda: Dropout(0.1), BF16, False),
        ]
    for h, a, kv, b, s, p in [(256, 4, 4, 2, 64, 0.1), (256, 8, 2, 1, 128, 0.0), (512, 8, 8, 1, 128, 0.0)]:
        shp = {"hidden": h, "heads": a, "kv_heads": kv, "mbs": b, "seq": s, "dropout": p}
        fused = kv == a and p > 0
        out.append((f"attention_math_{'fused_qkv' if fused else 'separate_qkv'}", "attention", dict(shp, fused_qkv=fused),
                    lambda h=h, a=a, kv=kv, p=p, fused=fused: Attention(h, a, kv, p, fused, fused), torch.float32, True))
    blocks = [("gpt", 256, 4, 4, 1024, 2, 64, 0.1), ("gpt", 512, 8, 8, 2048, 1, 128, 0.1), ("gpt", 256, 4, 4, 1024, 1, 128, 0.0),
              ("llama", 256, 8, 2, 688, 2, 64, 0.0), ("llama", 512, 8, 8, 1376, 1, 128, 0.0),
              ("llama", 512, 16, 4, 1376, 2, 64, 0.0)]
    for kind, h, a, kv, f, b, s, p in blocks:
        shp = {"hidden": h, "heads": a, "kv_heads": kv, "ffn": f, "mbs": b, "seq": s, "dropout": p}
        out.append((f"block_{kind}", f"block_{kind}", shp,
                    lambda kind=kind, h=h, a=a, kv=kv, f=f, p=p: Block(kind, h, a, kv, f, p), torch.float32, True))
    for h, V, b, s in [(256, 1000, 2, 64), (512, 4096, 1, 128)]:
        out.append(("loss_fp32", "loss_fp32", {"hidden": h, "vocab": V, "mbs": b, "seq": s},
                    lambda h=h, V=V: LossFp32(h, V), BF16, True))
    return out


def cpu_native_dropout_row():
    """F.dropout as torch 1.13 runs it on CPU (for reference only; not a calibration row)."""
    x = make_input((2, 64, 256), torch.float32)
    m = nn.Dropout(0.1)
    r = measure(m, x, False)
    return {"module": "F.dropout (CPU path)", "input": "fp32 [2, 64, 256]", **r,
            "note": "torch 1.13 CPU saves a noise tensor of the input dtype (4 B/element); CUDA's fused "
                    "native_dropout saves a bool mask (1 B/element), which the calibration rows use"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="data/calibration/saved_tensors_cpu.json")
    args = ap.parse_args()
    torch.manual_seed(0)
    table = []
    for name, kind, shape, factory, dtype, autocast in rows():
        torch.manual_seed(0)
        module = factory().train()
        x = make_input((shape["mbs"], shape["seq"], shape["hidden"]), dtype)
        r = measure(module, x, autocast)
        table.append({"name": name, "kind": kind, "shape": shape,
                      "input_dtype": "fp32" if dtype == torch.float32 else "bf16",
                      "autocast_bf16": autocast, **r})
    doc = {
        "_doc": "Bytes saved for backward by real PyTorch modules (eager, CPU), unique storages; written by "
                "scripts/saved_tensors_probe.py (see its docstring for the columns and the two CUDA behaviours "
                "reproduced explicitly). Compared with strata's closed forms by tests/model/test_layer_eager.cpp "
                "and `strata validate` (source 'PyTorch saved tensors (CPU)').",
        "provenance": {
            "torch_version": torch.__version__,
            "package": "Debian python3-torch 1.13.1+dfsg-4 (bookworm)",
            "python": sys.version.split()[0],
            "command": "/usr/bin/python3 scripts/saved_tensors_probe.py",
            "date": datetime.date.today().isoformat(),
            "device": "cpu (autocast('cpu', bfloat16) where autocast_bf16; parameters fp32)",
            "device_dependence": "none except the attention kernel: eager math attention here; SDPA's "
                                 "flash/efficient kernels save Q, K, V, the output and the log-sum-exp instead",
        },
        "rows": table,
        "cpu_native": [cpu_native_dropout_row()],
    }
    with open(args.out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    for r in table:
        print(f"{r['name']:<28} {json.dumps(r['shape']):<90} b={r['boundary_bytes']:>9} i={r['intermediate_bytes']:>10} "
              f"p={r['param_bytes']:>8} w={r['weight_cast_bytes']:>8} c={r['constant_bytes']}")


if __name__ == "__main__":
    main()
