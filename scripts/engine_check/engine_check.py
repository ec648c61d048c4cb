#!/usr/bin/env python3
"""engine_check: plans a matrix of (model, cluster) pairs with strata, exports every plan to every engine and runs
the engines' own parsers and validators (check_megatron.py, check_torchtitan.py, check_deepspeed.py) on the files,
at the commits extracted under ENGINES (megatron/, torchtitan-238fa995/, torchtitan-b5bcd76c/, deepspeed/; see
README.md). Each cell is accepted, rejected (by the engine) or refused (strata exit 2 naming the feature).
Usage: engine_check.py --strata build/bin/strata --engines /tmp/engines --out /tmp/engine_check"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# (model, cluster, global batch): dense Llama/GPT/MPT shapes, 8-1024 GPUs, A100, H100 and mixed clusters.
MATRIX = [
    ("llama3-8b", "dgx-a100:1", 64),
    ("llama3-8b", "dgx-h100:2", 128),
    ("llama3-8b", "dgx-a100:2+dgx-h100:2", 256),
    ("llama3-70b", "dgx-h100:8", 512),
    ("llama3-70b", "dgx-a100:16", 512),
    ("llama3-405b", "dgx-h100:64", 1024),
    ("llama3-405b", "dgx-h100:128", 2048),
    ("llama2-7b", "dgx-a100:4", 256),
    ("llama2-13b", "dgx-h100:16", 512),
    ("llama2-70b", "dgx-a100:8+dgx-h100:8", 512),
    ("gpt3-175b", "dgx-a100:128", 1536),
    ("gpt2-xl", "dgx-a100:1", 64),
    ("mpt-7b", "dgx-h100:4", 256),
    ("mpt-13b", "dgx-a100:2+dgx-h100:2", 256),
]
# export target -> (checker, era)
TARGETS = {"megatron": "megatron", "torchrun": "megatron", "torchtitan": "toml", "torchtitan-py": "py",
           "deepspeed": "deepspeed"}
# plan --engine NAME for each target, when this strata has --engine (the engine-profile work of issue 37).
PLAN_ENGINE = {"megatron": "megatron", "torchrun": "megatron", "torchtitan": "torchtitan-toml",
               "torchtitan-py": "torchtitan", "deepspeed": "deepspeed"}


def world_of(cluster):
    return sum(8 * int(part.split(":")[1]) for part in cluster.split("+"))  # dgx-* nodes have 8 GPUs


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def export_cell(a, model, cluster, gbs, target, cell_dir, has_engine):
    plan = os.path.join(cell_dir, f"plan_{PLAN_ENGINE[target]}.json" if has_engine else "plan.json")
    if not os.path.exists(plan):
        cmd = [a.strata, "plan", "--model", model, "--cluster", cluster, "--gbs", str(gbs), "--json", plan]
        if has_engine:
            cmd += ["--engine", PLAN_ENGINE[target]]
        p = run(cmd)
        if p.returncode != 0:
            return {"status": "refused" if p.returncode == 2 else "error", "message": (p.stderr or p.stdout).strip()[-300:]}
    out = os.path.join(cell_dir, target)
    p = run([a.strata, "export", "--plan", plan, "--to", target, "--out", out] + (["--closest"] if a.closest else []))
    if p.returncode == 2:
        return {"status": "refused", "message": p.stderr.strip().splitlines()[-1][:300]}
    if p.returncode != 0:
        return {"status": "error", "message": (p.stderr or p.stdout).strip()[-300:]}
    files = [os.path.join(out, f) for f in os.listdir(out)]
    closest = "closest" in p.stdout
    return {"status": "exported", "file": files[0], "closest": closest}


def megatron_env(path):
    for line in open(path):
        if "Launch with CUDA_DEVICE_MAX_CONNECTIONS=" in line:
            return line.split("CUDA_DEVICE_MAX_CONNECTIONS=")[1].split()[0]
    return None


def run_checker(a, checker, jobs):
    if not jobs:
        return {}
    jobs_path = os.path.join(a.out, f"jobs_{checker}.json")
    res_path = os.path.join(a.out, f"results_{checker}.json")
    json.dump(jobs, open(jobs_path, "w"), indent=1)
    py = a.python_deepspeed if checker == "deepspeed" else a.python
    cmd = {"megatron": [py, f"{HERE}/check_megatron.py", f"{a.engines}/megatron"],
           "toml": [py, f"{HERE}/check_torchtitan.py", f"{a.engines}/torchtitan-238fa995", "toml"],
           "py": [py, f"{HERE}/check_torchtitan.py", f"{a.engines}/torchtitan-b5bcd76c", "py"],
           "deepspeed": [py, f"{HERE}/check_deepspeed.py", f"{a.engines}/deepspeed"]}[checker]
    p = run(cmd + [jobs_path, res_path])
    if p.returncode != 0:
        sys.exit(f"engine_check: {checker} checker failed:\n{p.stderr[-3000:]}")
    return {r["id"]: r for r in json.load(open(res_path))}


def table(cells, targets):
    lines = ["| model | cluster | GPUs | " + " | ".join(targets) + " |", "|---|---|---|" + "---|" * len(targets)]
    for (model, cluster, _gbs), row in cells:
        marks = []
        for t in targets:
            r = row[t]
            mark = r["status"] + ("*" if r.get("closest") else "")
            marks.append(mark)
        lines.append(f"| {model} | {cluster} | {world_of(cluster)} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--strata", required=True)
    ap.add_argument("--engines", required=True, help="folder with the extracted engine sources")
    ap.add_argument("--out", required=True)
    ap.add_argument("--python", default="/usr/bin/python3", help="Debian Python for Megatron and torchtitan")
    ap.add_argument("--python-deepspeed", default="python3", help="a Python with pydantic >= 2")
    ap.add_argument("--no-closest", dest="closest", action="store_false", help="export without --closest")
    ap.add_argument("--only", default="", help="comma-separated row numbers (0-based) to run")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    has_engine = "--engine" in run([a.strata, "plan", "--help"]).stdout
    rows = [r for i, r in enumerate(MATRIX) if not a.only or str(i) in a.only.split(",")]
    targets = list(TARGETS)
    cells, jobs = [], {c: [] for c in set(TARGETS.values())}
    for model, cluster, gbs in rows:
        cell_dir = os.path.join(a.out, f"{model}_{cluster.replace(':', '').replace('+', '_')}")
        os.makedirs(cell_dir, exist_ok=True)
        row = {}
        for t in targets:
            r = export_cell(a, model, cluster, gbs, t, cell_dir, has_engine)
            r["id"] = f"{cell_dir}|{t}"
            row[t] = r
            if r["status"] == "exported":
                job = {"id": r["id"], "file": r["file"], "world": world_of(cluster),
                       "kind": "launch" if t == "torchrun" else "args"}
                if t == "megatron":
                    job["env"] = megatron_env(r["file"])
                jobs[TARGETS[t]].append(job)
        cells.append(((model, cluster, gbs), row))
    verdicts = {}
    for checker, js in jobs.items():
        verdicts.update(run_checker(a, checker, js))
    for _key, row in cells:
        for t in targets:
            if row[t]["status"] == "exported":
                v = verdicts[row[t]["id"]]
                row[t]["status"], row[t]["message"] = v["status"], v["message"]
    md = table(cells, targets)
    counts = {}
    for _k, row in cells:
        for t in targets:
            counts[row[t]["status"]] = counts.get(row[t]["status"], 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    print(md + "\n\n" + summary + ("  (* = written by export --closest)" if a.closest else ""))
    for (model, cluster, _g), row in cells:
        for t in targets:
            if row[t]["status"] in ("rejected", "error", "refused"):
                print(f"  {model} {cluster} {t}: {row[t]['status']}: {row[t].get('message', '')}")
    json.dump([{"model": k[0], "cluster": k[1], "gbs": k[2], "cells": r} for k, r in cells],
              open(os.path.join(a.out, "matrix.json"), "w"), indent=1)
    bad = counts.get("rejected", 0) + counts.get("error", 0)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
