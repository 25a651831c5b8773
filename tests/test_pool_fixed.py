"""Fixed policies on a real pool without PRE (instrument wrote the replica
descriptions): figure1 with fixed:1 runs no hook at all, with fixed:2 only
POST and the reaper; replicas, outcomes, files and status/report are right."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from _pool import Pool, dagman_out, hooks_log
from condor_rlrep.condor.eventlog import cluster_nodes, read_events, rebuild_cluster
from test_pool_live import clean_dagman_out, figure1

pytestmark = pytest.mark.pool

JOBS = list("ABCDEFGH")


def _rlrep(*args: str) -> dict:
    done = subprocess.run([str(Path(sys.executable).parent / "condor-rlrep"), *args, "--json"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _run(pool: Pool, name: str, policy: str) -> tuple[Path, Path]:
    work = figure1(pool, name, 3)
    out = pool.rlrep("instrument", "figure1.dag", "-o", "run/figure1.rlrep.dag", "--policy", policy, cwd=work)
    assert "8 node(s) run without PRE" in out
    dag = work / "run" / "figure1.rlrep.dag"
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=300) == 0
    return work, dag


def _histories(dag: Path) -> dict:
    events = read_events(str(dag) + ".nodes.log")
    owners = cluster_nodes(events)
    return {node: rebuild_cluster(events, cluster) for cluster, node in owners.items() if node in JOBS}


def _check_status_and_report(work: Path, dag: Path, replicas: int) -> None:
    status = _rlrep("status", str(dag))
    assert status["dagman"] == "exited 0"
    nodes = {n["node"]: n for n in status["nodes"]}
    assert set(nodes) == {"S", *JOBS, "T"}
    for name in JOBS:
        node = nodes[name]
        assert node["state"] == "done" and node["winner"] is not None, node
        assert node["decided"] == replicas and node["chosen"] == "fixed", node
    report = _rlrep("report", str(dag), "-o", str(work / "report"))
    assert report, "report --json printed nothing"


def test_figure1_fixed1_runs_with_no_hook(pool: Pool) -> None:
    work, dag = _run(pool, "fixed1-nopre", "fixed:1")
    text = dag.read_text()
    assert "SCRIPT" not in text and "RLREP_REAPER" not in text
    histories = _histories(dag)
    assert sorted(histories) == JOBS
    for node, history in histories.items():
        assert history.procs == {0} and history.winner == 0, node
    assert hooks_log(dag) == []  # nothing of ours ran
    assert "Running PRE script" not in dagman_out(dag) and "Running POST script" not in dagman_out(dag)
    assert clean_dagman_out(dag) == []
    assert len(list(work.glob("*.out"))) == 8 and not list(work.glob("*.rlrep-*"))
    _check_status_and_report(work, dag, 1)


def test_figure1_fixed2_runs_post_and_the_reaper_only(pool: Pool) -> None:
    work, dag = _run(pool, "fixed2-nopre", "fixed:2")
    histories = _histories(dag)
    assert sorted(histories) == JOBS
    for node, history in histories.items():
        assert history.procs == {0, 1} and history.winner is not None, node
    log = hooks_log(dag)
    assert not [line for line in log if " PRE " in line] and not [line for line in log if "FAIL-OPEN" in line]
    posts = {line.split()[2]: line for line in log if " POST " in line}
    assert sorted(posts) == JOBS
    for node, line in posts.items():
        assert "exit 0" in line and "replicas=2" in line and "(fixed policy, no PRE: nothing to record)" in line, line
        assert f"winner={histories[node].winner}" in line and "promoted" in line, line
    assert "Running PRE script" not in dagman_out(dag)
    assert "REAPER - stopped (all 8 replicable node(s) finished)" in "\n".join(log)
    assert clean_dagman_out(dag) == []
    # the winner's files under the user's names, the loser's gone
    outs = sorted(p.name for p in work.glob("*.out"))
    assert len(outs) == 8 and not list(work.glob("*.rlrep-*")), outs
    _check_status_and_report(work, dag, 2)
