# tests/python/test_engine: the engine= keyword (issue 37, docs/export.md §Engine profiles) — strata.plan(engine=)
# equals `strata plan --engine --json`, records the engine, and its export succeeds; estimate(engine=) and
# export(engine=) refuse what the engine cannot run with the CLI's message.
import pytest

import strata


def test_plan_engine_equals_cli_and_exports(cli_json, cli, tmp_path):
    p = strata.plan("llama3-8b", "dgx-a100:2", 128, engine="torchtitan-toml")
    d = p.to_dict()
    assert d["engine"] == "torchtitan-toml"
    cli_d = cli_json("plan", "--model", "llama3-8b", "--cluster", "dgx-a100:2", "--gbs", "128", "--engine",
                     "torchtitan-toml", "--json", "-")
    d.pop("search_time_s"), cli_d.pop("search_time_s")
    assert d == cli_d
    f = tmp_path / "plan.json"
    f.write_text(p.to_json() + "\n")
    code, out, err = cli("export", "--plan", str(f))
    assert code == 0, err
    assert strata.export(p, engine="torchtitan-toml").text == out


def test_engine_refusals_name_the_feature():
    with pytest.raises(strata.InputError, match="ALiBi"):
        strata.plan("mpt-7b", "dgx-a100:1", 64, engine="megatron")
    with pytest.raises(strata.InputError, match="tensor parallelism"):
        strata.estimate("gpt2-small", "dgx-a100:1", "tp=2,dp=4,mbs=1,gbs=16", engine="deepspeed")
    with pytest.raises(strata.InputError, match="unknown engine"):
        strata.export(strata.plan("gpt2-small", "dgx-a100:1", 16), engine="megatrom")
