"""Fail-open on the real pool where only real DAGMan can say what it passes
(issue 11): a replicated node whose surplus replicas the reaper removed gets
``$RETURN -1002`` with ``$SUCCESS True`` from DAGMan (``TOLERANCE 99%
WAIT``); when the hooks' settings are unusable at POST, the node must still
succeed, as the single job would have."""

from __future__ import annotations

from pathlib import Path

import pytest

from _pool import Pool, hooks_log, write
from test_pool_live import node_clusters, replica_dag

pytestmark = pytest.mark.pool


def test_settings_lost_mid_run_the_replicated_node_still_succeeds(pool: Pool) -> None:
    work = replica_dag(pool, "faults-settings", fast=3)
    write(work / "w.dag", 'JOB A b.sub\nJOB B b.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="30"\n')
    pool.own(work)
    # --always-pre: B's PRE is what meets the lost settings (a fixed policy needs no PRE otherwise)
    pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "fixed:3", "--always-pre", cwd=work)
    dag = work / "run" / "w.rlrep.dag"
    settings = Path(str(dag) + ".rlrep") / "hooks.json"
    pool.submit_dag(dag)
    pool.wait_for(lambda: node_clusters(dag).get("A"), 90, "A's cluster")
    settings.write_text("{ not json")  # after A's PRE, before its POST (and B's PRE)
    assert pool.wait_dag(dag, timeout=240) == 0
    log = hooks_log(dag)
    (post_a,) = [line for line in log if " POST A " in line]
    assert "FAIL-OPEN" in post_a and "exit 0 from $SUCCESS True" in post_a, post_a
    (pre_b,) = [line for line in log if " PRE B " in line]
    assert "FAIL-OPEN" in pre_b  # B runs the user's job unchanged
    (post_b,) = [line for line in log if " POST B " in line]
    assert "exit 0" in post_b
