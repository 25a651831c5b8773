"""Fault injection: every bad input of issue 4 takes the fail-open path, says
what was wrong in the hook log, and leaves the node with the exit code it
would have had without condor-rlrep.

Baseline "without the plugin": the node's single job exits ``code``; DAGMan
(no POST script) concludes ``code`` — so with one replica (an agent allowed
one replica, whose outcome POST must read from the log and record, or a
failed-open PRE) our POST must exit ``code`` whatever goes wrong.
Hooks are called in-process with the exact DAGMan argv (same cwd) for speed;
the real executables are exercised by test_hooks_e2e.py.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from _hookutil import call_script, post_macros, pre_macros
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.dag.parser import read_dag
from condor_rlrep.rundir.layout import node_state_path
from condor_rlrep.instrument import InstrumentOptions, instrument

T0 = 1_780_000_000.0
USER_SUB = "# user's job\nexecutable = /bin/true\narguments = $(rlrep_estimate)\nqueue\n"


class Case:
    def __init__(self, tmp_path: Path, policy: str = "agent", store_timeout: float = 10.0, max_replicas: int = 1):
        self.user = tmp_path / "user"
        self.user.mkdir()
        (self.user / "a.sub").write_text(USER_SUB)
        (self.user / "w.dag").write_text('JOB A a.sub\nJOB B a.sub\nPARENT A CHILD B\nVARS A rlrep_estimate="60"\nVARS B rlrep_estimate="60"\n')
        self.store = tmp_path / "agent.sqlite"
        self.dag = tmp_path / "run" / "w.rlrep.dag"
        self.result = instrument(self.user / "w.dag", self.dag, InstrumentOptions(
            store=str(self.store), policy=policy, store_timeout=store_timeout, max_replicas=max_replicas))
        self.context = Path(self.result.context)
        self.node_log = Path(str(self.dag) + ".nodes.log")
        self.writer = EventLogWriter(self.node_log)
        self.out = Path(read_dag(self.dag).nodes["A"].submit)

    def pre(self, **macros: object) -> int:
        return call_script(self.dag, "A", "PRE", {**pre_macros(), **macros}).returncode

    def job(self, code: int, cluster: int = 7, procs: int = 1, *, complete: bool = True) -> None:
        for proc in range(procs):
            self.writer.submit(cluster, proc, T0, "A")
            self.writer.execute(cluster, proc, T0 + 5, f"h{proc}")
        if complete:
            for proc in range(procs):
                self.writer.terminate(cluster, proc, T0 + 60, exit_code=code if proc == 0 else 0)

    def post(self, ret: int, cluster: int = 7, procs: int = 1, **overrides: object) -> int:
        macros = {**post_macros(cluster, procs, ret), **overrides}
        return call_script(self.dag, "A", "POST", macros).returncode

    def log(self) -> str:
        path = self.context / "hooks.log"
        return path.read_text() if path.exists() else ""


@pytest.mark.parametrize("code", [0, 3])
def test_unreadable_node_log(tmp_path: Path, code: int) -> None:
    case = Case(tmp_path)
    assert case.pre() == 0
    case.node_log.mkdir()  # a directory where the node log should be
    assert case.post(code) == code
    assert "FAIL-OPEN" in case.log() and "node log" in case.log()


@pytest.mark.parametrize("code", [0, 3])
def test_truncated_node_log(tmp_path: Path, code: int) -> None:
    case = Case(tmp_path)
    assert case.pre() == 0
    case.job(code, complete=False)
    case.writer.partial("005 (007.000.000) 2026-01-01 00:00:00 Job terminated.\n\t(1) Normal termination (return val")
    assert case.post(code) == code
    assert "truncated" in case.log()


def test_events_for_unknown_clusters(tmp_path: Path) -> None:
    case = Case(tmp_path)
    assert case.pre() == 0
    case.writer.submit(99, 0, T0, "SOMEONE_ELSE")
    case.writer.terminate(99, 0, T0 + 1, exit_code=0)
    case.job(3)
    case.writer.terminate(555, 0, T0 + 2, exit_code=0)  # never submitted in this log
    assert case.post(3) == 3  # another cluster's success does not count
    # and a $CLUSTERID the log has never seen falls back to $RETURN
    assert case.post(3, cluster=4242) == 3
    assert "no events of cluster 4242" in case.log()


def test_missing_submit_file(tmp_path: Path) -> None:
    case = Case(tmp_path)
    (case.user / "a.sub").unlink()
    assert case.pre() == 0
    assert not case.out.exists()  # DAGMan's submit fails, as it would have without us
    assert "is missing" in case.log()
    # DAGMan then has no job events: $RETURN -1001 (submit failed) -> node fails
    assert case.post(-1001) != 0


def _lock(store: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(store, timeout=0.1, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


@pytest.mark.parametrize("code", [0, 3])
def test_store_locked_at_pre(tmp_path: Path, code: int) -> None:
    case = Case(tmp_path, policy="agent", store_timeout=0.2)
    holder = _lock(case.store)
    try:
        assert case.pre() == 0
    finally:
        holder.rollback()
        holder.close()
    assert case.out.read_text() == USER_SUB  # the user's job, unchanged
    assert "locked" in case.log()
    case.job(code)
    assert case.post(code) == code


def test_store_locked_at_post_spools_the_outcome(tmp_path: Path) -> None:
    case = Case(tmp_path, policy="agent", store_timeout=0.2)
    assert case.pre() == 0
    replicas = int(case.out.read_text().rsplit("queue ", 1)[1])
    case.job(0, procs=replicas)
    holder = _lock(case.store)
    try:
        assert case.post(0, procs=replicas) == 0
    finally:
        holder.rollback()
        holder.close()
    assert "spooled" in case.log()
    assert list((case.context / "spool").iterdir())
    # B's POST (store reachable again) flushes it: the outcome is not lost
    with sqlite3.connect(case.store) as conn:
        assert conn.execute("SELECT reward FROM decisions").fetchone()[0] is None
    assert case.post(0, procs=replicas) == 0
    with sqlite3.connect(case.store) as conn:
        assert conn.execute("SELECT reward FROM decisions").fetchone()[0] is not None
    assert not list((case.context / "spool").iterdir())


@pytest.mark.parametrize("code", [0, 3])
def test_store_corrupt(tmp_path: Path, code: int) -> None:
    case = Case(tmp_path, policy="agent")
    case.store.write_bytes(b"this is not an sqlite database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(case.store) + suffix).unlink(missing_ok=True)
    assert case.pre() == 0
    assert case.out.read_text() == USER_SUB
    assert "FAIL-OPEN" in case.log()
    case.job(code)
    assert case.post(code) == code


def test_dag_changed_between_pre_and_post(tmp_path: Path) -> None:
    case = Case(tmp_path, policy="agent")
    assert case.pre() == 0
    replicas = int(case.out.read_text().rsplit("queue ", 1)[1])
    with open(case.dag, "a") as handle:
        handle.write('VARS B other="1"\n')
    case.job(3, procs=replicas)
    assert case.post(3, procs=replicas) == (3 if replicas == 1 else 0)  # proc 0 fails, others exit 0
    assert "DAG file changed between PRE and POST" in case.log()
    with sqlite3.connect(case.store) as conn:
        assert conn.execute("SELECT reward FROM decisions").fetchone()[0] is not None


def test_node_removed_from_dag_before_pre(tmp_path: Path) -> None:
    case = Case(tmp_path)
    text = case.dag.read_text().replace('VARS A rlrep_estimate="60"', 'VARS A rlrep_estimate="oops"')
    case.dag.write_text(text)
    assert case.pre() == 0
    assert case.out.read_text() == USER_SUB
    assert "FAIL-OPEN" in case.log() and "oops" in case.log()


def test_macros_missing_from_argv(tmp_path: Path) -> None:
    case = Case(tmp_path)
    # an older DAGMan passes an unknown $DAGID through literally
    assert case.pre(**{"$DAGID": "$DAGID"}) == 0
    assert "My.RlrepReplicas = 1" in case.out.read_text()
    assert "DAGMan did not substitute" in case.log()
    case.job(3)
    assert case.post(3, **{"$CLUSTERID": "$CLUSTERID", "$RETURN": "$RETURN"}) == 3  # cluster found from the log
    # no log and no usable $RETURN: $SUCCESS decides
    case.node_log.unlink()
    assert case.post(0, **{"$RETURN": "$RETURN", "$SUCCESS": "True"}) == 0
    assert case.post(0, **{"$RETURN": "$RETURN", "$SUCCESS": "False"}) == 1


def test_argv_without_context(tmp_path: Path) -> None:
    from condor_rlrep.hooks.post import run_post
    from condor_rlrep.hooks.pre import run_pre

    assert run_pre(["--job=A"]) == 0
    assert run_post(["--return=4"]) == 4
    assert run_post(["--macros=return", "--", "4"]) == 4
    assert run_post([]) == 1


def test_corrupt_settings_and_cache(tmp_path: Path) -> None:
    case = Case(tmp_path)
    cached = list((case.context / "cache").glob("plan-*/meta.marshal"))
    assert cached
    for meta in cached:
        meta.write_bytes(b"\x00garbage")
    assert case.pre() == 0 and "My.RlrepReplicas" in case.out.read_text()  # cache rebuilt
    (case.context / "hooks.json").write_text("{ not json")
    assert case.pre() == 0
    assert case.out.read_text() == USER_SUB
    case.job(3)
    assert case.post(3) == 3


def test_truncated_plan_data_fails_open(tmp_path: Path) -> None:
    case = Case(tmp_path)
    (data,) = (case.context / "cache").glob("plan-*/nodes.marshal")
    data.write_bytes(data.read_bytes()[:3])
    assert case.pre() == 0
    assert case.out.read_text() == USER_SUB  # the user's job as is
    assert "FAIL-OPEN" in case.log() and "plan cache" in case.log()


def test_user_pre_failure_is_passed_through(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(USER_SUB)
    (user / "check.sh").write_text("#!/bin/sh\necho \"$@\" > pre.args\nexit $1\n")
    os.chmod(user / "check.sh", 0o755)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="6"\nSCRIPT PRE A check.sh 4 $JOB\n')
    dag = tmp_path / "run" / "w.dag"
    instrument(user / "w.dag", dag, InstrumentOptions(policy="fixed:2"))
    assert call_script(dag, "A", "PRE", pre_macros()).returncode == 4
    assert (user / "pre.args").read_text().split() == ["4", "A"]  # ran in the node dir with macros
    assert not Path(node_state_path(str(dag) + ".rlrep", "A")).exists()


def test_user_post_decides_last_with_single_job_values(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text(USER_SUB)
    (user / "post.sh").write_text("#!/bin/sh\necho \"$@\" > post.args\n[ \"$1\" = 0 ] && exit 0\nexit 9\n")
    os.chmod(user / "post.sh", 0o755)
    (user / "w.dag").write_text('JOB A a.sub\nVARS A rlrep_estimate="6"\nSCRIPT POST A post.sh $RETURN $JOB $SUCCESS\n')
    dag = tmp_path / "run" / "w.dag"
    instrument(user / "w.dag", dag, InstrumentOptions(policy="fixed:3", always_pre=True))
    assert call_script(dag, "A", "PRE", pre_macros()).returncode == 0
    writer = EventLogWriter(Path(str(dag) + ".nodes.log"))
    for proc in range(3):
        writer.submit(7, proc, T0, "A")
    writer.terminate(7, 0, T0 + 9, exit_code=0)
    writer.remove(7, 1, T0 + 10, running=False)
    writer.remove(7, 2, T0 + 10, running=False)
    # DAGMan says -1002 (surplus removed); the user's POST sees what one job would give
    assert call_script(dag, "A", "POST", post_macros(7, 3, -1002, success=False)).returncode == 0
    assert (user / "post.args").read_text().split() == ["0", "A", "True"]


def test_reaper_flushes_spooled_outcomes_at_the_end(tmp_path: Path) -> None:
    from condor_rlrep.hooks.reaper import run_reaper

    case = Case(tmp_path, policy="agent", store_timeout=0.2)
    assert case.pre() == 0
    replicas = int(case.out.read_text().rsplit("queue ", 1)[1])
    case.job(0, procs=replicas)
    holder = _lock(case.store)
    try:
        assert case.post(0, procs=replicas) == 0
    finally:
        holder.rollback()
        holder.close()
    (case.context / "reaper.stop").write_text("")

    class NoSchedd:
        def act(self, *args, **kwargs):
            return {}

    assert run_reaper([f"--ctx={case.context}"], schedd=NoSchedd(), sleep=lambda s: None) == 0
    assert not list((case.context / "spool").iterdir())
    with sqlite3.connect(case.store) as conn:
        assert conn.execute("SELECT reward FROM decisions").fetchone()[0] is not None
    assert "spooled outcome(s)/model update(s) recorded" in case.log()


def test_an_outcome_spooled_at_the_end_is_reported_by_status_and_flushed_by_agent_flush(tmp_path: Path) -> None:
    """Issue 23 item 7: the store is unavailable for the run's last POST and
    no rescue follows: status says what waits in the spool, and
    `agent flush` records it once the store is back (no decision left pending)."""
    import json
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "condor-rlrep")

    def rlrep(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([cli, *args], capture_output=True, text=True, timeout=120, check=False)

    case = Case(tmp_path, policy="agent", store_timeout=0.2)
    assert case.pre() == 0
    case.job(0)
    holder = _lock(case.store)
    try:
        assert case.post(0) == 0  # the verdict does not wait for the store
        # the store is still away when the run ends: the flush cannot reach it either
        flushed = rlrep("agent", "flush", str(case.dag))
        assert flushed.returncode == 1 and "locked" in flushed.stderr, flushed.stderr
    finally:
        holder.rollback()
        holder.close()
    status = rlrep("status", str(case.dag), "--json")
    assert status.returncode == 0, status.stderr
    (warning,) = [w for w in json.loads(status.stdout)["warnings"] if "spool" in w]
    assert warning.startswith("1 outcome(s)/model update(s) wait in") and "agent flush" in warning
    with sqlite3.connect(case.store) as conn:
        assert conn.execute("SELECT reward FROM decisions").fetchall() == [(None,)]
    flushed = rlrep("agent", "flush", str(case.dag))
    assert flushed.returncode == 0 and flushed.stdout.startswith("1 spooled outcome(s)"), flushed.stdout + flushed.stderr
    with sqlite3.connect(case.store) as conn:
        (reward,) = conn.execute("SELECT reward FROM decisions").fetchone()
    assert reward == 1.0  # one replica, in time, nothing wasted
    status = rlrep("status", str(case.dag), "--json")
    assert not [w for w in json.loads(status.stdout)["warnings"] if "spool" in w]
    again = rlrep("agent", "flush", str(case.dag), "--json")
    assert json.loads(again.stdout)["flushed"] == 0
