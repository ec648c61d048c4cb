"""engine_check/check_megatron: runs Megatron-LM's own argument parser and validate_args (megatron/training/
arguments.py, at the commit the engines folder holds) on strata's exports. torch/triton/transformer_engine are
stubbed; the GPU architecture is the job's "arch" (get_device_arch_version(): 9 = Hopper and older, the default; 10 =
Blackwell, for plans on B200/B300/GB200/GB300). Usage: check_megatron.py ENGINE_DIR JOBS.json RESULTS.json"""
import json
import os
import shlex
import sys
import typing

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stubs  # noqa: E402

# The user appends these (strata's args file says so); validate_args needs a training length and a learning rate.
USER_FLAGS = ["--train-iters", "10", "--lr", "1e-4"]


def load(engine_dir):
    stubs.install(["torch", "triton", "transformer_engine"])
    stubs.install_modules(["numpy.dtypes"])  # Debian's numpy 1.24 predates it
    stubs.torch_basics()
    if not hasattr(typing, "override"):  # Python 3.12 API used by megatron/training/models (Debian 12: 3.11)
        typing.override = lambda f: f
    sys.path.insert(0, engine_dir)
    import megatron.training.arguments as arguments

    arguments.get_device_arch_version = lambda: 9
    return arguments


def launch_args(text):
    """The `local args=( ... )` block and the CUDA_DEVICE_MAX_CONNECTIONS setting of a strata launch script."""
    body = text.split("local args=(", 1)[1].split("\n  )", 1)[0]
    env = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("export CUDA_DEVICE_MAX_CONNECTIONS="):
            env = s.split("=", 1)[1].split()[0]
    return shlex.split(body, comments=True), env


def args_file(text):
    return shlex.split(text.replace("\\\n", " "), comments=True)  # backslash-newline continuations


def run_one(arguments, argv, env, world):
    os.environ["WORLD_SIZE"] = str(world)
    os.environ["RANK"] = "0"
    if env is None:
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
    else:
        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = env
    sys.argv = ["pretrain_gpt.py"] + argv + USER_FLAGS
    devnull = open(os.devnull, "w")
    saved = sys.stdout
    sys.stdout = devnull  # validate_args prints every argument
    try:
        args = arguments.parse_args()
        arguments.validate_args(args)
        return "accepted", f"dp={args.data_parallel_size}"
    except SystemExit as e:
        return "rejected", f"argparse exit {e.code}"
    except Exception as e:  # an assertion or error of validate_args is a rejection
        return "rejected", f"{type(e).__name__}: {e}".splitlines()[0][:300]
    finally:
        sys.stdout = saved
        devnull.close()


def main():
    engine_dir, jobs_path, out_path = sys.argv[1:4]
    arguments = load(engine_dir)
    results = []
    for job in json.load(open(jobs_path)):
        text = open(job["file"]).read()
        if job["kind"] == "launch":
            argv, env = launch_args(text)
        else:  # the args file is launched with the environment it states in its header
            argv, env = args_file(text), job.get("env")
        arch = int(job.get("arch", 9))
        arguments.get_device_arch_version = lambda: arch
        status, msg = run_one(arguments, argv, env, job["world"])
        results.append({"id": job["id"], "status": status, "message": msg})
    json.dump(results, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main()
