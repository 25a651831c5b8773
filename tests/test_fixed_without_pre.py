"""Fixed policies run without PRE: instrument writes each node's replica
description itself, with PRE's own function, and the copy is wired only
with what the policy needs (fixed:1: nothing; fixed:K: POST and the reaper)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from _hookutil import FIGURE1, call_script, pre_macros
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.errors import DagError
from condor_rlrep.rundir.layout import node_fixed_state_path, node_state_path, node_submit_path
from condor_rlrep.instrument import REAPER_NODE, InstrumentOptions, instrument

JOBS = "ABCDEFGH"


def figure1(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    shutil.copytree(FIGURE1.parent, user)
    return user / "figure1.dag"


def without_run_tag(text: str) -> str:
    """PRE tags the replicas with its run (``RlrepDagRun``), which only exists once the DAG runs."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("My.RlrepDagRun = "))


def pre_written(tmp_path: Path, dag: Path, policy: str) -> tuple[Path, dict[str, str], dict[str, dict]]:
    """What PRE writes for every node of the same DAG (the --always-pre wiring): submit files and states."""
    out = tmp_path / "with-pre" / "f.dag"
    result = instrument(dag, out, InstrumentOptions(policy=policy, always_pre=True))
    assert result.without_pre == []
    bodies, states = {}, {}
    for node in JOBS:
        assert call_script(out, node, "PRE", pre_macros()).returncode == 0
        bodies[node] = Path(node_submit_path(result.context, node)).read_text()
        states[node] = json.loads(Path(node_state_path(result.context, node)).read_text())
    return out, bodies, states


@pytest.mark.parametrize("policy", ["fixed:1", "single"])
def test_one_replica_runs_with_no_hook_at_all(tmp_path: Path, policy: str) -> None:
    dag = figure1(tmp_path)
    out = tmp_path / "run" / "f.dag"
    result = instrument(dag, out, InstrumentOptions(policy=policy))
    assert result.without_pre == result.without_post == list(JOBS) and result.pre_kept == {}
    text = out.read_text()
    assert "SCRIPT" not in text and "TOLERANCE" not in text and REAPER_NODE not in text
    _, bodies, _ = pre_written(tmp_path, dag, policy)
    workflow = read_dag(out)
    for node in JOBS:
        assert workflow.nodes[node].submit == node_submit_path(result.context, node)
        written = Path(workflow.nodes[node].submit).read_text()
        assert written == without_run_tag(bodies[node])  # the very description PRE writes
        assert "queue 1\n" in written and 'My.RlrepNode = "' + node + '"' in written
    assert not (Path(result.context) / "state").exists() or not list((Path(result.context) / "state").iterdir())


def test_fixed_k_runs_post_and_the_reaper_but_no_pre(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    out = tmp_path / "run" / "f.dag"
    result = instrument(dag, out, InstrumentOptions(policy="fixed:2"))
    assert result.without_pre == list(JOBS) and result.without_post == []
    workflow = read_dag(out)
    assert REAPER_NODE in workflow.nodes
    _, bodies, states = pre_written(tmp_path, dag, "fixed:2")
    for node in JOBS:
        n = workflow.nodes[node]
        assert set(n.scripts) == {"POST"} and n.tolerance == "99% WAIT"
        written = Path(n.submit).read_text()
        assert written == without_run_tag(bodies[node])
        assert "queue 2\n" in written and ".rlrep-$(ProcId)" in written
        fixed = json.loads(Path(node_fixed_state_path(result.context, node)).read_text())
        # what POST needs of PRE's state: the replicas and the files it promotes
        assert (fixed["mode"], fixed["replicas"], fixed["decision_id"]) == ("replicas", 2, None)
        assert fixed["files"] == states[node]["files"] and len(fixed["files"]) == 2


def test_pre_stays_where_it_is_needed(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\noutput = $(JOB).out\nqueue\n")
    (user / "r.sub").write_text("executable = /bin/true\noutput = $(JOB).$(RETRY).out\nqueue\n")
    (user / "v.sub").write_text("executable = /bin/true\noutput = $(name).out\nerror = e.$(DAGManJobId)\nqueue\n")
    (user / "vv.sub").write_text("executable = /bin/true\noutput = $(name).out\nqueue\n")
    (user / "prep.sh").write_text("#!/bin/sh\nexit 0\n")
    (user / "prep.sh").chmod(0o755)
    (user / "w.dag").write_text(
        "JOB A a.sub\nJOB R r.sub\nJOB V v.sub\nVARS V name=\"x\"\nJOB W vv.sub\nVARS W name=\"w$(RETRY)\"\n"
        "JOB X vv.sub\nVARS X name=\"fixed\"\nJOB P a.sub\nSCRIPT PRE P prep.sh $JOB\nSCRIPT POST P prep.sh $RETURN\n"
        "JOB M missing.sub\n"
        "VARS ALL_NODES rlrep_estimate=\"10\"\n")
    two = instrument(user / "w.dag", tmp_path / "two" / "w.dag", InstrumentOptions(policy="fixed:2"))
    assert sorted(two.without_pre) == ["A", "X"]
    assert "RETRY" in two.pre_kept["R"] and "RETRY" in two.pre_kept["W"] and "DAGManJobId" in two.pre_kept["V"]
    assert "own PRE" in two.pre_kept["P"] and "not there" in two.pre_kept["M"]
    nodes = read_dag(two.dag).nodes
    assert set(nodes["A"].scripts) == {"POST"} and set(nodes["R"].scripts) == {"PRE", "POST"}
    # the node's VARS expand its replicas' names at instrument time, as PRE does
    fixed = json.loads(Path(node_fixed_state_path(two.context, "X")).read_text())
    assert fixed["files"] == [str(user / "fixed.out")]
    # one replica: names are DAGMan's business, so only the user's PRE (and a missing file) keep PRE
    one = instrument(user / "w.dag", tmp_path / "one" / "w.dag", InstrumentOptions(policy="fixed:1"))
    assert sorted(one.without_pre) == ["A", "R", "V", "W", "X"] and sorted(one.pre_kept) == ["M", "P"]
    nodes = read_dag(one.dag).nodes
    assert set(nodes["M"].scripts) == {"PRE"}  # PRE's fail-open handles the file that is missing now
    # P: our PRE runs the user's PRE first; the user's POST stays exactly as written (no hook judges one replica)
    assert nodes["P"].scripts["PRE"].executable.endswith("rlrep-pre")
    assert nodes["P"].scripts["PRE"].argv[-3:] == ["--", "prep.sh", "$JOB"]
    assert nodes["P"].scripts["POST"].executable == "prep.sh" and nodes["P"].scripts["POST"].argv == ["prep.sh", "$RETURN"]
    assert one.without_post == ["A", "R", "V", "W", "X", "P", "M"]


def test_always_pre_keeps_the_hooks_on_every_node(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    result = instrument(dag, tmp_path / "run" / "f.dag", InstrumentOptions(policy="fixed:1", always_pre=True))
    assert result.without_pre == []
    for node in JOBS:
        assert set(read_dag(result.dag).nodes[node].scripts) == {"PRE", "POST"}


def test_a_copy_without_hooks_is_still_refused_as_input(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    out = tmp_path / "run" / "f.dag"
    instrument(dag, out, InstrumentOptions(policy="fixed:1"))
    with pytest.raises(DagError, match=r"written by condor-rlrep instrument \(node A runs its submit file .*nodes/A\.sub\); "
                                       r"its source is .*figure1\.dag"):
        instrument(out, tmp_path / "again" / "f.dag", InstrumentOptions(policy="fixed:1"))


def test_the_cli_says_which_nodes_run_without_pre(tmp_path: Path) -> None:
    from condor_rlrep.cli.main import cli

    dag = figure1(tmp_path)
    done = CliRunner().invoke(cli, ["instrument", str(dag), "-o", str(tmp_path / "o" / "f.dag"), "--policy", "fixed:1"])
    assert done.exit_code == 0, done.output
    assert "8 node(s) run without PRE (8 without POST" in done.output
    done = CliRunner().invoke(cli, ["instrument", str(dag), "-o", str(tmp_path / "p" / "f.dag"), "--policy", "fixed:1",
                                    "--always-pre"])
    assert done.exit_code == 0 and "without PRE" not in done.output
    assert re.search(r"SCRIPT PRE A \S+rlrep-pre", (tmp_path / "p" / "f.dag").read_text())


# -- status/report of a copy that runs no hook: from DAGMan's own files ----------

def _history(ends: list[tuple[int, str, int | None]]):
    from condor_rlrep.condor.eventlog import ClusterHistory
    from condor_rlrep.outcome import Invocation

    history = ClusterHistory(cluster=7, node="A", submit_time=100.0)
    for replica, how, code in ends:
        history.procs.add(replica)
        history.invocations.append(Invocation(replica, "slot1@h", 101.0, 110.0 + replica, how, code))
        if how in ("success", "failure"):
            history.exit_codes[replica] = int(code or 0)
            if how == "failure" and history.first_failure_code is None:
                history.first_failure_code = code
        elif how == "removed":
            history.aborted.add(replica)
    return history


def test_a_node_with_no_hook_is_judged_from_its_job_as_dagman_does() -> None:
    from condor_rlrep.runreport.attempts import Attempt, mark_fixed

    won = Attempt("A", chosen="unmodified", history=_history([(0, "success", 0)]))
    lost = Attempt("B", chosen="unmodified", history=_history([(0, "failure", 3)]))
    running = Attempt("C", chosen="unmodified", history=_history([(0, "running", None)]))
    user_post = Attempt("D", chosen="unmodified", history=_history([(0, "success", 0)]))
    two = Attempt("E", chosen="unmodified", history=_history([(0, "success", 0), (1, "removed", None)]))
    pre_ran = Attempt("F", chosen="greedy", mode="replicas", pre_time=99.0, replicas=3, history=_history([(0, "success", 0)]))
    attempts = {"A": [won], "B": [lost], "C": [running], "D": [user_post], "E": [two], "F": [pre_ran]}
    mark_fixed(attempts, {"A": 1, "B": 1, "C": 1, "D": 1, "E": 2}, {"A", "B", "C"})
    assert (won.mode, won.chosen, won.replicas, won.post_code, won.post_time) == ("replicas", "fixed", 1, 0, 110.0)
    assert lost.post_code == 3 and lost.chosen == "fixed"
    assert running.post_code is None  # DAGMan has not judged it yet
    assert user_post.post_code is None  # the user's POST judges it (its 016 event in the node log)
    assert (two.replicas, two.post_code) == (2, None)  # our POST judges a replicated node
    assert (pre_ran.chosen, pre_ran.replicas) == ("greedy", 3)  # a node PRE ran is as PRE said


def test_the_run_of_a_copy_without_pre_is_dagmans() -> None:
    from condor_rlrep.runreport.dagman_out import Session
    from condor_rlrep.runreport.sources import run_from_dagman

    assert run_from_dagman([]) is None
    failed = [Session(100.0, "1", exit_status=1, exited_at=150.0, rescue="w.dag.rescue001"), Session(200.0, "2", exit_status=0)]
    assert run_from_dagman(failed) == {"start": 100.0, "run_id": "1@100", "dagids": ["1", "2"], "from": "dagman.out"}
    # a fresh submission after a success starts a new run, as PRE's run.json would
    assert run_from_dagman([*failed, Session(300.0, "3")])["run_id"] == "3@300"


def test_instrumenting_again_over_a_fixed_copy_leaves_post_no_stale_state(tmp_path: Path) -> None:
    dag = figure1(tmp_path)
    out = tmp_path / "run" / "f.dag"
    result = instrument(dag, out, InstrumentOptions(policy="fixed:2"))
    assert Path(node_fixed_state_path(result.context, "A")).exists()
    # the same output, now for the agent: a PRE that fails open must not let POST judge by fixed:2's state
    instrument(dag, out, InstrumentOptions(store=str(tmp_path / "s.sqlite"), policy="agent"))
    assert not list((Path(result.context) / "nodes").glob("*.fixed.json"))
