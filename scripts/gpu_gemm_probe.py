#!/usr/bin/env python3
# scripts/gpu_gemm_probe: times the GEMMs a Mixture-of-Experts layer runs — one expert's up/down projection at the
# small token counts each expert receives, and the same work as one grouped GEMM over all local experts — on one CUDA
# GPU, as data/calibration/gpu_gemm_<gpu>.json (issue 51 item 3: "price the GEMM efficiency at that size").
"""Expert-GEMM probe.

Per (shape, tokens per expert): a bf16 torch.matmul of a [tokens, k] activation by a [k, n] weight, forward only;
CUDA events around `reps` back-to-back calls after warm-ups, median of `trials` such batches divided by `reps`.
Achieved TFLOP/s = 2*tokens*k*n / time. Where this PyTorch has torch._grouped_mm, the same shape over `experts`
local experts as one grouped call (offsets of equal groups). Shapes are the expert FFNs of published MoE configs
(hidden -> expert ffn and back): DeepSeek-V3 7168x2048, Qwen3-30B-A3B 2048x768, Qwen3-235B-A22B 4096x1536,
Mixtral-8x7B 4096x14336, GPT-OSS-120B 2880x2880.
"""
import argparse
import datetime
import json
import statistics
import sys

import torch

SHAPES = {"deepseek-v3": (7168, 2048), "qwen3-30b-a3b": (2048, 768), "qwen3-235b-a22b": (4096, 1536),
          "mixtral-8x7b": (4096, 14336), "gpt-oss-120b": (2880, 2880)}
TOKENS = (32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)


def timed(fn, reps, trials):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(trials):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        torch.cuda.synchronize()
        out.append(e0.elapsed_time(e1) / 1e3 / reps)
    return statistics.median(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--experts", type=int, default=8)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    dev = torch.device("cuda")
    grouped = hasattr(torch, "_grouped_mm")
    doc = {"_doc": __doc__.strip().splitlines()[0] + " Written by scripts/gpu_gemm_probe.py (measured, never fitted "
           "to other published figures).",
           "provenance": {"script": "scripts/gpu_gemm_probe.py", "date": datetime.date.today().isoformat(),
                          "device": props.name, "torch": torch.__version__, "cuda": torch.version.cuda,
                          "python": sys.version.split()[0], "command": " ".join(sys.argv), "reps": args.reps,
                          "trials": args.trials, "grouped_mm_available": grouped, "dtype": "bf16"},
           "rows": []}
    for model, (h, f) in SHAPES.items():
        for k, n, proj in ((h, f, "up"), (f, h, "down")):
            w = torch.randn(k, n, device=dev, dtype=torch.bfloat16)
            wg = torch.randn(args.experts, k, n, device=dev, dtype=torch.bfloat16) if grouped else None
            for t in TOKENS:
                x = torch.randn(t, k, device=dev, dtype=torch.bfloat16)
                s = timed(lambda: torch.matmul(x, w), args.reps, args.trials)
                row = {"model": model, "proj": proj, "k": k, "n": n, "tokens": t, "time_s": s,
                       "tflops": 2 * t * k * n / s / 1e12}
                if grouped:
                    xg = torch.randn(args.experts * t, k, device=dev, dtype=torch.bfloat16)
                    offs = torch.arange(1, args.experts + 1, device=dev, dtype=torch.int32) * t
                    try:
                        sg = timed(lambda: torch._grouped_mm(xg, wg, offs=offs), args.reps, args.trials)
                        row.update(grouped_experts=args.experts, grouped_time_s=sg,
                                   grouped_tflops=2 * args.experts * t * k * n / sg / 1e12)
                    except Exception as e:  # noqa: BLE001 - the kernel's own refusal is the data point
                        row["grouped_error"] = str(e).splitlines()[0][:160]
                doc["rows"].append(row)
                print(f"{model:<16} {proj:<4} {k:>6}x{n:<6} tokens {t:>6}: {row['tflops']:7.1f} TFLOP/s"
                      + (f"  grouped {row['grouped_tflops']:7.1f}" if "grouped_tflops" in row else ""), flush=True)
                del x
            del w, wg
    with open(args.out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")


if __name__ == "__main__":
    main()
