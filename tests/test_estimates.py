"""Runtime estimates: sources, priority, sidecar files and errors."""

from __future__ import annotations

import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _critutil import make_workflow
from condor_rlrep.dag.model import BOTTLEMOD_MACRO, ESTIMATE_MACRO, VarAssignment
from condor_rlrep.errors import EstimateError, InputError, ModelError
from condor_rlrep.estimates import (
    BottleModRef,
    absolute_bottlemod_spec,
    bottlemod_models,
    parse_estimates,
    parse_seconds,
    read_estimates,
    resolve_estimates,
    resolve_estimates_with_origins,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1800", 1800.0), ("0", 0.0), ("2.5", 2.5), (".5", 0.5), ("1e3", 1000.0), ("30m", 1800.0),
     ("1.5h", 5400.0), ("2d", 172800.0), (" 10 s ", 10.0), ("7H", 25200.0)],
)
def test_parse_seconds(text, seconds):
    assert parse_seconds(text) == seconds


@pytest.mark.parametrize("text", ["", "abc", "-5", "10 min", "nan", "inf", "1e400", "5x", "1,5"])
def test_parse_seconds_rejects(text):
    with pytest.raises(ValueError):
        parse_seconds(text)


def _all_sources_workflow():
    workflow = make_workflow({"a": 10.0, "b": 20.0, "c": None, "d": None, "e": None, "f": None}, set())
    workflow.nodes["a"].runtime = 99.0  # VARS wins over runtime
    workflow.nodes["c"].runtime = 30.0
    workflow.nodes["e"].noop = True
    return workflow


def test_priority_order():
    workflow = _all_sources_workflow()
    extra = {"a": 1.0, "c": 1.0, "d": 40.0, "e": 50.0}.get
    estimates, origins = resolve_estimates_with_origins(
        workflow, sidecar={"b": 7.0}, extra=lambda node: extra(node.name), default_estimate=60.0
    )
    assert estimates == {"a": 10.0, "b": 7.0, "c": 30.0, "d": 40.0, "e": 50.0, "f": 60.0}
    assert origins == {"a": "vars", "b": "file", "c": "runtime", "d": "extra", "e": "extra", "f": "default"}
    # NOOP nodes take no time unless told otherwise, before the default
    estimates, origins = resolve_estimates_with_origins(workflow, default_estimate=60.0)
    assert estimates["e"] == 0.0 and origins["e"] == "noop" and origins["d"] == "default"


def test_missing_estimates_name_the_nodes():
    with pytest.raises(EstimateError) as caught:
        resolve_estimates(_all_sources_workflow())
    assert str(caught.value).startswith("test.dag: 2 nodes have no runtime estimate: d, f")


def test_only_dependency_nodes_need_estimates():
    workflow = make_workflow(
        {"a": 1.0, "fin": None, "svc": None, "prov": None, "sub": 4.0},
        set(),
        kinds={"fin": "FINAL", "svc": "SERVICE", "prov": "PROVISIONER", "sub": "SUBDAG"},
    )
    assert resolve_estimates(workflow) == {"a": 1.0, "sub": 4.0}


def test_bad_vars_value_points_at_the_node_line():
    workflow = make_workflow({"a": 1.0, "b": None}, set())
    workflow.nodes["b"].vars.append(VarAssignment(ESTIMATE_MACRO, "soon"))
    with pytest.raises(EstimateError) as caught:
        resolve_estimates(workflow)
    assert str(caught.value).startswith("test.dag:2: node b: VARS rlrep_estimate:")
    workflow.nodes["b"].vars.append(VarAssignment(ESTIMATE_MACRO, "-3"))  # the last VARS wins
    with pytest.raises(EstimateError, match="not a duration|>= 0"):
        resolve_estimates(workflow)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "5", True])
def test_bad_values_from_every_source(bad):
    workflow = make_workflow({"a": None}, set())
    with pytest.raises(EstimateError, match="node a"):
        resolve_estimates(workflow, sidecar={"a": bad})
    with pytest.raises(EstimateError, match="node a"):
        resolve_estimates(workflow, extra=lambda node: bad)
    with pytest.raises(EstimateError, match="default estimate"):
        resolve_estimates(workflow, default_estimate=bad)
    workflow.nodes["a"].runtime = bad
    with pytest.raises(EstimateError, match="node a: runtime"):
        resolve_estimates(workflow)


def test_extra_source_may_decline():
    workflow = make_workflow({"a": None}, set())
    assert resolve_estimates(workflow, extra=lambda node: None, default_estimate=5.0) == {"a": 5.0}


def test_unused_sidecar_names_are_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="condor_rlrep.estimates"):
        resolve_estimates(make_workflow({"a": 1.0}, set()), sidecar={"zz": 3.0, "a": 2.0})
    assert "zz" in caplog.text


def test_csv_sidecar():
    lines = ["node,seconds", "", "# comment", "a, 10", '"b c",2m', "  d ,1e2  "]
    assert parse_estimates(lines, path="e.csv") == {"a": 10.0, "b c": 120.0, "d": 100.0}
    assert parse_estimates(["a,5"]) == {"a": 5.0}  # no header


@pytest.mark.parametrize(
    ("lines", "line", "match"),
    [
        (["a,1", "b"], 2, "expected 'node,seconds'"),
        (["a,1", "b,2,3"], 2, "expected 'node,seconds'"),
        (["a,1", "b,soon"], 2, "node b"),
        (["a,-1"], 1, "node a"),
        (["a,1", "# x", "a,2"], 3, "node a given twice \\(first on line 1\\)"),
        (["node,seconds", "x,y"], 2, "node x"),
        ([",5"], 1, "expected"),
    ],
)
def test_csv_errors_name_file_and_line(lines, line, match):
    with pytest.raises(InputError, match=match) as caught:
        parse_estimates(lines, path="e.csv")
    assert caught.value.path == "e.csv" and caught.value.line == line
    assert str(caught.value).startswith(f"e.csv:{line}: ")


def test_json_sidecar_and_errors():
    assert parse_estimates(['{"a": 10,', ' "b": 2.5}']) == {"a": 10.0, "b": 2.5}
    with pytest.raises(InputError) as caught:
        parse_estimates(['{"a": 10,', ' "b": }'], path="e.json")
    assert caught.value.line == 2
    with pytest.raises(InputError) as caught:
        parse_estimates(['{"a": 10,', ' "b": "ten"}'], path="e.json")
    assert caught.value.line == 2 and "node b" in str(caught.value)



def test_json_must_be_an_object():
    with pytest.raises(InputError, match="one object"):
        parse_estimates(["[1, 2]"], path="e.json")
    with pytest.raises(InputError, match="not valid JSON"):
        parse_estimates(["{", "}", "x"], path="e.json")


def test_read_estimates(tmp_path):
    path = tmp_path / "est.csv"
    path.write_text("node,seconds\nA,60\n", encoding="utf-8")
    assert read_estimates(path) == {"A": 60.0}
    path = tmp_path / "est.json"
    path.write_text('{"A": 60, "B+x": 1}', encoding="utf-8")
    assert read_estimates(path) == {"A": 60.0, "B+x": 1.0}


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.from_regex(r"[A-Za-z_][A-Za-z0-9_+.-]{0,12}", fullmatch=True),
                       st.floats(min_value=0, max_value=1e9, allow_nan=False)))
def test_csv_round_trip(values):
    lines = ["node,seconds", *(f"{name},{value!r}" for name, value in values.items())]
    assert parse_estimates(lines) == values


# --- BottleMod models (VARS rlrep_bottlemod) ----------------------------------

_MODEL = Path(__file__).resolve().parents[1] / "examples" / "bottlemod" / "paper_50_50.toml"
_MAKESPAN, _DL1 = 260.00283889926925, 178.00283898126926  # that model's own analysis


def _model_workflow(tmp_path: Path) -> object:
    (tmp_path / "m.toml").write_text(_MODEL.read_text())
    workflow = make_workflow({"a": None, "b": 5.0, "c": None, "d": None, "e": None}, set(),
                             path=str(tmp_path / "w.dag"))
    for name, spec in {"a": "m.toml", "b": "m.toml", "c": "m.toml#dl1", "d": str(tmp_path / "m.toml#dl1")}.items():
        workflow.nodes[name].vars.append(VarAssignment(BOTTLEMOD_MACRO, spec))
    workflow.nodes["c"].runtime = 7.0  # a measured runtime is explicit: it beats the model
    return workflow


def test_bottlemod_priority(tmp_path: Path):
    workflow = _model_workflow(tmp_path)
    estimates, origins = resolve_estimates_with_origins(
        workflow, extra=lambda node: 1.0, default_estimate=60.0, sidecar={"e": 3.0})
    assert estimates == {"a": pytest.approx(_MAKESPAN), "b": 5.0, "c": 7.0, "d": pytest.approx(_DL1), "e": 3.0}
    assert origins == {"a": "bottlemod", "b": "vars", "c": "runtime", "d": "bottlemod", "e": "file"}
    # the model comes before the other sources (history, default) …
    estimates, origins = resolve_estimates_with_origins(workflow, extra=lambda node: 1.0)
    assert origins["a"] == "bottlemod" and origins["e"] == "extra"
    # … and can be switched off
    estimates, origins = resolve_estimates_with_origins(workflow, extra=lambda node: 1.0, bottlemod=False)
    assert estimates["a"] == 1.0 and origins["a"] == "extra"


def test_bottlemod_model_paths(tmp_path: Path):
    workflow = _model_workflow(tmp_path)
    assert bottlemod_models(workflow) == [os.path.realpath(tmp_path / "m.toml")]
    assert absolute_bottlemod_spec(workflow.nodes["c"]) == (os.path.realpath(tmp_path / "m.toml"), "dl1")
    assert absolute_bottlemod_spec(workflow.nodes["e"]) is None


def test_bad_bottlemod_model_names_node_and_file(tmp_path: Path):
    workflow = make_workflow({"a": None}, set(), path=str(tmp_path / "w.dag"))
    workflow.nodes["a"].vars.append(VarAssignment(BOTTLEMOD_MACRO, "gone.toml"))
    with pytest.raises(ModelError, match=r"node a: .*gone\.toml") as info:
        resolve_estimates(workflow)
    assert str(tmp_path / "w.dag") in str(info.value)


def test_bottlemod_is_imported_only_for_a_node_naming_a_model():
    code = (
        "import sys; sys.path.insert(0, 'tests'); from _critutil import make_workflow; "
        "from condor_rlrep.estimates import resolve_estimates; "
        "resolve_estimates(make_workflow({'a': 1.0, 'b': 2.0}, set())); "
        "print(any(m.startswith('condor_rlrep.bottlemod') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.strip() == "False"


def test_sidecar_can_name_a_model(tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "m.toml").write_text(_MODEL.read_text())
    model = str(tmp_path / "models" / "m.toml")
    csv_file = tmp_path / "est.csv"
    csv_file.write_text("node,seconds\na,bottlemod:models/m.toml#dl1\nb, bottlemod:models/m.toml \nc,30\n")
    json_file = tmp_path / "est.json"
    json_file.write_text('{"a": "bottlemod:models/m.toml#dl1", "b": "BottleMod:models/m.toml", "c": 30}')
    for path in (csv_file, json_file):
        sidecar = read_estimates(path)
        assert sidecar == {"a": BottleModRef(model, "dl1"), "b": BottleModRef(model, None), "c": 30.0}
        workflow = make_workflow({"a": 10.0, "b": None, "c": None}, set())  # the sidecar beats VARS
        estimates, origins = resolve_estimates_with_origins(workflow, sidecar=sidecar, bottlemod=False)
        assert estimates == {"a": pytest.approx(_DL1), "b": pytest.approx(_MAKESPAN), "c": 30.0}
        assert origins == {"a": "bottlemod", "b": "bottlemod", "c": "file"}
        assert bottlemod_models(workflow, sidecar) == [model]


def test_bad_sidecar_model_entries(tmp_path: Path):
    with pytest.raises(InputError, match=r"est\.csv:2: node a: .*names no model file"):
        parse_estimates(["node,seconds", "a,bottlemod:#x"], path=str(tmp_path / "est.csv"))
    sidecar = parse_estimates(["a,bottlemod:gone.toml"], path=str(tmp_path / "est.csv"))
    with pytest.raises(ModelError, match=r"est\.csv:1: node a: .*gone\.toml"):
        resolve_estimates(make_workflow({"a": None}, set()), sidecar=sidecar)
