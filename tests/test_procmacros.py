"""Issue 23 item 2: replicas see the plain job's $(Process) and the other
per-proc macros (condor_rlrep.condor.procmacros), in PRE's description, in
instrument's static one and in the copy's VARS; what cannot be pinned leaves
the node unreplicated, with the reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import htcondor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condor_rlrep.condor.procmacros import pin_proc_macros, pin_var
from condor_rlrep.condor.submit import SubmitError
from condor_rlrep.hooks.nodesubmit import node_description

CLI = str(Path(sys.executable).parent / "condor-rlrep")


def test_plain_references_take_the_plain_jobs_values() -> None:
    text = ('executable = /bin/cat\narguments = "in.$(Process) $(procid) s$(STEP) r$(Row) i[$(Item)]"\n'
            "input = in.$(Process)\n# $INT(Process) in a comment is no use of it\nqueue\n")
    assert pin_proc_macros(text) == ('executable = /bin/cat\narguments = "in.0 0 s0 r0 i[]"\n'
                                     "input = in.0\n# $INT(Process) in a comment is no use of it\nqueue\n")
    assert pin_proc_macros("executable = /bin/true\nqueue\n") == "executable = /bin/true\nqueue\n"
    assert pin_var("x", "data.$(Process).$(Cluster)") == "data.0.$(Cluster)"  # the cluster is one for all replicas


@pytest.mark.parametrize(("line", "why"), [
    ("arguments = $INT(Process,%03d)", "form"),
    ("arguments = $(Process:7)", "form"),
    ("arguments = $EVAL(ProcId + 1)", "ProcId"),
    ("arguments = $EVAL(Step)", "form"),
    ("Process = 5", "defines"),
    ("arguments = $$([ProcId])", "ProcId"),
    ("My.Seed = ProcId * 7", "ProcId"),
    ("include : common.sub", "includes"),
])
def test_what_cannot_be_pinned_is_refused(line: str, why: str) -> None:
    with pytest.raises(SubmitError, match=why):
        pin_proc_macros(f"executable = /bin/true\n{line}\nqueue\n")


def test_vars_that_cannot_be_pinned_are_refused() -> None:
    with pytest.raises(SubmitError, match="per-proc macro"):
        pin_var("Step", "3")
    with pytest.raises(SubmitError, match="cannot be pinned"):
        pin_var("seed", "$INT(Process)")


def _expanded(body: str, procs: int) -> list[str]:
    """What HTCondor's own submit parser makes of ``arguments`` for each proc."""
    submit = htcondor2.Submit(body)
    out = []
    for proc in range(procs):
        submit["Process"] = str(proc)  # what condor_submit sets per proc (live macro)
        out.append(submit.expand("arguments"))
    return out


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(["$(Process)", "$(ProcId)", "$(Step)", "x", "$(Cluster)", ".", "-"]),
                min_size=1, max_size=6))
def test_every_replica_expands_what_proc_zero_does(parts: list[str]) -> None:
    """Whatever mix of per-proc macros the arguments hold, the replica
    description has none left: each replica's arguments equal the plain job's."""
    text = f"executable = /bin/echo\narguments = {''.join(parts)}\nqueue\n"
    body = node_description(text, node="A", replicas=3, decision_id=None, run_id=None, macros={"JOB": "A"},
                            cwd="/tmp").body
    assert "$(Process)" not in body.split("My.RlrepNode")[0] and "$(Step)" not in body
    plain = text.replace("$(Process)", "0").replace("$(ProcId)", "0").replace("$(Step)", "0")
    assert set(_expanded(body, 3)) == {htcondor2.Submit(plain).expand("arguments")}


def test_instrument_pins_vars_and_leaves_unpinnable_nodes_alone(tmp_path: Path) -> None:
    (tmp_path / "a.sub").write_text("executable = /bin/cat\ninput = in.$(Process)\narguments = $(tag)\nqueue\n")
    (tmp_path / "b.sub").write_text("executable = /bin/true\narguments = $INT(Process,%03d)\nqueue\n")
    (tmp_path / "w.dag").write_text('JOB A a.sub\nJOB B b.sub\nVARS A tag="t$(Process)"\n'
                                    'VARS ALL_NODES rlrep_estimate="60"\n')
    done = subprocess.run([CLI, "instrument", "w.dag", "-o", "run/w.dag", "--policy", "fixed:2", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["replicated"] == ["A"]
    assert "$INT(Process,%03d)" in result["passed_through"]["B"] and "$(Process)" in result["passed_through"]["B"]
    copy = (tmp_path / "run" / "w.dag").read_text()
    assert 'tag="t0"' in copy
    body = (tmp_path / "run" / "w.dag.rlrep" / "nodes" / "A.sub").read_text()
    assert "input = in.0\n" in body and "queue 2" in body
