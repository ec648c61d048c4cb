"""engine_check/check_torchtitan: runs torchtitan's own config loading and start-up checks on strata's exports.
TOML era (238fa995): ConfigManager's TOML reader and dataclass conversion (config/manager.py), ParallelDims
validation (distributed/parallel_dims.py), the model registry (models/llama3 llama3_args), the batch assertions of
train.py, the pipeline microbatch check of distributed/pipeline_parallel.py, the DDP branch of
models/llama3/infra/parallelize.py and maybe_enable_amp (distributed/utils.py: a config that asks for bfloat16 but
trains in fp32 is rejected). Current format (b5bcd76c): the exported module is imported and strata_plan() run
against torchtitan's own Trainer.Config (its __post_init__ checks), then ParallelDims and the token-batch checks of
trainer.py. torch/tyro and data libraries are stubbed; the GPU is pinned to Hopper (capability 9.0). Usage: check_torchtitan.py ENGINE_DIR toml|py JOBS RESULTS"""
import contextlib
import importlib.util
import json
import os
import re
import sys
import typing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stubs  # noqa: E402

STUBBED = ["torch", "triton", "tyro", "torchdata", "datasets", "tokenizers", "safetensors", "fsspec", "tensorboard",
           "wandb", "torchao", "huggingface_hub", "transformers", "tiktoken", "blobfile", "grain", "rich", "einops",
           "psutil", "spmd_types", "torchft", "pyarrow", "PIL"]


def load(engine_dir):
    stubs.install(STUBBED)
    torch = stubs.torch_basics()
    # A Hopper GPU (SM 9.0), as the matrix's clusters have: recipes that check the capability (float8) see one.
    torch.cuda.is_available = lambda: True
    torch.cuda.get_device_capability = lambda *a: (9, 0)
    torch.version.hip = None
    if not hasattr(typing, "override"):
        typing.override = lambda f: f
    sys.path.insert(0, engine_dir)


def check_toml(job):
    from torchtitan.config.job_config import JobConfig
    from torchtitan.config.manager import ConfigManager
    from torchtitan.distributed.parallel_dims import ParallelDims
    from torchtitan.distributed.utils import maybe_enable_amp
    from torchtitan.models.llama3 import llama3_args

    cm = ConfigManager()
    data = cm._maybe_load_toml(["--job.config_file", job["file"]])
    cm.config = cfg = cm._dict_to_dataclass(JobConfig, data)
    cm._validate_config()
    if cfg.model.name != "llama3" or cfg.model.flavor not in llama3_args:
        return "rejected", f"model {cfg.model.name}/{cfg.model.flavor} is not registered"
    p = cfg.parallelism
    dims = ParallelDims(dp_shard=p.data_parallel_shard_degree, dp_replicate=p.data_parallel_replicate_degree,
                        cp=p.context_parallel_degree, tp=p.tensor_parallel_degree, pp=p.pipeline_parallel_degree,
                        ep=p.expert_parallel_degree, etp=p.expert_tensor_parallel_degree, world_size=job["world"])
    # models/llama3/infra/parallelize.py: DDP only when the replicate mesh is the whole world.
    if not dims.fsdp_enabled and dims.dp_replicate_enabled and dims.dp_replicate != dims.world_size:
        return "rejected", "RuntimeError: DDP has not supported > 1D parallelism"
    amp = maybe_enable_amp(dims, cfg.training.mixed_precision_param, "cuda")
    if isinstance(amp, contextlib.nullcontext) and not dims.fsdp_enabled and \
            cfg.training.mixed_precision_param != "float32":
        return "rejected", "mixed precision disabled (TP/PP without FSDP): trains fp32, config says bfloat16"
    batch_degree = dims.dp_replicate * dims.dp_shard  # the "batch" mesh (parallel_dims.py build_mesh)
    gbs = cfg.training.global_batch_size
    gbs = cfg.training.local_batch_size * batch_degree if gbs < 0 else gbs
    if gbs % (cfg.training.local_batch_size * batch_degree) != 0:  # train.py batch assertion
        return "rejected", "global batch size must be multiple of local batch size times data-parallel degree"
    if dims.pp > 1:
        if cfg.training.local_batch_size % p.pipeline_parallel_microbatch_size != 0:
            return "rejected", "Batch size must be divisible by microbatch_size"
        n_layers = llama3_args[cfg.model.flavor].n_layers
        names = {"tok_embeddings", "norm", "output"} | {f"layers.{i}" for i in range(n_layers)}
        listed = [n for part in (p.module_fqns_per_model_part or []) for n in part]
        if listed and (set(listed) != names or len(listed) != len(names)):
            return "rejected", "module_fqns_per_model_part does not list each module once"
    return "accepted", f"dp_replicate={dims.dp_replicate} dp_shard={dims.dp_shard} ga={gbs // (cfg.training.local_batch_size * batch_degree)}"


def check_py(job):
    from torchtitan.distributed.parallel_dims import ParallelDims
    from torchtitan.models.llama3 import llama3_configs

    spec = importlib.util.spec_from_file_location(f"strata_plan_{job['id']}", job["file"])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    cfg = mod.strata_plan()  # runs Trainer.Config.__post_init__ through dataclasses.replace
    if cfg.model_spec.flavor not in llama3_configs:
        return "rejected", f"flavor {cfg.model_spec.flavor} is not registered"
    from torchtitan.models.llama3 import model_registry

    def shape(model):  # the model config's repr without object addresses (its init functions are closures)
        return re.sub(r" at 0x[0-9a-f]+", "", repr(model))

    if shape(cfg.model_spec.model) != shape(model_registry(cfg.model_spec.flavor).model):  # e.g. float8 converters
        return "rejected", "the model differs from the plain flavor (a recipe converted it)"
    p, t = cfg.parallelism, cfg.training
    dims = ParallelDims(dp_shard=p.data_parallel_shard_degree, dp_replicate=p.data_parallel_replicate_degree,
                        cp=p.context_parallel_degree, tp=p.tensor_parallel_degree, pp=p.pipeline_parallel_degree,
                        ep=p.expert_parallel_degree, world_size=job["world"])
    # trainer.py: tokens per dp rank = microbatch tokens × pp microbatches; the step must be a multiple.
    n_pp = p.num_pp_microbatches if dims.pp > 1 else 1
    per_rank = t.num_tokens_per_microbatch_per_dp_rank * n_pp
    dp_degree = dims.dp_replicate * dims.dp_shard
    step = t.num_tokens_per_train_step if t.num_tokens_per_train_step > 0 else per_rank * dp_degree
    if step % (per_rank * dp_degree) != 0:
        return "rejected", "num_tokens_per_train_step not divisible by tokens per dp rank × dp degree"
    if t.num_tokens_per_microbatch_per_dp_rank % t.max_context_length != 0:
        return "rejected", "microbatch tokens are not whole sequences"
    return "accepted", f"dp_shard={dims.dp_shard} ga={step // (per_rank * dp_degree)}"


def main():
    engine_dir, era, jobs_path, out_path = sys.argv[1:5]
    load(engine_dir)
    results = []
    for job in json.load(open(jobs_path)):
        try:
            status, msg = (check_toml if era == "toml" else check_py)(job)
        except (AssertionError, ValueError, TypeError, RuntimeError, KeyError, AttributeError) as e:
            status, msg = "rejected", f"{type(e).__name__}: {e}".splitlines()[0][:300]
        results.append({"id": job["id"], "status": status, "message": msg})
    json.dump(results, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
