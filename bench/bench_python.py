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
# Wall and CPU (time.process_time: robust to other load on the machine) of each step.
CHILD = f"""
import time
w0, c0 = time.perf_counter(), time.process_time()
import strata
w1, c1 = time.perf_counter(), time.process_time()
p = strata.plan(*{CASE!r})
w2, c2 = time.perf_counter(), time.process_time()
p = strata.plan(*{CASE!r})
w3, c3 = time.perf_counter(), time.process_time()
print(w1 - w0, w2 - w1, w3 - w2, c1 - c0, c2 - c1, c3 - c2, p.best.strategy)
"""


def run_child():
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True).stdout
    return [float(x) for x in out.split(maxsplit=6)[:6]]


def run_cli():
    t = time.perf_counter()
    subprocess.run([str(build / "bin" / "strata"), "plan", "--model", CASE[0], "--cluster", CASE[1], "--gbs",
                    str(CASE[2])], check=True, capture_output=True)
    return time.perf_counter() - t


runs = [run_child() for _ in range(args.runs)]
cli = [run_cli() for _ in range(args.runs)]
rows = [
    ("import strata", [r[0] for r in runs], [r[3] for r in runs]),
    ("first plan call", [r[1] for r in runs], [r[4] for r in runs]),
    ("import + first plan call", [r[0] + r[1] for r in runs], [r[3] + r[4] for r in runs]),
    ("plan call, module warm", [r[2] for r in runs], [r[5] for r in runs]),
    ("`strata plan` binary (incl. process start)", cli, None),
]
print(f"Python API latency, {CASE[0]} on {CASE[1]}, gbs {CASE[2]} ({args.runs} runs, {sys.executable}, "
      f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
print(f"{'what':<45} {'wall median':>12} {'wall min':>10} {'CPU median':>11}")
for name, wall, cpu in rows:
    cpu_text = f"{1e3 * statistics.median(cpu):>8.1f} ms" if cpu else f"{'-':>11}"
    print(f"{name:<45} {1e3 * statistics.median(wall):>9.1f} ms {1e3 * min(wall):>7.1f} ms {cpu_text}")
print("target (issue 21): import + one plan call <= 50 ms")
