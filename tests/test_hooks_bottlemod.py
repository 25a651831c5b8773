"""BottleMod estimates in the live hooks: the instrumented copy names the
model absolutely, the plan cache takes its predicted finish as e_t and
watches the model file, and a bad model makes PRE fail open (fast)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _hookutil import REPO, call_script, pre_macros
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.errors import ModelError
from condor_rlrep.rundir import plan as cache_module
from condor_rlrep.rundir.plan import load_plan
from condor_rlrep.rundir.layout import HookSettings
from condor_rlrep.instrument import InstrumentOptions, instrument

MODEL = REPO / "examples" / "bottlemod" / "paper_50_50.toml"
MAKESPAN, DL1 = 260.00283889926925, 178.00283898126926  # the model's own analysis


@pytest.fixture()
def case(tmp_path: Path):
    user = tmp_path / "user"
    (user / "models").mkdir(parents=True)
    (user / "models" / "m.toml").write_text(MODEL.read_text())
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (user / "w.dag").write_text(
        'JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\n'
        'VARS A rlrep_bottlemod="models/m.toml"\nVARS B rlrep_bottlemod="models/m.toml#dl1"\n'
    )
    dag = tmp_path / "run" / "w.rlrep.dag"
    result = instrument(user / "w.dag", dag, InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy="fixed:2", always_pre=True))
    return user, dag, result.context


def test_instrumented_plan_uses_the_model(case) -> None:
    user, dag, context = case
    model = os.path.realpath(user / "models" / "m.toml")
    assert read_dag(dag).nodes["B"].var("rlrep_bottlemod") == model + "#dl1"  # absolute in the copy
    plan = load_plan(context, HookSettings.load(context))
    assert plan.node("A")[:3] == (pytest.approx(MAKESPAN), pytest.approx(MAKESPAN + DL1), pytest.approx(DL1))
    assert plan.node("B")[0] == pytest.approx(DL1)
    assert plan.critical_path_seconds == pytest.approx(MAKESPAN + DL1)


def test_bad_model_fails_open_fast_until_fixed(case, monkeypatch) -> None:
    user, dag, context = case
    model = user / "models" / "m.toml"
    good = model.read_text()
    for entry in (Path(context) / "cache").iterdir():
        if entry.name.startswith("plan-"):
            import shutil

            shutil.rmtree(entry)
    model.write_text("this is [not toml\n")
    assert call_script(dag, "A", "PRE", pre_macros()).returncode == 0
    out = Path(read_dag(dag).nodes["A"].submit).read_text()
    assert "queue 2" not in out  # the user's job as is
    log = (Path(context) / "hooks.log").read_text()
    assert "FAIL-OPEN" in log and "node A" in log and "m.toml" in log

    def boom(*args, **kwargs):
        raise AssertionError("the DAG was parsed again although nothing changed")

    monkeypatch.setattr(cache_module, "_build", boom)
    with pytest.raises(cache_module.PlanBuildError, match="m.toml"):
        load_plan(context, HookSettings.load(context))
    monkeypatch.undo()
    model.write_text(good)  # fixing the model rebuilds the plan
    os.utime(model, ns=(1, 1))
    assert load_plan(context, HookSettings.load(context)).node("B")[0] == pytest.approx(DL1)
    assert call_script(dag, "A", "PRE", pre_macros(retry=1)).returncode == 0
    assert "queue 2" in Path(read_dag(dag).nodes["A"].submit).read_text()


def test_model_edit_rebuilds_the_plan(case) -> None:
    user, dag, context = case
    model = user / "models" / "m.toml"
    before = load_plan(context, HookSettings.load(context)).node("A")[0]
    # a slower link: the same model with half the capacity takes longer
    model.write_text(model.read_text().replace("capacity = 12780544", "capacity = 6390272"))
    after = load_plan(context, HookSettings.load(context)).node("A")[0]
    assert after > before


def test_instrument_refuses_a_bad_model(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("queue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_bottlemod="nope.toml"\n')
    with pytest.raises(ModelError, match=r"node A: .*nope\.toml"):
        instrument(tmp_path / "w.dag", tmp_path / "o" / "w.dag", InstrumentOptions(policy="single"))


def test_sidecar_model_entry_is_watched(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text(MODEL.read_text())
    (tmp_path / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="5"\n')
    (tmp_path / "est.csv").write_text("A,bottlemod:m.toml#dl1\n")
    result = instrument(tmp_path / "w.dag", tmp_path / "o" / "w.dag",
                        InstrumentOptions(policy="single", estimates=str(tmp_path / "est.csv")))
    settings = HookSettings.load(result.context)
    assert load_plan(result.context, settings).node("A")[0] == pytest.approx(DL1)  # the sidecar wins
    (tmp_path / "m.toml").write_text(MODEL.read_text().replace("capacity = 12780544", "capacity = 6390272"))
    assert load_plan(result.context, settings).node("A")[0] > DL1 * 1.5
