"""engine_check/check_deepspeed: runs DeepSpeed's own config class (deepspeed/runtime/config.py DeepSpeedConfig:
every section's pydantic model, the batch identity train_batch_size = micro × grad_accum × dp) on strata's exports,
with the data-parallel size DeepSpeed itself would use: a PipelineModule's default topology
(runtime/pipe/topology.py PipeDataParallelTopology, dp = world / pp, built by module.py) as the mpu when the config
has pipeline stages, else the whole world size (no mpu). Also the PipelineEngine's ZeRO assertion
(runtime/pipe/engine.py). torch is stubbed; needs pydantic >= 2 (Debian 12 has 1.10: run it with a Python that
has pydantic 2; Debian's dist-packages are appended for packaging/yaml).
Usage: check_deepspeed.py ENGINE_DIR JOBS.json RESULTS.json"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.append("/usr/lib/python3/dist-packages")
import stubs  # noqa: E402

WORLD = [1]


class TopologyMpu:
    """The data-parallel size of a PipelineModule's topology, as DeepSpeed's engine passes it (model.mpu())."""

    def __init__(self, topo):
        self.topo = topo

    def get_data_parallel_world_size(self):
        return self.topo.get_dim("data")


def load(engine_dir):
    stubs.install(["torch", "triton", "cpuinfo", "psutil", "ninja", "hjson", "msgpack", "einops", "tqdm"])
    stubs.torch_basics()
    sys.path.insert(0, engine_dir)
    import deepspeed.comm as dist
    from deepspeed.runtime.config import DeepSpeedConfig
    from deepspeed.runtime.pipe.topology import PipeDataParallelTopology

    dist.get_rank = lambda group=None: 0
    dist.get_world_size = lambda group=None: WORLD[0]
    return DeepSpeedConfig, PipeDataParallelTopology


def check(job, DeepSpeedConfig, PipeDataParallelTopology):
    WORLD[0] = job["world"]
    cfg = json.load(open(job["file"]))
    stages = cfg.get("pipeline", {}).get("stages", 1)
    mpu = None
    if stages > 1:
        if job["world"] % stages != 0:
            return "rejected", "num_stages must divide distributed world size"
        mpu = TopologyMpu(PipeDataParallelTopology(num_pp=stages, num_dp=job["world"] // stages))
    c = DeepSpeedConfig(cfg, mpu=mpu)
    if stages > 1 and c.zero_optimization_stage >= 2:
        return "rejected", "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"
    return "accepted", f"world_size(dp)={c.world_size} ga={c.gradient_accumulation_steps}"


def main():
    engine_dir, jobs_path, out_path = sys.argv[1:4]
    classes = load(engine_dir)
    results = []
    for job in json.load(open(jobs_path)):
        try:
            status, msg = check(job, *classes)
        except Exception as e:  # an assertion, pydantic ValidationError, ... is a rejection
            status, msg = "rejected", f"{type(e).__name__}: {e}".splitlines()[0][:300]
        results.append({"id": job["id"], "status": status, "message": msg})
    json.dump(results, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
