"""The plugin under real condor_dagman (HTCondor 25.14, ``../shared/htcondor``).

Every test here submits an instrumented DAG to a personal pool and checks
what DAGMan, the schedd and the hooks did: the store, the node log, the
``.dagman.out``, the files the jobs wrote. The hooks are the installed
console scripts in a venv the pool user owns (see ``_pool.py``).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from _pool import REPO, Pool, dagman_out, hooks_log, write
from condor_rlrep.condor.eventlog import ABORTED, EVICTED, TERMINATED, cluster_nodes, read_events, rebuild_cluster

pytestmark = pytest.mark.pool

FIGURE1 = REPO / "examples" / "figure1"
BAD_DAGMAN_LINES = re.compile(r"BAD EVENT|unexpected job event|Warning for node|Warning checking|ERROR:")


def decisions(store: Path) -> list[dict]:
    with sqlite3.connect(store) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute("SELECT id, action, phi_prime, context, reward, outcome FROM decisions ORDER BY id").fetchall()
    out = []
    for row in rows:
        item = dict(row)
        item["context"] = json.loads(item["context"]) if item["context"] else {}
        item["outcome"] = json.loads(item["outcome"]) if item["outcome"] else None
        out.append(item)
    return out


def node_clusters(dag: Path) -> dict[str, list[int]]:
    events = read_events(str(dag) + ".nodes.log")
    clusters: dict[str, list[int]] = {}
    for cluster, name in cluster_nodes(events).items():
        clusters.setdefault(name, []).append(cluster)
    return clusters


def figure1(pool: Pool, name: str, seconds: int) -> Path:
    """examples/figure1 with tasks of ``seconds`` instead of 32 minutes."""
    work = pool.workdir(name)
    shutil.copy(FIGURE1 / "task.sub", work / "task.sub")
    text = (FIGURE1 / "figure1.dag").read_text().replace('"1920"', f'"{seconds}"')
    write(work / "figure1.dag", text)
    pool.own(work)
    return work


def clean_dagman_out(dag: Path) -> list[str]:
    """Lines of .dagman.out that a clean run must not have (the loopback
    warning of a personal pool is not DAGMan's)."""
    return [line for line in dagman_out(dag).splitlines() if BAD_DAGMAN_LINES.search(line)]


def test_figure1_runs_to_the_end_with_every_node_decided_and_recorded_once(pool: Pool) -> None:
    work = figure1(pool, "figure1", 4)
    store = work / "state" / "agent.sqlite"
    # the store comes from the environment of `instrument`, which DAGMan never passes to the hooks
    out = pool.rlrep("instrument", "figure1.dag", "-o", "run/figure1.rlrep.dag", "--phi", "1.0",
                     cwd=work, env={"CONDOR_RLREP_STORE": str(store)})
    assert f"agent store: {store} (created now)" in out
    dag = work / "run" / "figure1.rlrep.dag"
    settings = json.loads((Path(str(dag) + ".rlrep") / "hooks.json").read_text())
    assert settings["store"] == str(store) and settings["max_replicas"] == 3
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=300) == 0

    rows = decisions(store)
    nodes = [row["context"]["node"] for row in rows]
    assert sorted(nodes) == list("ABCDEFGH")  # every task decided once; S and T are NOOP
    assert all(row["reward"] is not None for row in rows)  # and recorded
    assert all(1 <= row["action"] <= 3 for row in rows)
    events = read_events(str(dag) + ".nodes.log")
    owners = cluster_nodes(events)
    for row in rows:
        (cluster,) = [c for c, n in owners.items() if n == row["context"]["node"]]
        history = rebuild_cluster(events, cluster)
        outcome = row["outcome"]
        assert len(history.procs) == row["action"]
        assert outcome["completed"] and outcome["winner"] == history.winner
        won = [inv for inv in history.invocations if inv.replica == history.winner and inv.ended_by == "success"][0]
        # s_t is the cluster's submit event; energy is run time x the default 75 W
        assert outcome["duration"] == pytest.approx(won.end - history.submit_time)
        assert outcome["good_energy_j"] == pytest.approx(won.seconds * 75.0)
        bad = sum(inv.seconds for inv in history.invocations if inv is not won) * 75.0
        assert outcome["bad_energy_j"] == pytest.approx(bad)
    log = "\n".join(hooks_log(dag))
    assert "FAIL-OPEN" not in log
    assert "REAPER - stopped (all 8 replicable node(s) finished)" in log
    # the SERVICE node ended by itself: DAGMan did not have to remove it
    assert clean_dagman_out(dag) == []
    assert "Node RLREP_REAPER job proc (" in dagman_out(dag)
    # every node's output under the user's own name, no replica leftovers
    names = sorted(p.name for p in work.iterdir() if p.suffix in (".out", ".err") or ".rlrep-" in p.name)
    assert not [n for n in names if ".rlrep-" in n]
    assert len([n for n in names if n.endswith(".out")]) == 8
