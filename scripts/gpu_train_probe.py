#!/usr/bin/env python3
# scripts/gpu_train_probe: trains whole GPT- and Llama-shaped models for a few steps on one CUDA GPU with the loop
# most PyTorch users write (strata's `--engine pytorch` stack) and records peak allocated and reserved memory and
# the step time per configuration, as data/calibration/gpu_train_<gpu>.json (issue 38 item 2; docs/cost-model.md
# §Measured training steps). `strata validate` compares the rows with `estimate --engine pytorch`; never fitted.
"""Single-GPU training probe.

The stack (data/engines/pytorch.json): fp32 parameters; torch.autocast(cuda, bfloat16) for bf16 rows, none for fp32
rows; torch.nn.functional.scaled_dot_product_attention(is_causal=True) (PyTorch picks the backend: flash for
16-bit inputs on sm80+); grouped-query K/V repeated to every head before SDPA (Hugging Face / torchtitan
repeat_kv); eager element-wise ops (no torch.compile); untied LM head and F.cross_entropy(logits.float());
torch.optim.AdamW(fused=True); zero_grad(set_to_none=True); full recompute = torch.utils.checkpoint
(use_reentrant=False) around each block. Models are built from strata's transformer-config model JSON (the row's
`model` object), so the same definition feeds `strata estimate`.

Per configuration: warm-up steps (the optimizer states exist after the first), reset of the peak statistics, then
timed steps (CUDA events around the whole step: forward, backward, optimizer step, zero_grad). Recorded:
peak_allocated_bytes = torch.cuda.max_memory_allocated over the timed steps, peak_reserved_bytes =
max_memory_reserved, static_bytes = memory_allocated between steps (parameters + AdamW states; gradients are
freed by zero_grad), step_time_s = median. A configuration that runs out of memory is recorded with "oom": true.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class RMSNormHF(nn.Module):
    """Hugging Face LlamaRMSNorm: upcast to fp32, normalise, cast back, scale."""

    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        h, a, kv, f = m["hidden"], m["heads"], m.get("kv_heads", m["heads"]), m["ffn"]
        self.h, self.a, self.kv, self.d = h, a, kv, h // a
        self.gpt = m["norm"] == "layernorm"
        bias = m["bias"]
        self.n1 = nn.LayerNorm(h, bias=bias) if self.gpt else RMSNormHF(h)
        self.n2 = nn.LayerNorm(h, bias=bias) if self.gpt else RMSNormHF(h)
        if self.gpt:  # nanoGPT: fused qkv
            self.qkv = nn.Linear(h, h + 2 * kv * self.d, bias=bias)
        else:  # HF Llama: separate projections
            self.wq = nn.Linear(h, h, bias=bias)
            self.wk = nn.Linear(h, kv * self.d, bias=bias)
            self.wv = nn.Linear(h, kv * self.d, bias=bias)
        self.wo = nn.Linear(h, h, bias=bias)
        if m["activation"] == "gelu":
            self.fc, self.proj = nn.Linear(h, f, bias=bias), nn.Linear(f, h, bias=bias)
        else:
            self.w1, self.w3 = nn.Linear(h, f, bias=bias), nn.Linear(h, f, bias=bias)
            self.w2 = nn.Linear(f, h, bias=bias)
        self.swiglu = m["activation"] == "swiglu"

    def attn(self, x, rope):
        b, s, _ = x.shape
        if self.gpt:
            q, k, v = self.qkv(x).split([self.h, self.kv * self.d, self.kv * self.d], dim=-1)
        else:
            q, k, v = self.wq(x), self.wk(x), self.wv(x)
        q = q.view(b, s, self.a, self.d).transpose(1, 2)
        k = k.view(b, s, self.kv, self.d).transpose(1, 2)
        v = v.view(b, s, self.kv, self.d).transpose(1, 2)
        if rope is not None:
            cos, sin = rope[0].to(q.dtype), rope[1].to(q.dtype)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if self.kv < self.a:
            rep = self.a // self.kv
            k = k[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.a, s, self.d)
            v = v[:, :, None].expand(b, self.kv, rep, s, self.d).reshape(b, self.a, s, self.d)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, s, self.h))

    def mlp(self, x):
        if self.swiglu:
            return self.w2(F.silu(self.w1(x)) * self.w3(x))
        return self.proj(F.gelu(self.fc(x)))

    def forward(self, x, rope):
        x = x + self.attn(self.n1(x), rope)
        return x + self.mlp(self.n2(x))


class Model(nn.Module):
    def __init__(self, m, seq):
        super().__init__()
        h = m["hidden"]
        self.tok = nn.Embedding(m["vocab"], h)
        self.pos = nn.Embedding(seq, h) if m["learned_positions"] else None
        self.blocks = nn.ModuleList(Block(m) for _ in range(m["layers"]))
        self.norm = nn.LayerNorm(h, bias=m["bias"]) if m["norm"] == "layernorm" else RMSNormHF(h)
        self.head = nn.Linear(h, m["vocab"], bias=False)
        self.rope_dim = None if m["learned_positions"] else h // m["heads"]
        self.recompute = False

    def rope(self, s, device):
        if self.rope_dim is None:
            return None
        d = self.rope_dim
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
        ang = torch.outer(torch.arange(s, device=device, dtype=torch.float32), inv)
        emb = torch.cat((ang, ang), dim=-1)
        return emb.cos(), emb.sin()

    def forward(self, idx, target):
        s = idx.shape[1]
        x = self.tok(idx)
        if self.pos is not None:
            x = x + self.pos(torch.arange(s, device=idx.device))
        rope = self.rope(s, idx.device)
        for blk in self.blocks:
            x = checkpoint(blk, x, rope, use_reentrant=False) if self.recompute else blk(x, rope)
        logits = self.head(self.norm(x))
        return F.cross_entropy(logits.float().flatten(0, 1), target.flatten())


def gib(x):
    return x / 2**30


def run_config(cfg, models, args):
    m = models[cfg["model"]]
    dev = torch.device("cuda")
    torch.manual_seed(0)
    row = {"name": cfg["name"], "model": m, "dtype": cfg["dtype"], "mbs": cfg["mbs"], "seq": cfg["seq"],
           "recompute": cfg["recompute"], "grad_accum": cfg.get("accum", 1),
           "elementwise": "fused" if cfg.get("compile") else "eager"}
    model = opt = None
    try:
        model = Model(m, cfg["seq"]).to(dev)
        model.recompute = cfg["recompute"] == "full"
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        fwd = torch.compile(model) if cfg.get("compile") else model
        row["param_count"] = sum(p.numel() for p in model.parameters())
        idx = torch.randint(0, m["vocab"], (cfg["mbs"], cfg["seq"]), device=dev)
        tgt = torch.randint(0, m["vocab"], (cfg["mbs"], cfg["seq"]), device=dev)
        bf16 = cfg["dtype"] == "bf16"

        def step():
            for _ in range(row["grad_accum"]):
                with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
                    loss = fwd(idx, tgt)
                loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            return loss

        for _ in range(args.warmup):
            step()
        torch.cuda.synchronize()
        row["static_bytes"] = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(args.steps):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            loss = step()
            e1.record()
            torch.cuda.synchronize()
            times.append(e0.elapsed_time(e1) / 1e3)
        row.update(oom=False, peak_allocated_bytes=torch.cuda.max_memory_allocated(),
                   peak_reserved_bytes=torch.cuda.max_memory_reserved(), step_time_s=statistics.median(times),
                   step_times_s=[round(t, 6) for t in times], loss=float(loss))
    except torch.cuda.OutOfMemoryError as e:
        row.update(oom=True, error=str(e).splitlines()[0][:200])
    finally:
        del model, opt
        if cfg.get("compile"):
            torch._dynamo.reset()
        torch.cuda.empty_cache()
    return row


def gpt(name, layers, hidden, heads, vocab=50304):
    return {"name": name, "family": "gpt", "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": heads,
            "ffn": 4 * hidden, "vocab": vocab, "seq": 2048, "activation": "gelu", "norm": "layernorm",
            "tied_embeddings": False, "learned_positions": True, "bias": True, "dropout": False}


def llama(name, layers, hidden, heads, kv, ffn, vocab=32000):
    return {"name": name, "family": "llama", "layers": layers, "hidden": hidden, "heads": heads, "kv_heads": kv,
            "ffn": ffn, "vocab": vocab, "seq": 4096, "activation": "swiglu", "norm": "rmsnorm",
            "tied_embeddings": False, "learned_positions": False, "bias": False, "dropout": False}


MODELS = {m["name"]: m for m in [gpt("probe-gpt-350m", 24, 1024, 16), gpt("probe-gpt-760m", 24, 1536, 16),
                                 llama("probe-llama-1b", 16, 2048, 32, 8, 8192),
                                 llama("probe-llama-3b", 28, 3072, 24, 8, 8192),
                                 # launch-bound twins: the step is the framework's per-kernel cost, not FLOPs
                                 gpt("probe-gpt-tiny4", 4, 64, 4, 256), gpt("probe-gpt-tiny16", 16, 64, 4, 256),
                                 llama("probe-llama-tiny4", 4, 64, 4, 2, 256, 256),
                                 llama("probe-llama-tiny16", 16, 64, 4, 2, 256, 256)]}


def configs(which="base"):
    out = []

    def add(model, dtype, mbs, seq, rc="none", accum=1, compile_=False):
        out.append({"name": f"{model} {dtype} mbs{mbs} seq{seq} {rc}" + (f" accum{accum}" if accum > 1 else "")
                    + (" compiled" if compile_ else ""),
                    "model": model, "dtype": dtype, "mbs": mbs, "seq": seq, "recompute": rc, "accum": accum,
                    "compile": compile_})

    if which == "accum":
        # Issue 50 item 5: gradient accumulation 1/2/4/8 (what is per step, what per micro-batch), small micro-batches
        # where the host floor shows, fp32, torch.compile, and both sides of the memory limit (llama-3b's peak grows
        # ~10 GiB per sample at seq 2048: mbs 8 fits a 141 GB part, mbs 10-12 do not).
        for accum in (1, 2, 4, 8):
            add("probe-gpt-350m", "bf16", 4, 1024, "none", accum)
            add("probe-llama-1b", "bf16", 4, 2048, "none", accum)
            add("probe-llama-1b", "bf16", 1, 2048, "none", accum)
        add("probe-gpt-350m", "bf16", 1, 1024, "none", 8)
        add("probe-llama-1b", "bf16", 4, 2048, "full", 4)
        add("probe-gpt-350m", "fp32", 4, 1024, "none", 4)
        add("probe-llama-1b", "fp32", 1, 2048, "none", 4)
        for mbs in (8, 9, 10, 12):
            add("probe-llama-3b", "bf16", mbs, 2048)
        add("probe-gpt-350m", "bf16", 4, 1024, "none", 1, True)
        add("probe-gpt-350m", "bf16", 4, 1024, "none", 4, True)
        add("probe-llama-1b", "bf16", 4, 2048, "none", 1, True)
        return out

    for mbs in (1, 4, 16):
        add("probe-gpt-350m", "bf16", mbs, 1024)
    add("probe-gpt-350m", "bf16", 8, 2048)
    add("probe-gpt-350m", "bf16", 16, 1024, "full")
    for mbs in (2, 8):
        add("probe-gpt-760m", "bf16", mbs, 2048)
    add("probe-gpt-760m", "bf16", 8, 2048, "full")
    for mbs in (1, 4, 8):
        add("probe-llama-1b", "bf16", mbs, 2048)
    add("probe-llama-1b", "bf16", 2, 4096)
    add("probe-llama-1b", "bf16", 8, 2048, "full")
    add("probe-llama-1b", "bf16", 4, 2048, "none", 2)
    for mbs in (1, 2, 4):
        add("probe-llama-3b", "bf16", mbs, 2048)
    add("probe-llama-3b", "bf16", 8, 2048, "full")
    add("probe-gpt-350m", "fp32", 4, 1024)
    add("probe-gpt-350m", "fp32", 8, 1024)
    add("probe-llama-1b", "fp32", 2, 2048)
    for m in ("probe-gpt-tiny4", "probe-gpt-tiny16", "probe-llama-tiny4", "probe-llama-tiny16"):
        for rc in ("none", "full"):
            add(m, "bf16", 1, 32, rc)
    return out


def fp32_sdpa_backend():
    """Which SDPA backend runs fp32 causal attention here (flash has no fp32 kernel)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q = torch.randn(1, 16, 1024, 64, device="cuda", requires_grad=True)
    res = {}
    for name, be in [("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]:
        try:
            with sdpa_kernel([be]):
                F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().backward()
            res[name] = True
        except RuntimeError:
            res[name] = False
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=420, help="stop starting configurations after this")
    ap.add_argument("--only", default="", help="comma-separated substrings of configuration names")
    ap.add_argument("--set", default="base", choices=["base", "accum"],
                    help="base: the issue-38 set; accum: gradient accumulation, compile, fp32, memory limit")
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    prov = {"script": "scripts/gpu_train_probe.py", "date": datetime.date.today().isoformat(),
            "device": props.name, "total_memory_bytes": props.total_memory, "torch": torch.__version__,
            "cuda": torch.version.cuda, "python": sys.version.split()[0],
            "command": " ".join(sys.argv), "warmup_steps": args.warmup, "timed_steps": args.steps,
            "allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    try:
        prov["fp32_sdpa_backends_available"] = fp32_sdpa_backend()
    except Exception as e:  # older torch without torch.nn.attention
        prov["fp32_sdpa_backends_available"] = str(e)[:120]
    doc = {"_doc": __doc__.strip().splitlines()[0] + " Written by scripts/gpu_train_probe.py; compared with "
           "`strata estimate --engine pytorch` by `strata validate` (never fitted).", "provenance": prov, "rows": []}
    t0 = time.time()
    only = [s for s in args.only.split(",") if s]
    for cfg in configs(args.set):
        if only and not any(s in cfg["name"] for s in only):
            continue
        if time.time() - t0 > args.budget_s:
            print(f"budget reached; skipped {cfg['name']}", flush=True)
            continue
        r = run_config(cfg, MODELS, args)
        doc["rows"].append(r)
        with open(args.out, "w") as fh:
            json.dump(doc, fh, indent=1)
            fh.write("\n")
        if r["oom"]:
            print(f"{r['name']:<44} OOM", flush=True)
        else:
            print(f"{r['name']:<44} static {gib(r['static_bytes']):6.2f} peak {gib(r['peak_allocated_bytes']):6.2f} "
                  f"reserved {gib(r['peak_reserved_bytes']):6.2f} GiB  step {r['step_time_s'] * 1e3:8.1f} ms",
                  flush=True)
    print(f"total {time.time() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
