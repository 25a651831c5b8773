"""model:R under real condor_dagman (HTCondor 25.14, ``../shared/htcondor``).

A two-node chain A → B under ``--policy model:3``: with an empty model A
gets two replicas (the prior alone); one is vacated (``condor_vacate_job``,
an eviction as an owner's return causes); POST records A's runs in the
store's survival model, the eviction among them and each run's
``KeyboardIdle`` read from the node log; B's PRE then decides from that
model (three replicas when B is decided in the same hour of the week).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _pool import Pool, hooks_log, write
from condor_rlrep.store import SqliteStore
from condor_rlrep.agent.state import StateSpace
from condor_rlrep.survival.live import exposure_cells
from condor_rlrep.condor.eventlog import cluster_nodes, read_events, rebuild_cluster
from condor_rlrep.survival.model import SurvivalModel, choose_replicas

pytestmark = pytest.mark.pool


def _clusters(dag: Path) -> dict[str, list[int]]:
    log = Path(str(dag) + ".nodes.log")
    if not log.exists():
        return {}
    found: dict[str, list[int]] = {}
    for cluster, name in cluster_nodes(read_events(log)).items():
        found.setdefault(name, []).append(cluster)
    return found


def _idle_logged(log: Path, cluster: int) -> dict[tuple[int, float], float]:
    return rebuild_cluster(read_events(log), cluster).keyboard_idle if log.exists() else {}


def _running(pool: Pool, cluster: int) -> list[int]:
    out = pool.check(["condor_q", str(cluster), "-af", "ProcId", "JobStatus"], cwd=pool.work)
    return [int(p) for p, s in (line.split() for line in out.splitlines() if line.strip()) if s == "2"]


def test_a_vacated_replica_is_learnt_and_the_next_decision_uses_it(pool: Pool) -> None:
    work = pool.workdir("model")
    write(work / "j.sub", "executable = /bin/sleep\narguments = 30\nlog = j.log\nrequest_memory = 32MB\n"
          "request_disk = 1MB\nqueue\n")
    write(work / "w.dag", 'JOB A j.sub\nJOB B j.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="30"\n')
    store = work / "agent.sqlite"
    # Runs of 30 s at the prior's 1/8 h: s = 0.99896, so a target of 0.99999 takes two; once A's
    # eviction is in (about a minute of runs), three. hi = 5 and φ = 2: B, decided after A, is
    # neither late nor given a rerun's slack (φ′ within [0, 5)) however long DAGMan takes.
    out = pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--policy", "model:3,target=0.99999,hi=5",
                     "--phi", "2", "--store", str(store), cwd=work)
    assert "created now" in out
    dag = work / "run" / "w.rlrep.dag"
    pool.submit_dag(dag)
    cluster = pool.wait_for(lambda: next(iter(_clusters(dag).get("A", [])), None), 90, "A's cluster")
    pool.wait_for(lambda: _running(pool, cluster) == [0, 1], 90, "A's two replicas running")
    # vacate only once replica 1's run is in the logs (a vacate before its
    # execute event is logged leaves an eviction with no run to learn from)
    pool.wait_for(lambda: len(_idle_logged(work / "j.log", cluster)) == 2, 60, "both runs' KeyboardIdle in j.log")
    pool.check(["condor_vacate_job", f"{cluster}.1"], cwd=work)
    assert pool.wait_dag(dag, timeout=300) == 0

    context = Path(str(dag) + ".rlrep")
    state_a = json.loads((context / "state" / "A.json").read_text())
    assert state_a["replicas"] == 2 and state_a["model"]["reason"] == "target", state_a
    assert state_a["model"]["hour_evictions"] == 0
    history = rebuild_cluster(read_events(str(dag) + ".nodes.log"), cluster)
    assert history.evictions == 1 and history.winner == 0
    # the job's own log has each run's KeyboardIdle (job_machine_attrs + job_ad_information_attrs);
    # DAGMan's node log never has it
    starts = {(inv.replica, inv.start) for inv in history.invocations}
    assert history.keyboard_idle == {}
    assert set(_idle_logged(work / "j.log", cluster)) == starts, history.invocations
    assert state_a["model"]["job_log"] == str(work / "j.log")

    with SqliteStore(store) as opened:
        cells = opened.survival_cells()
    assert sum(c[3] for c in cells) == 1.0, cells  # the vacate: one eviction, the rest censored
    (cluster_b,) = _clusters(dag)["B"]
    history_b = rebuild_cluster(read_events(str(dag) + ".nodes.log"), cluster_b)
    exposure = sum(inv.end - inv.start for h in (history, history_b) for inv in h.invocations)
    assert sum(c[2] for c in cells) == pytest.approx(exposure)  # A's runs and then B's
    assert all(c[1] >= 0 for c in cells), cells  # every run's idle bucket was known
    post_a = [line for line in hooks_log(dag) if " POST A " in line]
    assert len(post_a) == 1 and "1 eviction(s)" in post_a[0] and "FAIL-OPEN" not in post_a[0], post_a

    state_b = json.loads((context / "state" / "B.json").read_text())
    hour_b = state_b["model"]["hour_of_week"]
    assert 0.0 <= state_b["phi_prime"] < 5.0, state_b
    # what B saw: A's runs only (B's own came after its decision)
    cells_a = exposure_cells(history.invocations, _idle_logged(work / "j.log", cluster),
                             StateSpace().hour_of_week, SurvivalModel().bucket)
    expected = choose_replicas(SurvivalModel.from_cells(cells_a), hour_b, state_b["phi_prime"], 30.0, [None] * 3,
                               target=0.99999, hi=5.0)
    assert state_b["replicas"] == expected.replicas
    if hour_b in {c[0] for c in cells_a}:  # B decided in the hour of A's runs (not across an hour's turn)
        assert state_b["model"]["hour_evictions"] == 1 and state_b["replicas"] == 3, state_b
    assert "FAIL-OPEN" not in "\n".join(hooks_log(dag))


def test_the_default_on_a_new_store_is_model_3_and_stays_so(pool: Pool) -> None:
    """`instrument` without --policy on a new store (issue 27 part 2): model:3,
    which at the prior rate gives a node estimated at 30 min two replicas
    from the first run; the run records survival runs, no bandit decision,
    so instrumenting again still chooses model:3."""
    work = pool.workdir("default")
    write(work / "j.sub", "executable = /bin/sleep\narguments = 3\nlog = j.log\nrequest_memory = 32MB\n"
          "request_disk = 1MB\nqueue\n")
    write(work / "w.dag", 'JOB A j.sub\nJOB B j.sub\nPARENT A CHILD B\nVARS ALL_NODES rlrep_estimate="1800"\n')
    store = work / "agent.sqlite"
    out = pool.rlrep("instrument", "w.dag", "-o", "run/w.rlrep.dag", "--phi", "0.5", "--store", str(store), cwd=work)
    assert "policy model:3 from default (a new store)" in out and "created now" in out
    dag = work / "run" / "w.rlrep.dag"
    assert json.loads((Path(str(dag) + ".rlrep") / "hooks.json").read_text())["policy"] == "model:3"
    pool.submit_dag(dag)
    assert pool.wait_dag(dag, timeout=300) == 0
    state_a = json.loads((Path(str(dag) + ".rlrep") / "state" / "A.json").read_text())
    # 1800 s at 1/8 h: one replica survives with 0.939 < 0.95, two with 0.996
    assert state_a["replicas"] == 2 and state_a["model"]["reason"] == "target", state_a
    with SqliteStore(store) as opened:
        stats = opened.stats()
    assert stats.decisions == 0 and stats.survival_cells > 0
    again = pool.rlrep("instrument", "w.dag", "-o", "run2/w.rlrep.dag", "--phi", "0.5", "--store", str(store), cwd=work)
    assert "policy model:3 from default (the store's agent has learnt nothing" in again
    assert "existing (model:R's survival model: " in again
    assert "FAIL-OPEN" not in "\n".join(hooks_log(dag))
