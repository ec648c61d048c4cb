# tests/python/test_api: the Python API (python/, docs/python.md) against the CLI — every result's to_dict()
# equals the matching command's --json for the same inputs (several models, clusters and strategies), bad input
# raises strata.InputError with the CLI's one-line message, a plan round-trips through to_dict()/estimate, and
# help() teaches.
import json
import pydoc
import subprocess
import sys
import threading

import pytest

import strata

AMP_CLUSTER = "p3.8xlarge:3+g4dn.12xlarge:1"

ESTIMATE_CASES = [
    ("gpt3-175b", "dgx-a100:8", "tp=8,pp=8,mbs=1,gbs=64,v=3,recompute=selective,sp=on"),
    ("amp-gpt2", AMP_CLUSTER, "dp=2,tp=2,pp=4,mbs=2,gbs=32"),
    ("gpt3-175b", "dgx-a100:16+dgx-h100:16", "tp=8,pp=16,mbs=1,gbs=1536,zero=1,recompute=full"),
    ("examples/model_custom_transformer.json", "examples/cluster_heterogeneous.json", "tp=2,pp=2,mbs=1,gbs=64,zero=3"),
    ("amp-gpt2", AMP_CLUSTER, "dp=16,mbs=1,gbs=32"),  # may not fit: not_fit_reason compared too
]


# ---- catalog -----------------------------------------------------------------------------------------------------
def test_catalog_listings_equal_cli(cli_json):
    assert strata.models() == cli_json("models", "--json")
    assert strata.hardware() == cli_json("hardware", "--json")
    assert strata.clusters() == cli_json("clusters", "--json")


@pytest.mark.parametrize("spec", [AMP_CLUSTER, "dgx-a100:2", "examples/cluster_heterogeneous.json"])
def test_cluster_to_dict_equals_clusters_show(cli_json, spec):
    c = strata.Cluster.parse(spec)
    assert c.to_dict() == cli_json("clusters", "--show", spec, "--json")
    assert c.num_devices == c.to_dict()["num_devices"]


def test_model_constructors_agree(example):
    by_name = strata.Model("amp-gpt2")
    assert strata.Model.from_zoo("amp-gpt2").to_dict() == by_name.to_dict()
    assert by_name.to_dict() in strata.models()
    from_file = strata.Model.from_file(example("model_custom_transformer.json"))
    with open(example("model_custom_transformer.json")) as f:
        from_dict = strata.Model.from_dict(json.load(f))
    assert from_file.params == from_dict.params > 1e9
    assert by_name.with_seq(512).seq == 512


def test_cluster_from_dict_equals_file(example):
    with open(example("cluster_heterogeneous.json")) as f:
        d = json.load(f)
    assert strata.Cluster.from_dict(d).to_dict() == strata.Cluster.from_file(example("cluster_heterogeneous.json")).to_dict()


# ---- estimate ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("model,cluster,strategy", ESTIMATE_CASES)
def test_estimate_equals_cli_json(cli, model, cluster, strategy):
    code, out, err = cli("estimate", "--model", model, "--cluster", cluster, "--strategy", strategy, "--json")
    assert code == 0, err
    e = strata.estimate(model, cluster, strategy)
    assert e.to_dict() == json.loads(out)
    assert e.to_json() + "\n" == out  # byte for byte
    assert e.iteration_time_s == json.loads(out)["iteration_time_s"]


def test_estimate_accepts_objects_and_dicts():
    m, c = strata.Model("amp-gpt2"), strata.Cluster(AMP_CLUSTER)
    s = strata.Strategy("dp=2,tp=2,pp=4,mbs=2,gbs=32")
    by_text = strata.estimate("amp-gpt2", AMP_CLUSTER, str(s))
    by_obj = strata.estimate(m, c, s)
    by_dict = strata.estimate(m, c, s.to_dict())
    assert by_text.to_dict() == by_obj.to_dict() == by_dict.to_dict()
    assert by_obj.strategy == s.complete(m, c)


def test_estimate_options_equal_cli(cli_json):
    args = ("--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--strategy", "dp=4,pp=4,mbs=1,gbs=32", "--seq", "512",
            "--memory-headroom", "10%")
    e = strata.estimate("amp-gpt2", AMP_CLUSTER, "dp=4,pp=4,mbs=1,gbs=32", seq=512, memory_headroom="10%")
    assert e.to_dict() == cli_json("estimate", *args, "--json")


# ---- plan --------------------------------------------------------------------------------------------------------
def plan_dict(d):
    d = dict(d)
    d.pop("search_time_s")  # wall-clock time of the search: the one field two runs do not share
    return d


@pytest.mark.parametrize("model,cluster,gbs,extra", [
    ("amp-gpt2", AMP_CLUSTER, 32, {}),
    ("amp-gpt2", AMP_CLUSTER, 32, {"space": "3d", "placement": "megatron", "top": 3}),
    ("bert-large", "dgx-a100:2", 256, {"dtype": "fp16", "max_tp": 2}),
])
def test_plan_equals_cli_json(cli_json, model, cluster, gbs, extra):
    flags = []
    for k, v in extra.items():
        flags += ["--" + k.replace("_", "-"), str(v)]
    expected = cli_json("plan", "--model", model, "--cluster", cluster, "--gbs", str(gbs), *flags, "--json", "-")
    p = strata.plan(model, cluster, gbs, **extra)
    assert plan_dict(p.to_dict()) == plan_dict(expected)
    assert p.best.estimate.to_dict()["iteration_time_s"] == expected["best"]["estimate"]["iteration_time_s"]
    assert len(p.candidates) == len(expected["candidates"])


def test_plan_round_trips_through_to_dict_and_estimate(cli_json, tmp_path):
    p = strata.plan("amp-gpt2", AMP_CLUSTER, 32)
    d = p.to_dict()
    # the dict's best strategy, read back, is the plan's best strategy and costs the same
    assert strata.Strategy.from_dict(d) == p.best.strategy
    again = strata.estimate(d["model"], d["cluster"], d)
    assert again.to_dict() == p.best.estimate.to_dict()
    assert strata.estimate(p.model, p.cluster, p).to_dict() == p.best.estimate.to_dict()
    # the plan file the CLI reads back gives the same estimate
    f = tmp_path / "plan.json"
    f.write_text(p.to_json() + "\n")
    assert cli_json("estimate", "--strategy-file", str(f), "--json") == again.to_dict()
    assert json.loads(p.to_json()) == d


def test_plan_file_embeds_file_and_dict_definitions_as_the_cli(cli_json, example, tmp_path):
    # A plan from model and cluster files embeds their definitions, as `strata plan --json` does (plan::
    # input_definitions), so the plan file is read back after the files are gone; a dict is its own definition.
    model, cluster = example("model_custom_transformer.json"), example("cluster_heterogeneous.json")
    expected = cli_json("plan", "--model", model, "--cluster", cluster, "--gbs", "64", "--top", "2", "--json", "-")
    p = strata.plan(model, cluster, 64, top=2)
    d = p.to_dict()
    assert d["model_definition"] == expected["model_definition"]
    assert d["cluster_definition"] == expected["cluster_definition"]
    assert plan_dict(d) == plan_dict(expected)
    with open(model) as f:
        model_dict = json.load(f)
    with open(cluster) as f:
        cluster_dict = json.load(f)
    q = strata.plan(model_dict, cluster_dict, 64, top=2).to_dict()
    assert q["model_definition"] == expected["model_definition"]
    assert q["cluster_definition"] == expected["cluster_definition"]
    # Read back with neither --model nor --cluster: the embedded definitions are enough.
    f = tmp_path / "plan.json"
    f.write_text(p.to_json() + "\n")
    sim = cli_json("simulate", "--plan", str(f), "--json")
    assert sim["iteration_time_s"] > 0
    # Built-in names embed nothing.
    assert "model_definition" not in strata.plan("amp-gpt2", AMP_CLUSTER, 32, top=1).to_dict()


def test_plan_explain_and_baselines():
    p = strata.plan("amp-gpt2", AMP_CLUSTER, 32)
    text = p.explain()
    assert text.startswith("Why this plan:\n") and "Baselines:" in text
    assert all(line in text for line in p.explanation)
    names = [b.name for b in p.baselines]
    assert "megatron" in names
    for b in p.baselines:
        assert (b.estimate is None) == (not b.found)
        if b.found:
            assert b.estimate.iteration_time_s >= p.best.estimate.iteration_time_s * (1 - 1e-12)


def test_plan_progress_callback_and_cancel():
    seen = []
    strata.plan("amp-gpt2", AMP_CLUSTER, 32, progress=lambda done, total: seen.append((done, total)))
    # (configurations visited, total) between batches; the search may stop early once the bound prunes the rest
    assert seen and all(0 < d <= t for d, t in seen) and len({t for _, t in seen}) == 1
    assert [d for d, _ in seen] == sorted({d for d, _ in seen})

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop()

    with pytest.raises(Stop):
        strata.plan("amp-gpt2", AMP_CLUSTER, 32, progress=stop)


def test_plan_runs_in_threads():
    # The GIL is released during the search: plans in threads give the same answer as one in the main thread.
    ref = strata.plan("amp-gpt2", AMP_CLUSTER, 32).best.strategy
    out = [None] * 3

    def work(i):
        out[i] = strata.plan("amp-gpt2", AMP_CLUSTER, 32).best.strategy

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == [ref] * 3


# ---- simulate, export, allocate ----------------------------------------------------------------------------------
@pytest.mark.parametrize("model,cluster,strategy", ESTIMATE_CASES[:2] + [
    ("amp-gpt2", AMP_CLUSTER, "dp=2,pp=8,mbs=1,gbs=32,schedule=gpipe"),
])
def test_simulate_equals_cli_json(cli_json, model, cluster, strategy):
    expected = cli_json("simulate", "--model", model, "--cluster", cluster, "--strategy", strategy, "--json")
    assert strata.simulate(model, cluster, strategy).to_dict() == expected


def test_simulate_plan_equals_cli_plan_file(cli_json, tmp_path):
    p = strata.plan("amp-gpt2", AMP_CLUSTER, 32)
    f = tmp_path / "plan.json"
    f.write_text(p.to_json() + "\n")
    assert strata.simulate(p, iterations=2).to_dict() == cli_json("simulate", "--plan", str(f), "--iterations", "2",
                                                                   "--json")


@pytest.mark.parametrize("engine", ["megatron", "deepspeed", "torchrun"])
def test_export_equals_cli(cli, tmp_path, engine):
    p = strata.plan("megatron-1.7b", "dgx-a100:2", 64)
    f = tmp_path / "plan.json"
    f.write_text(p.to_json() + "\n")
    code, out, err = cli("export", "--plan", str(f), "--to", engine)
    if code == 0:
        exported = strata.export(p, to=engine)
        assert exported.text == out and exported.engine == engine
        assert strata.export(p.to_dict(), to=engine).text == out
    else:  # the engine cannot express the plan: the same message
        with pytest.raises(strata.InputError) as e:
            strata.export(p, to=engine)
        assert str(e.value) == err.removeprefix("strata: error: ").rstrip("\n")


def test_import_does_not_load_the_scheduler():
    # strata.allocate lives in strata._strata_sched (COIN-OR): loaded on first use, not by `import strata`.
    code = "import sys, strata; a = 'strata._strata_sched' in sys.modules; strata.allocate; print(a, 'strata._strata_sched' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_allocate_equals_cli_json(cli_json, example):
    path = example("sched_throughputs.json")
    for policy in ["max-min-fairness", "max-throughput", "max-min-fairness-agnostic"]:
        a = strata.allocate(path, policy)
        assert a.to_dict() == cli_json("allocate", "--throughputs", path, "--policy", policy, "--json")
    with open(path) as f:
        assert strata.allocate(json.load(f)).to_dict() == strata.allocate(path).to_dict()


# ---- errors and docs ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,args", [
    (lambda: strata.estimate("gpt-9000", "dgx-a100:1", "gbs=8"),
     ("estimate", "--model", "gpt-9000", "--cluster", "dgx-a100:1", "--strategy", "gbs=8")),
    (lambda: strata.estimate("amp-gpt2", "dgx-a100:x", "gbs=8"),
     ("estimate", "--model", "amp-gpt2", "--cluster", "dgx-a100:x", "--strategy", "gbs=8")),
    (lambda: strata.estimate("amp-gpt2", AMP_CLUSTER, "tp=3,gbs=32"),
     ("estimate", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--strategy", "tp=3,gbs=32")),
    (lambda: strata.estimate("amp-gpt2", AMP_CLUSTER, "dp=2,tp=2,pp=4,gbs=33"),
     ("estimate", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--strategy", "dp=2,tp=2,pp=4,gbs=33")),
    (lambda: strata.plan("amp-gpt2", AMP_CLUSTER, 0),
     ("plan", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--gbs", "0")),
    (lambda: strata.plan("amp-gpt2", AMP_CLUSTER, 32, space="4d"),
     ("plan", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--gbs", "32", "--space", "4d")),
    (lambda: strata.plan("amp-gpt2", AMP_CLUSTER, 32, dtype="fp4"),
     ("plan", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--gbs", "32", "--dtype", "fp4")),
    (lambda: strata.plan("amp-gpt2", AMP_CLUSTER, 32, threads=0),
     ("plan", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--gbs", "32", "--threads", "0")),
    (lambda: strata.simulate("amp-gpt2", AMP_CLUSTER, "dp=16,gbs=32", iterations=0),
     ("simulate", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--strategy", "dp=16,gbs=32", "--iterations", "0")),
    (lambda: strata.allocate("examples/sched_throughputs.json", "fastest"),
     ("allocate", "--throughputs", "examples/sched_throughputs.json", "--policy", "fastest")),
])
def test_bad_input_raises_input_error_with_cli_message(cli_error, call, args, monkeypatch):
    monkeypatch.chdir(strata_source_dir())
    with pytest.raises(strata.InputError) as e:
        call()
    assert isinstance(e.value, ValueError)
    assert str(e.value) == cli_error(*args)


def strata_source_dir():
    from conftest import SOURCE_DIR
    return SOURCE_DIR


def test_wrong_argument_types_are_input_errors():
    with pytest.raises(strata.InputError, match="model"):
        strata.estimate(42, AMP_CLUSTER, "gbs=32")
    with pytest.raises(strata.InputError, match="strategy"):
        strata.estimate("amp-gpt2", AMP_CLUSTER, 3.5)
    with pytest.raises(strata.InputError, match="cannot be read as JSON"):
        strata.Model.from_dict({"name": object()})


def test_help_teaches():
    doc = pydoc.render_doc(strata.plan)
    for word in ["gbs", "space", "placement", "progress", "InputError", "Example", "--max-tp"]:
        assert word in doc, word
    assert "plan(model" in doc  # the signature
    for f in [strata.estimate, strata.simulate, strata.export, strata.allocate, strata.models]:
        assert len(f.__doc__) > 80
    assert strata.InputError.__module__ == "strata"


def test_stub_matches_module():
    # python/strata/__init__.pyi names exactly what the module has: every class, method, property and function.
    import ast
    from pathlib import Path

    stub = ast.parse((Path(strata.__file__).parent / "__init__.pyi").read_text())
    public = set()
    for node in stub.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            public.add(node.name)
            obj = getattr(strata, node.name)
            if isinstance(node, ast.ClassDef):
                members = [n.name for n in node.body if isinstance(n, ast.FunctionDef)]
                members += [n.target.id for n in node.body if isinstance(n, ast.AnnAssign)]
                for m in members:
                    assert hasattr(obj, m), f"{node.name}.{m}"
    assert public == set(strata.__all__)


# ---- an explicit key wins over the engine's trait (issue 46 item 3), as on the CLI ----------------------------
def test_explicit_key_wins_over_engine_trait_and_is_refused_where_the_engine_cannot(cli_error):
    base = ("llama3-8b", "dgx-h100:1", "dp=8,mbs=1,gbs=8")
    eager = strata.estimate(*base, engine="pytorch").iteration_time_s
    fused = strata.estimate(*base, engine="pytorch", elementwise="fused").iteration_time_s
    assert fused < eager
    assert strata.estimate("llama3-8b", "dgx-h100:1", "dp=8,mbs=1,gbs=8,elementwise=fused",
                           engine="pytorch").iteration_time_s == fused
    with pytest.raises(strata.InputError) as e:
        strata.estimate(*base, engine="megatron", elementwise="eager")
    assert str(e.value) == cli_error("estimate", "--model", "llama3-8b", "--cluster", "dgx-h100:1", "--engine",
                                     "megatron", "--strategy", "dp=8,mbs=1,gbs=8,elementwise=eager")
