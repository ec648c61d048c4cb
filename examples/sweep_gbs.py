#!/usr/bin/env python3
# examples/sweep_gbs: notebook-style use of the Python API (docs/python.md) — sweep the global batch size and the
# number of GPUs, plan each point, and print (or plot, with --plot and matplotlib) the predicted throughput.
#   PYTHONPATH=build/python python3 examples/sweep_gbs.py [--quick] [--plot sweep.png]
# CI runs it with --quick (ctest python_example_sweep_gbs).
import argparse

import strata

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--model", default="amp-gpt2")
parser.add_argument("--node", default="p3.8xlarge", help="node preset; the sweep adds nodes of it")
parser.add_argument("--quick", action="store_true", help="fewer points (CI)")
parser.add_argument("--plot", metavar="PNG", help="also plot samples/s against GPUs per gbs (needs matplotlib)")
args = parser.parse_args()

model = strata.Model(args.model)
node_counts = [1, 2] if args.quick else [1, 2, 4, 8]
batch_sizes = [16, 32] if args.quick else [16, 32, 64, 128]

print(f"{model.name}: {model.params / 1e9:.2f} B parameters, seq {model.seq}")
print(f"{'gpus':>5} {'gbs':>5} {'samples/s':>10} {'TFLOP/s/GPU':>12} {'MFU':>6}  best strategy")
results = {}  # gbs -> [(gpus, samples/s)]
for nodes in node_counts:
    cluster = strata.Cluster(f"{args.node}:{nodes}")
    for gbs in batch_sizes:
        try:
            p = strata.plan(model, cluster, gbs, top=1)
        except strata.InputError as e:  # e.g. nothing fits, or gbs not divisible: say why and go on
            print(f"{cluster.num_devices:>5} {gbs:>5}  -- {e}")
            continue
        est = p.best.estimate
        results.setdefault(gbs, []).append((cluster.num_devices, est.samples_per_s))
        print(f"{cluster.num_devices:>5} {gbs:>5} {est.samples_per_s:>10.1f} {est.tflops_per_gpu:>12.1f} "
              f"{100 * est.mfu:>5.1f}%  {p.best.strategy}")

assert results, "no point of the sweep could be planned"
if args.plot:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for gbs, points in sorted(results.items()):
        plt.plot([g for g, _ in points], [s for _, s in points], marker="o", label=f"gbs {gbs}")
    plt.xlabel("GPUs")
    plt.ylabel("predicted samples/s")
    plt.title(f"{model.name} on {args.node} nodes (strata plan)")
    plt.legend()
    plt.savefig(args.plot)
    print(f"plot written to {args.plot}")
