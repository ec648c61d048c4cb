#!/usr/bin/python3
# bench/bench_python: the Python API's latency (issue 21's target: import + one plan call on the AMP
# heterogeneous case <= 50 ms from a warm interpreter). Each run is a fresh Debian python3 that has already
# started (the clock starts after its own start-up), then `import strata` and one strata.plan(amp-gpt2,
# p3.8xlarge:3+g4dn.12xlarge:1, gbs=32); median and min over the runs. Also: one more plan call in the same warm
# process (import paid), and the `strata plan` binary's wall time for the same case. No assertion: a table.
#   bench/bench_python.py [--build BUILD_DIR] [--runs N]      (`make bench` runs the copy in <build>/bench)
import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

parser = argparse.ArgumentParser()
here = Path(__file__).resolve().parent
default_build = here.parent if (here.parent / "python" / "strata").is_dir() else here.parent / "build"
parser.add_argument("--build", default=str(default_build), help="build directory holding python/strata and bin/strata")
parser.add_argument("--runs", type=int, default=15)
args = parser.parse_args()
build = Path(args.build).resolve()
env = dict(os.environ, PYTHONPATH=str(build / "python"), PYTHONDONTWRITEBYTECODE="1")

CASE = ("amp-gpt2", "p3.8xlarge:3+g4dn.12xlarge:1", 32)
CHILD = f"""
import time
t0 = time.perf_counter()
import strata
t1 = time.perf_counter()
p = strata.plan(*{CASE!r})
t2 = time.perf_counter()
p = strata.plan(*{CASE!r})
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, p.best.strategy)
"""


def run_child():
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
    imp, first, second, _ = out.split(maxsplit=3)
    return float(imp), float(first), float(second)


def run_cli():
    t = time.perf_counter()
    subprocess.run([str(build / "bin" / "strata"), "plan", "--model", CASE[0], "--cluster", CASE[1], "--gbs",
                    str(CASE[2])], check=True, capture_output=True)
    return time.perf_counter() - t


runs = [run_child() for _ in range(args.runs)]
cli = [run_cli() for _ in range(args.runs)]
rows = [
    ("import strata", [r[0] for r in runs]),
    ("first plan call", [r[1] for r in runs]),
    ("import + first plan call", [r[0] + r[1] for r in runs]),
    ("plan call, module warm", [r[2] for r in runs]),
    ("`strata plan` binary (wall, incl. process start)", cli),
]
print(f"Python API latency, {CASE[0]} on {CASE[1]}, gbs {CASE[2]} ({args.runs} runs, {sys.executable})")
print(f"{'what':<50} {'median':>10} {'min':>10}")
for name, xs in rows:
    print(f"{name:<50} {1e3 * statistics.median(xs):>8.1f} ms {1e3 * min(xs):>7.1f} ms")
print("target (issue 21): import + one plan call <= 50 ms")
