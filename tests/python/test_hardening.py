# tests/python/test_hardening: issue 40 for the Python API — JSON-like input is walked with a bounded depth (a dict
# that contains itself, lists nested 30,000 deep: strata.InputError, never a crash), wrong Python types are refused
# (bool or float for an int, str for a number: TypeError) instead of coerced, and numbers out of their documented
# range give the CLI's words (core/numbers.hpp), checked against the CLI itself.
import pytest

import strata

SMALL = {"name": "m", "layers": 2, "hidden": 256, "heads": 4, "ffn": 1024, "vocab": 1000, "seq": 128}


def test_model_dict_that_contains_itself_is_an_input_error():
    d = dict(SMALL)
    d["self"] = d
    with pytest.raises(strata.InputError, match="nested deeper than 128 levels"):
        strata.Model.from_dict(d)


def test_lists_nested_30000_deep_are_an_input_error():
    deep = []
    for _ in range(30000):
        deep = [deep]
    d = dict(SMALL, extra=deep)
    with pytest.raises(strata.InputError, match="nested deeper than"):
        strata.Model.from_dict(d)
    with pytest.raises(strata.InputError, match="nested deeper than"):
        strata.Cluster.from_dict({"nodes": deep})
    with pytest.raises(strata.InputError, match="nested deeper than"):
        strata.estimate(d, "dgx-a100:1", "gbs=8")


def test_self_containing_list_in_a_strategy_dict_is_an_input_error():
    lst = []
    lst.append(lst)
    with pytest.raises(strata.InputError, match="nested deeper than"):
        strata.Strategy.from_dict({"dp": 1, "split": lst})


def test_bounded_depth_accepts_real_files_depth():
    # A model dict of ordinary depth still loads (the bound is far above any strata file).
    assert strata.Model.from_dict(dict(SMALL)).name == "m"


@pytest.mark.parametrize("field,value", [("layers", True), ("hidden", 256.0), ("heads", "4")])
def test_model_dict_wrong_types_are_refused(field, value):
    with pytest.raises(strata.InputError, match=field):
        strata.Model.from_dict(dict(SMALL, **{field: value}))


def test_model_dict_integral_float_for_int_names_the_float():
    with pytest.raises(strata.InputError, match="expected an integer, got the float 2.0"):
        strata.Model.from_dict(dict(SMALL, layers=2.0))


@pytest.mark.parametrize("kwargs", [{"gbs": True}, {"gbs": 8.0}, {"gbs": "8"}, {"gbs": 8, "top": False},
                                    {"gbs": 8, "threads": 1.0}, {"gbs": 8, "seq": "1024"},
                                    {"gbs": 8, "max_tp": True}])
def test_plan_wrong_types_are_type_errors(kwargs):
    with pytest.raises(TypeError):
        strata.plan("gpt2-small", "dgx-a100:1", **kwargs)


@pytest.mark.parametrize("kwargs", [{"seq": True}, {"seq": 1024.0}])
def test_estimate_wrong_types_are_type_errors(kwargs):
    with pytest.raises(TypeError):
        strata.estimate("gpt2-small", "dgx-a100:1", "gbs=8", **kwargs)


@pytest.mark.parametrize("kwargs", [{"iterations": True}, {"iterations": 2.0}, {"overlap_slowdown": "1.5"},
                                    {"bucket_mb": True}])
def test_simulate_wrong_types_are_type_errors(kwargs):
    with pytest.raises(TypeError):
        strata.simulate("gpt2-small", "dgx-a100:1", "gbs=8", **kwargs)


def test_with_seq_refuses_bool_and_float():
    m = strata.Model("gpt2-small")
    with pytest.raises(TypeError):
        m.with_seq(True)
    with pytest.raises(TypeError):
        m.with_seq(512.0)


@pytest.mark.parametrize("kwargs,flag,cli_args", [
    ({"gbs": 8, "seq": 0}, "--seq", ["--gbs", "8", "--seq", "0"]),
    ({"gbs": 8, "top": 0}, "--top", ["--gbs", "8", "--top", "0"]),
    ({"gbs": 8, "threads": 100000}, "--threads", ["--gbs", "8", "--threads", "100000"]),
    ({"gbs": 8, "max_tp": -1}, "--max-tp", ["--gbs", "8", "--max-tp=-1"]),
    ({"gbs": 2 ** 70}, "--gbs", None),
])
def test_plan_numbers_out_of_range_name_both_bounds(cli_error, kwargs, flag, cli_args):
    with pytest.raises(strata.InputError) as e:
        strata.plan("gpt2-small", "dgx-a100:1", **kwargs)
    msg = str(e.value)
    assert flag in msg and ">= " in msg and "<= " in msg, msg
    if cli_args:  # the same words as the CLI's flag check
        cli_msg = cli_error("plan", "--model", "gpt2-small", "--cluster", "dgx-a100:1", *cli_args)
        assert msg == cli_msg, (msg, cli_msg)


def test_plan_gbs_zero_has_the_cli_words(cli_error):
    with pytest.raises(strata.InputError) as e:
        strata.plan("gpt2-small", "dgx-a100:1", gbs=0)
    assert str(e.value) == cli_error("plan", "--model", "gpt2-small", "--cluster", "dgx-a100:1", "--gbs", "0")


@pytest.mark.parametrize("kwargs", [{"overlap_slowdown": float("nan")}, {"overlap_slowdown": float("inf")},
                                    {"overlap_slowdown": 1e300}, {"bucket_mb": float("nan")}, {"bucket_mb": 0.0},
                                    {"bucket_mb": 1e300}, {"iterations": 0}, {"iterations": 10 ** 9}])
def test_simulate_non_finite_and_absurd_numbers(kwargs):
    with pytest.raises(strata.InputError, match="must be"):
        strata.simulate("gpt2-small", "dgx-a100:1", "gbs=8", **kwargs)


def test_cluster_dict_absurd_numbers_are_refused(example):
    import json
    with open(example("cluster_cpu_local.json")) as f:
        d = json.load(f)
    d["links"][0]["bw_bytes_per_s"] = 1e300
    with pytest.raises(strata.InputError, match="magnitude"):
        strata.Cluster.from_dict(d)


def test_allocate_budget_needs_makespan_budget_and_a_finite_value(example):
    with pytest.raises(strata.InputError, match="--budget: applies to the makespan-budget policy only"):
        strata.allocate(example("sched_throughputs.json"), "max-min-fairness", budget=100)
    with pytest.raises(strata.InputError, match="^--budget: must be a finite number"):
        strata.allocate(example("sched_throughputs.json"), "makespan-budget", budget=float("inf"))
    with pytest.raises(TypeError):
        strata.allocate(example("sched_throughputs.json"), "makespan-budget", budget="100")
