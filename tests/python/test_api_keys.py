# tests/python/test_api_keys: the strategy-key table reaches Python and the help — strata.estimate's keywords,
# strata.plan's strategy keywords, their docstrings, the type stubs and `strata estimate --help` all list every key
# of strata.strategy_keys() — and the options strata.plan gained to match `strata plan` (per_stage, layerwise,
# memory_budget, gbs="auto", elementwise, earlystop, fp8_cast, optim) give what the CLI gives.
import ast
import json
from pathlib import Path

import pytest

import strata

STUB = Path(__file__).resolve().parents[2] / "python" / "strata" / "__init__.pyi"
AMP_CLUSTER = "p3.8xlarge:3+g4dn.12xlarge:1"


def stub_keywords(function):
    """The keyword-only parameters of `function` in the type stubs."""
    tree = ast.parse(STUB.read_text())
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return {a.arg for a in node.args.kwonlyargs}
    raise AssertionError(f"{function} not in {STUB}")


def test_table_lists_every_key_once():
    keys = strata.strategy_keys()
    names = [k["name"] for k in keys]
    assert len(names) == len(set(names))
    assert {"dp", "tp", "pp", "gbs", "optim", "stages", "layers"} <= set(names)
    optim = next(k for k in keys if k["name"] == "optim")
    assert optim["values"] == "fused|foreach|forloop" and optim["default"] == "fused"
    assert optim["enters_cost"] and optim["plan_option"] and not optim["searched"]


def test_cli_help_lists_every_key(cli):
    code, out, err = cli("estimate", "--help")
    assert code == 0, err
    for k in strata.strategy_keys():
        assert f"  {k['name']}={k['values']}: " in out, k["name"]


def test_estimate_keywords_docstring_and_stub_list_every_key():
    stub = stub_keywords("estimate")
    for k in strata.strategy_keys():
        assert f"  {k['python_name']}  " in strata.estimate.__doc__, k["python_name"]
        assert k["python_name"] in stub, k["python_name"]


def test_plan_keywords_docstring_and_stub_list_every_planner_key():
    stub = stub_keywords("plan")
    planner_keys = [k for k in strata.strategy_keys() if k["plan_option"] and k["python_name"] != "gbs"]
    assert {k["python_name"] for k in planner_keys} >= {"dtype", "elementwise", "earlystop", "fp8_cast", "optim"}
    for k in planner_keys:
        assert f"  {k['python_name']}  " in strata.plan.__doc__, k["python_name"]
        assert k["python_name"] in stub, k["python_name"]
    # strata.plan's own options: every one `strata plan` has that a library call can take.
    assert {"per_stage", "layerwise", "memory_budget", "objective", "budget", "stage_schedule", "prices"} <= stub


# ---- estimate with keywords ----------------------------------------------------------------------------------------
def test_estimate_keywords_equal_the_strategy_text(cli_json):
    text = "tp=8,pp=8,mbs=1,gbs=64,recompute=full,earlystop=on,sp=on,elementwise=eager,optim=foreach"
    by_kw = strata.estimate("gpt3-175b", "dgx-a100:8", tp=8, pp=8, mbs=1, gbs=64, recompute="full",
                            earlystop=True, sp=True, elementwise="eager", optim="foreach")
    assert by_kw.to_dict() == cli_json("estimate", "--model", "gpt3-175b", "--cluster", "dgx-a100:8",
                                       "--strategy", text, "--json")
    # keywords override a given strategy
    over = strata.estimate("gpt3-175b", "dgx-a100:8", "tp=8,pp=8,mbs=1,gbs=64,recompute=full,sp=on",
                           earlystop=True, elementwise="eager", optim="foreach")
    assert over.to_dict() == by_kw.to_dict()


def test_estimate_keyword_errors():
    with pytest.raises(strata.InputError, match="estimate: unknown keyword 'optimizer'"):
        strata.estimate("gpt2-small", "dgx-a100:1", "gbs=8", optimizer="foreach")
    with pytest.raises(strata.InputError, match="optim: 'lazy' is not fused, foreach or forloop"):
        strata.estimate("gpt2-small", "dgx-a100:1", gbs=8, optim="lazy")
    with pytest.raises(strata.InputError, match="give a strategy or strategy keys"):
        strata.estimate("gpt2-small", "dgx-a100:1")


def test_optim_foreach_costs_the_step_temporaries():
    base = dict(tp=8, mbs=1, gbs=8, recompute="full", sp=True)
    fused = strata.estimate("llama2-7b", "dgx-a100:1", **base)
    foreach = strata.estimate("llama2-7b", "dgx-a100:1", optim="foreach", **base)
    mem = foreach.to_dict()["stages"][0]["memory"]
    assert "optimizer_step_bytes" not in fused.to_dict()["stages"][0]["memory"]  # fused: unchanged output
    assert mem["optimizer_step_bytes"] > 0
    assert foreach.peak_memory_bytes == pytest.approx(fused.peak_memory_bytes + mem["optimizer_step_bytes"])
    assert foreach.iteration_time_s == fused.iteration_time_s
    assert str(foreach.strategy).endswith(",optim=foreach")


# ---- plan's options ------------------------------------------------------------------------------------------------
def plan_dict(d):
    d = dict(d)
    d.pop("search_time_s", None)
    return d


@pytest.mark.parametrize("extra,flags", [
    ({"elementwise": "eager"}, ["--elementwise", "eager"]),
    ({"earlystop": True}, ["--earlystop"]),
    ({"optim": "foreach"}, ["--optim", "foreach"]),
    ({"memory_budget": 12}, ["--memory-budget", "12"]),
])
def test_plan_keywords_equal_cli(cli_json, extra, flags):
    expected = cli_json("plan", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--gbs", "32", *flags, "--json", "-")
    p = strata.plan("amp-gpt2", AMP_CLUSTER, 32, **extra)
    assert plan_dict(p.to_dict()) == plan_dict(expected)


def test_plan_fp8_cast_needs_fp8(cli_error):
    with pytest.raises(strata.InputError) as e:
        strata.plan("amp-gpt2", AMP_CLUSTER, 32, fp8_cast="separate")
    assert str(e.value) == cli_error("plan", "--model", "amp-gpt2", "--cluster", AMP_CLUSTER, "--gbs", "32",
                                     "--fp8-cast", "separate")
    p = strata.plan("gpt2-small", "dgx-h100:1", 64, dtype="fp8", fp8_cast="separate")
    assert "fp8cast=separate" in str(p.best.strategy)


def test_plan_refuses_strategy_keys_it_searches():
    with pytest.raises(strata.InputError, match="plan: unknown keyword 'tp'"):
        strata.plan("amp-gpt2", AMP_CLUSTER, 32, tp=2)


def test_plan_per_stage(cli_json):
    expected = cli_json("plan", "--model", "small-gpt", "--cluster", AMP_CLUSTER, "--gbs", "16", "--per-stage",
                        "--json", "-")
    p = strata.plan("small-gpt", AMP_CLUSTER, 16, per_stage=True)
    assert p.per_stage is not None
    assert p.per_stage["strategy"].to_dict() == expected["per_stage"]["strategy"]
    assert p.per_stage["estimate"].iteration_time_s == expected["per_stage"]["estimate"]["iteration_time_s"]
    assert p.per_stage["idle_devices"] == expected["per_stage"]["idle_devices"]
    assert strata.plan("small-gpt", AMP_CLUSTER, 16).per_stage is None
    with pytest.raises(strata.InputError, match="need --per-stage"):
        strata.plan("small-gpt", AMP_CLUSTER, 16, objective="cheapest")


def test_plan_layerwise_and_auto_gbs(cli_json):
    expected = cli_json("plan", "--model", "small-gpt", "--cluster", "dgx-a100:1", "--gbs", "32", "--layerwise",
                        "--json", "-")
    p = strata.plan("small-gpt", "dgx-a100:1", 32, layerwise=True)
    assert p.layerwise is not None
    assert p.layerwise["layer_choices"] == expected["layer_choices"]
    auto = strata.plan("small-gpt", "dgx-a100:1", "auto")
    expected_auto = cli_json("plan", "--model", "small-gpt", "--cluster", "dgx-a100:1", "--gbs", "auto",
                             "--json", "-")
    assert auto.gbs == expected_auto["best"]["strategy"]["gbs"]
    assert auto.best.strategy.to_dict() == expected_auto["best"]["strategy"]
    with pytest.raises(TypeError, match="--gbs"):  # a str other than "auto": a wrong type
        strata.plan("small-gpt", "dgx-a100:1", "many")
