"""s(W) across retries and rescue runs; the per-DAG plan cache; argv parsing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _hookutil import FIGURE1
from condor_rlrep.workflowplan import plan_workflow
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.estimates import resolve_estimates
from condor_rlrep.dag.nxgraph import build_graph
from condor_rlrep.rundir import plan as cache_module
from condor_rlrep.hooks.argv import parse_hook_argv
from condor_rlrep.rundir.plan import load_plan
from condor_rlrep.rundir.layout import HookSettings, node_file_stem
from condor_rlrep.rundir.runstate import workflow_start


def test_workflow_start_is_kept_across_retry_and_rescue(tmp_path: Path) -> None:
    dag = tmp_path / "w.dag"
    dag.write_text("")
    ctx = str(tmp_path)
    first = workflow_start(ctx, str(dag), "10", now=1000.0)
    assert (first.start, first.continued) == (1000.0, False)
    assert workflow_start(ctx, str(dag), "10", now=2000.0).start == 1000.0  # same DAGMan (retries, other nodes)
    assert workflow_start(ctx, str(dag), None, now=2500.0).start == 1000.0  # no $DAGID: continue
    # a new DAGMan without a rescue file: a new run
    fresh = workflow_start(ctx, str(dag), "11", now=3000.0)
    assert (fresh.start, fresh.continued) == (3000.0, False)
    # the run fails, DAGMan writes a rescue DAG, the user resubmits: the same
    # run, resumed on schedule (issue 23 item 12): the node that starts the
    # rescue is planned 300 s after s(W), so s(W) = 4000 - 300
    rescue = tmp_path / "w.dag.rescue001"
    rescue.write_text("DONE A\n")
    os.utime(rescue, (3500.0, 3500.0))
    rescued = workflow_start(ctx, str(dag), "12", now=4000.0, resume_at=lambda: 300.0)
    assert (rescued.start, rescued.continued, rescued.dagids) == (3700.0, True, ["11", "12"])
    assert workflow_start(ctx, str(dag), "12", now=4100.0).start == 3700.0  # the rescue's other PREs
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["first_start"] == 3000.0 and record["resumed"] == [{"dagid": "12", "at": 4000.0, "start": 3700.0}]
    # a second rescue whose plan cannot be read starts its clock at its first PRE
    os.utime(rescue, (4500.0, 4500.0))
    assert workflow_start(ctx, str(dag), "14", now=6000.0, resume_at=lambda: 1 / 0).start == 6000.0
    # condor_submit_dag -force renames rescue files away: a new run again
    rescue.rename(tmp_path / "w.dag.rescue001.old")
    assert workflow_start(ctx, str(dag), "13", now=5000.0).start == 5000.0


def test_corrupt_run_file_starts_a_new_run(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text("{broken")
    assert workflow_start(str(tmp_path), str(tmp_path / "w.dag"), "1", now=7.0).start == 7.0


def test_plan_cache_is_built_once_per_dag_content(tmp_path: Path, monkeypatch) -> None:
    dag = tmp_path / "fig.dag"
    dag.write_text(FIGURE1.read_text())
    settings = HookSettings(dag=str(dag))
    plan = load_plan(str(tmp_path), settings)
    assert plan.critical_path_seconds == 4 * 1920.0
    assert plan.node("A") == (1920.0, 4 * 1920.0, 3 * 1920.0, 0.0)
    assert plan.node("H") == (1920.0, 1920.0, 0.0, 3 * 1920.0)

    def boom(*args, **kwargs):
        raise AssertionError("rebuilt although the DAG did not change")

    monkeypatch.setattr(cache_module, "_build", boom)
    assert load_plan(str(tmp_path), settings).nodes == plan.nodes
    monkeypatch.undo()
    dag.write_text(FIGURE1.read_text().replace('VARS H rlrep_estimate="1920"', 'VARS H rlrep_estimate="100"'))
    changed = load_plan(str(tmp_path), settings)
    assert changed.key != plan.key and changed.node("H")[0] == 100.0
    with pytest.raises(KeyError, match="nope"):
        changed.node("nope")


_PLANS: dict[str, object] = {}


def _figure1_plans(tmp_path_factory) -> tuple[object, object]:
    if not _PLANS:
        ctx = tmp_path_factory.mktemp("c")
        dag = ctx / "fig.dag"
        dag.write_text(FIGURE1.read_text())
        _PLANS["cached"] = load_plan(str(ctx), HookSettings(dag=str(dag)))
        workflow = read_dag(dag)
        _PLANS["graph"] = build_graph(workflow, resolve_estimates(workflow))
    return _PLANS["cached"], _PLANS["graph"]


@settings(max_examples=30, deadline=None)
@given(phi=st.floats(0.0, 3.0), offset=st.floats(-5000, 20000), node=st.sampled_from("ABCDEFGH"),
       mode=st.sampled_from(["balanced", "current"]))
def test_cached_criticality_equals_criticality_module(tmp_path_factory, phi: float, offset: float, node: str, mode: str) -> None:
    """The cached plan (built on the compact graph, stored with marshal) gives
    the φ′/φ″ of a WorkflowPlan computed afresh on the networkx graph, exactly."""
    cached, graph = _figure1_plans(tmp_path_factory)
    reference = plan_workflow(graph, phi, start=1000.0)
    got = cached.criticality(node, phi=phi, start=1000.0, submit_time=1000.0 + offset, mode=mode)
    assert got == reference.criticality(node, 1000.0 + offset, mode)


def test_pre_criticality_is_the_criticality_module(tmp_path_factory, monkeypatch) -> None:
    """One φ′ implementation: the hook calls condor_rlrep.criticality's functions."""
    from condor_rlrep import criticality

    cached, _ = _figure1_plans(tmp_path_factory)
    calls = []
    monkeypatch.setattr(criticality, "deadline", lambda phi, cr, start: calls.append((phi, cr, start)) or 99.0)
    monkeypatch.setattr(criticality, "phi_prime", lambda d, s, rem: calls.append((d, s, rem)) or 0.25)
    monkeypatch.setattr(criticality, "phi_double_prime", lambda d, s, e, tail: calls.append((d, s, e, tail)) or 0.75)
    assert cached.criticality("A", phi=1.0, start=10.0, submit_time=20.0) == 0.25
    assert cached.criticality("A", phi=1.0, start=10.0, submit_time=20.0, mode="current") == 0.75
    cr = 4 * 1920.0
    assert calls == [(1.0, cr, 10.0), (99.0, 20.0, cr), (1.0, cr, 10.0), (99.0, 20.0, 1920.0, 3 * 1920.0)]


def test_argv_parsing_tolerates_dagman_quirks() -> None:
    argv = ["--ctx=/c", "--macros=job,dagid,retry,cluster", "--user-args=2", "--", "A", "$DAGID", "x1", "7", "--", "x", "--y"]
    args = parse_hook_argv(argv)
    assert args.text("ctx") == "/c" and args.integer("cluster") == 7 and args.text("job") == "A"
    assert args.text("dagid") is None and args.integer("retry") is None
    assert args.user_argv == ["x", "--y"]
    assert any("did not substitute" in p for p in args.problems) and any("not an integer" in p for p in args.problems)
    # a macro token lost on the way: the macros are not trusted, the user's script still is
    lost = parse_hook_argv([t for t in argv if t != "7"])
    assert lost.text("job") is None and lost.user_argv == ["x", "--y"] and any("macros ignored" in p for p in lost.problems)


def test_node_file_stem_is_injective_and_safe() -> None:
    names = ["A", "a", "A+B", "A%2BB", ".hidden", "x/y", "ünï"]
    stems = [node_file_stem(n) for n in names]
    assert len(set(stems)) == len(stems)
    assert all("/" not in s and not s.startswith(".") for s in stems)


def test_hook_cli_keeps_the_user_script_separator() -> None:
    import subprocess
    import sys

    exe = str(Path(sys.executable).parent / "condor-rlrep")
    chained = subprocess.run([exe, "hook", "post", "--return=5", "--", "/bin/sh", "-c", "exit 0"],
                             stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    assert chained.returncode == 0  # the user's POST decides last
    from click.testing import CliRunner

    from condor_rlrep.cli.main import cli

    assert CliRunner().invoke(cli, ["hook", "post", "--return=4"]).exit_code == 4


def test_plan_of_the_instrumented_copy_equals_the_original(tmp_path: Path) -> None:
    from condor_rlrep.instrument import InstrumentOptions, instrument

    result = instrument(FIGURE1, tmp_path / "o" / "f.dag", InstrumentOptions(policy="single"))
    copy = load_plan(result.context, HookSettings.load(result.context))
    original = tmp_path / "orig.dag"
    original.write_text(FIGURE1.read_text())
    assert copy.nodes == load_plan(str(tmp_path), HookSettings(dag=str(original))).nodes
    assert copy.critical_path_seconds == 4 * 1920.0
