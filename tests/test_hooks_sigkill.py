"""SIGKILL of a hook at any point, then what DAGMan does next (issue 11).

A PRE or POST killed by a signal fails its node's attempt; DAGMan retries
the node (PRE with ``$RETRY`` + 1, a new cluster, POST) or, without RETRY,
writes a rescue DAG whose run does the same. Here 100 real ``rlrep-pre`` /
``rlrep-post`` processes are killed after a random delay (uniform over a
hook's measured lifetime), each followed by the node's next attempt run to
the end. Afterwards: the store passes SQLite's integrity check, no decision
is pending, every closed decision was learnt from exactly once, and no
scratch file of ours is left in the run directory.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from _hookutil import script_argv, substitute
from condor_rlrep.store.sqlite import SqliteStore
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.rundir.layout import node_submit_path
from condor_rlrep.instrument import InstrumentOptions, instrument

KILLS = int(os.environ.get("RLREP_SIGKILLS", "100"))
NODES = 10
T0 = 1_780_000_000.0


def trained(path: Path, prefer: int) -> Path:
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig

    agent = Agent(AgentConfig(max_replicas=3, schedule="fixed", epsilon_low=0.0), rng=0)
    for state in range(agent.n_states):
        agent.learn(state, prefer, 1.0)
    SqliteStore.save_agent(str(path), agent)
    return path


class Dag:
    def __init__(self, tmp: Path):
        user = tmp / "user"
        user.mkdir()
        (user / "a.sub").write_text("executable = /bin/true\noutput = o.$(JOB).out\nqueue\n")
        (user / "w.dag").write_text("".join(f'JOB N{i} a.sub\nVARS N{i} rlrep_estimate="60"\n' for i in range(NODES)))
        self.store = trained(tmp / "agent.sqlite", 3)
        self.dag = tmp / "run" / "w.dag"
        self.context = Path(instrument(user / "w.dag", self.dag, InstrumentOptions(
            store=str(self.store), dagman_version=(25, 14, 0))).context)
        self.writer = EventLogWriter(Path(str(self.dag) + ".nodes.log"))
        self.scripts = {(f"N{i}", kind): script_argv(self.dag, f"N{i}", kind)
                        for i in range(NODES) for kind in ("PRE", "POST")}
        self.attempt = {f"N{i}": 0 for i in range(NODES)}
        self.cluster = 100

    def argv(self, node: str, kind: str, ret: int = 0, success: str = "True") -> tuple[list[str], str]:
        argv, cwd = self.scripts[(node, kind)]
        macros = {"$JOB": node, "$RETRY": self.attempt[node], "$MAX_RETRIES": 1000, "$DAGID": 1,
                  "$JOBID": f"{self.cluster}.0", "$CLUSTERID": self.cluster, "$RETURN": ret, "$SUCCESS": success}
        return substitute(argv, macros), cwd

    def in_process(self, node: str, kind: str, **post: object) -> int:
        from condor_rlrep.hooks.post import run_post
        from condor_rlrep.hooks.pre import run_pre

        full, cwd = self.argv(node, kind, **post)  # type: ignore[arg-type]
        old = os.getcwd()
        os.chdir(cwd)
        try:
            return (run_pre if kind == "PRE" else run_post)(full[1:])
        finally:
            os.chdir(old)

    def job(self, node: str) -> tuple[int, str]:
        """The cluster the node's submit file queues: proc 0 wins, the rest are removed."""
        self.cluster += 1
        text = Path(node_submit_path(str(self.context), node)).read_text()
        procs = int(text.rsplit("queue", 1)[1].split()[0]) if text.rsplit("queue", 1)[1].split() else 1
        for proc in range(procs):
            self.writer.submit(self.cluster, proc, T0, node)
            self.writer.execute(self.cluster, proc, T0 + 1, f"h{proc}")
        self.writer.terminate(self.cluster, 0, T0 + 30, exit_code=0)
        for proc in range(1, procs):
            self.writer.remove(self.cluster, proc, T0 + 31)
        return (0 if procs == 1 else -1002), "True"

    def spawn(self, node: str, kind: str, **post: object) -> subprocess.Popen[bytes]:
        full, cwd = self.argv(node, kind, **post)  # type: ignore[arg-type]
        return subprocess.Popen(full, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)


def lifetime(dag: Dag) -> float:
    """How long one real hook process lives here (now, on this machine)."""
    started = time.monotonic()
    dag.spawn("N0", "PRE").wait(timeout=120)
    return time.monotonic() - started


@pytest.mark.slow
def test_sigkill_at_any_point_then_dagman_runs_the_next_attempt(tmp_path: Path) -> None:
    dag = Dag(tmp_path)
    rng = random.Random(11)
    life = lifetime(dag)
    dag.attempt["N0"] += 1  # that PRE ran to the end: its decision is closed by the next attempt's PRE
    with SqliteStore(str(dag.store)) as store:
        learnt_before = store.stats().rewards_seen
    kills = rounds = 0
    while kills < KILLS:
        node = f"N{rounds % NODES}"
        rounds += 1
        victim = rng.choice(["PRE", "POST"])
        if victim == "POST":
            assert dag.in_process(node, "PRE") == 0
            ret, success = dag.job(node)
            proc = dag.spawn(node, "POST", ret=ret, success=success)
        else:
            proc = dag.spawn(node, "PRE")
        time.sleep(rng.uniform(0.0, life * 1.2))
        proc.send_signal(signal.SIGKILL)
        if proc.wait(timeout=120) == -signal.SIGKILL:
            kills += 1
        # DAGMan: a killed script fails the attempt, RETRY runs the next one (a
        # hook that finished before the signal is a finished attempt: the next
        # one runs too, as after a failed job)
        dag.attempt[node] += 1
        assert dag.in_process(node, "PRE") == 0
        ret, success = dag.job(node)
        assert dag.in_process(node, "POST", ret=ret, success=success) == 0
        dag.attempt[node] += 1

    assert sqlite3.connect(dag.store).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    with SqliteStore(str(dag.store)) as store:
        stats = store.stats()
        records = store.decisions()
    pending = [r.decision_id for r in records if r.pending]
    assert not pending, pending
    # each closed decision learnt exactly once (a rerun POST or PRE never records twice)
    assert stats.rewards_seen - learnt_before == stats.closed, (stats, learnt_before)
    leftovers = sorted(str(p.relative_to(dag.context)) for p in dag.context.rglob("*")
                       if p.name.startswith(".") or ".tmp" in p.name or ".link-" in p.name)
    assert not leftovers
    assert not list((dag.context / "spool").iterdir())
    print(f"{kills} SIGKILLs in {rounds} rounds (hook lifetime {life:.2f} s); {stats.closed} decisions closed")
