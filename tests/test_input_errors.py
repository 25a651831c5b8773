"""Issue 16's crashing inputs, one by one: each is one clear located error, exit 2 on the CLI."""

from __future__ import annotations

import math
import warnings

import pytest

from condor_rlrep.bottlemod.modelfile import parse_model
from condor_rlrep.cli.main import main
from condor_rlrep.criticality import PhiError, check_phi
from condor_rlrep.dag import parse_dag
from condor_rlrep.dag.dax import parse_dax
from condor_rlrep.dag.wfformat import parse_wfformat
from condor_rlrep.errors import DagSyntaxError, InputError, ModelError
from condor_rlrep.estimates import parse_estimates

BIG = "9" * 5000


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1.0, "0.5", True, 10**400])
def test_check_phi_refuses(value):
    with pytest.raises(PhiError):
        check_phi(value)
    assert check_phi(0.25) == 0.25 and check_phi(-0.5) == -0.5
    with pytest.raises(InputError, match=">= 0"):
        check_phi(-0.5, minimum=0.0)


@pytest.mark.parametrize("line", [f"RETRY a {BIG}", f"PRIORITY a {BIG}", f"ABORT-DAG-ON a {BIG}",
                                  f"ABORT-DAG-ON a 1 RETURN {BIG}", f"PRE_SKIP a {BIG}", f"TOLERANCE a {BIG}%"])
def test_huge_dag_integers(line):
    with pytest.raises(DagSyntaxError, match=r"w.dag:2: .*5000 characters.*out of range"):
        parse_dag(["JOB a a.sub", line], path="w.dag")


def test_dax_refuses_dtds_entities_and_unknown_encodings():
    xxe = b'<?xml version="1.0"?>\n<!DOCTYPE adag [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<adag><job id="a" name="&x;"/></adag>'
    with pytest.raises(DagSyntaxError, match=r"d.dax:2: <!DOCTYPE adag>: a DAX may not have a DTD"):
        parse_dax(xxe, "d.dax")
    with pytest.raises(DagSyntaxError, match="DTD"):
        parse_dax(b'<!DOCTYPE adag SYSTEM "http://example.com/x.dtd">\n<adag/>', "d.dax")
    with pytest.raises(DagSyntaxError, match=r"d.dax:1: XML declaration: unknown encoding: klingon"):
        parse_dax(b'<?xml version="1.0" encoding="klingon"?>\n<adag/>', "d.dax")


def test_wfformat_deep_nesting_and_huge_numbers():
    with pytest.raises(DagSyntaxError, match="nested too deeply"):
        parse_wfformat(b'{"workflow": ' + b"[" * 100000 + b"]" * 100000 + b"}", "w.json")
    text = '{"workflow": {"tasks": [{"name": "a", "runtimeInSeconds": ' + BIG + "}]}}"
    with pytest.raises(DagSyntaxError, match="task 'a': runtimeInSeconds inf must be a finite number"):
        parse_wfformat(text, "w.json")


def test_estimates_json_huge_and_deep():
    with pytest.raises(InputError, match="node a"):
        parse_estimates(['{"a": ' + BIG + "}"], path="e.json")
    with pytest.raises(InputError, match="nested too deeply"):
        parse_estimates(["[" * 100000 + "]" * 100000], path="e.json")


def test_bottlemod_models_huge_numbers_and_steep_slopes():
    with pytest.raises(ModelError, match=r"m.toml:2: .*more digits"):
        parse_model(f"[tasks.a]\nmax_progress = {BIG}\n", "m.toml")
    with pytest.raises(ModelError, match="tasks.a.max_progress: must be a finite number"):
        parse_model(f"[tasks.a]\nmax_progress = {'9' * 400}\n", "m.toml")
    with pytest.raises(ModelError, match="tasks.a.max_progress: must be a finite number"):
        parse_model('{"tasks": {"a": {"max_progress": ' + BIG + "}}}", "m.json", "json")
    steep = "[tasks.a]\nmax_progress = 10\n[tasks.a.inputs.d]\nrequirement = { points = [[0, 0], [1e-300, 1e300]] }\nsource = 10\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warnings on the way
        with pytest.raises(ModelError, match=r"m.toml:4: tasks.a.inputs.d.requirement: the slope .* too steep"):
            parse_model(steep, "m.toml")


def test_cli_exit_2_one_line(tmp_path, capsys):
    dag = tmp_path / "w.dag"
    dag.write_text(f"JOB a a.sub\nRETRY a {BIG}\n")
    with pytest.raises(SystemExit) as exit_:
        main(["inspect", str(dag), "--default-estimate", "1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith(f"condor-rlrep: error: {dag}:2: RETRY") and err.count("\n") == 1
