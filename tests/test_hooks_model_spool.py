"""model:R updates are as durable as outcomes: a POST that cannot reach the
store spools the node attempt's runs, and a later POST of the run records
them into the same store, exactly once, with the estimates a direct record
would have given. The hooks fail open throughout (exit codes unchanged).

Most cases call the hooks in this process with DAGMan's argv; the last
runs the real ``rlrep-pre``/``rlrep-post`` executables on a node log a
real pool wrote."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from _hookutil import SHARED_DATA, post_macros, pre_macros, run_script
from condor_rlrep.store import SqliteStore
from condor_rlrep.condor.eventlog import read_events, rebuild_cluster
from condor_rlrep.survival import live as model_path
from condor_rlrep.rundir.layout import node_state_path
from condor_rlrep.hooks.spool import flush_spool, spool_model
from condor_rlrep.instrument import InstrumentOptions, instrument
from test_hooks_model import CELLS, MONDAY_10, _dag, _hook, _play_node


class Run:
    """The two-node DAG of test_hooks_model under model:3, its store
    quick to give up when locked."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.out = tmp_path / "run" / "two.rlrep.dag"
        self.store = tmp_path / "agent.sqlite"
        result = instrument(_dag(tmp_path), self.out,
                            InstrumentOptions(store=str(self.store), policy="model:3", store_timeout=0.2))
        self.context = Path(result.context)
        self.spool = self.context / "spool"
        self.node_log = Path(str(self.out) + ".nodes.log")
        self.job_log = tmp_path / "user" / "jobs.log"

    def node(self, node: str, cluster: int, at: float) -> int:
        """PRE, the pool, then POST of ``node``; POST's exit code."""
        assert _hook(self.out, node, "PRE", pre_macros(), now=at) == 0
        _play_node(self.node_log, cluster, node, at, job_log=self.job_log)
        return _hook(self.out, node, "POST", post_macros(cluster, 2, -1002))

    def log(self) -> list[str]:
        return (self.context / "hooks.log").read_text().splitlines()

    def entries(self) -> list[Path]:
        return sorted(self.spool.glob("*.json")) if self.spool.exists() else []

    def cells(self) -> list[list[float]]:
        with SqliteStore(self.store) as store:
            return [list(c) for c in store.survival_cells()]

    def keys(self) -> list[str]:
        with SqliteStore(self.store) as store:
            return [key for key, _ in store.export()["survival_runs"]]

    def key(self, node: str, cluster: int) -> str:
        state = json.loads(Path(node_state_path(str(self.context), node)).read_text())
        return model_path.record_key(str(self.out), state["run_id"], node, state["retry"], cluster)


def _locked(store: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(store, timeout=0.1, isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    return conn


def _direct(tmp_path: Path, attempts: list[tuple[str, Path, int, Path | None]]) -> list[list[float]]:
    """The cells of the same attempts recorded straight into a fresh store."""
    with SqliteStore.create(tmp_path / "direct.sqlite") as store:
        for key, log, cluster, job_log in attempts:
            idle = rebuild_cluster(read_events(job_log), cluster).keyboard_idle if job_log else None
            assert model_path.record(store, key, rebuild_cluster(read_events(log), cluster), idle).startswith("model:")
        return [list(c) for c in store.survival_cells()]


def test_a_locked_store_at_post_spools_the_update_and_the_next_post_flushes_it_once(tmp_path: Path) -> None:
    run = Run(tmp_path)
    holder = _locked(run.store)
    try:
        assert run.node("A", 41, MONDAY_10) == 0  # the node's verdict as without the plugin
    finally:
        holder.rollback()
        holder.close()
    line = run.log()[-1]
    assert "model update spooled in spool/model-" in line and "locked" in line and "FAIL-OPEN" not in line
    (entry,) = run.entries()
    assert entry.stat().st_mode & 0o077 == 0  # as private as the rest of the run's state
    saved = entry.read_text()
    document = json.loads(saved)
    assert document["kind"] == "model" and document["store"] == str(run.store)
    assert document["key"] == run.key("A", 41) and len(document["runs"]) == 4
    assert run.cells() == [] and run.keys() == []

    # B's POST (store free again) records B, then A's spooled runs
    assert run.node("B", 42, MONDAY_10 + 3600) == 0
    assert "1 spooled update(s) flushed" in run.log()[-1]
    assert run.entries() == []
    assert run.keys() == sorted([run.key("A", 41), run.key("B", 42)])
    direct = _direct(tmp_path, [(run.key("A", 41), run.node_log, 41, run.job_log),
                                (run.key("B", 42), run.node_log, 42, run.job_log)])
    assert run.cells() == direct  # exactly what recording both at their POSTs would have given
    assert direct == CELLS + [[11, *cell[1:]] for cell in CELLS]  # A's by hand, and B's an hour later

    # exactly once: A's POST run again, and the same entry flushed again, add nothing
    assert _hook(run.out, "A", "POST", post_macros(41, 2, -1002)) == 0
    assert "already counted" in run.log()[-1]
    entry.write_text(saved)
    with SqliteStore(run.store) as store:
        assert flush_spool(str(run.context), store, str(run.store)) == (1, [])
    assert run.entries() == [] and run.cells() == direct


def test_an_entry_for_another_store_and_a_corrupt_entry_stay_with_a_log_line(tmp_path: Path) -> None:
    run = Run(tmp_path)
    runs = [{"replica": 0, "start": MONDAY_10, "end": MONDAY_10 + 600.0, "ended_by": "evicted",
             "keyboard_idle": 1207.0}]
    other = spool_model(str(run.context), str(tmp_path / "other.sqlite"), "d|r|X|0|9", runs, "test")
    bad_runs = [{**runs[0], "start": "yesterday"}]
    bad = spool_model(str(run.context), str(run.store), "d|r|Y|0|8", bad_runs, "test")
    (run.spool / "model-garbled.json").write_text('{"kind": "model", "store": ')
    good = spool_model(str(run.context), str(run.store), "d|r|Z|0|7", runs, "test")

    assert run.node("A", 41, MONDAY_10) == 0
    line = run.log()[-1]
    assert "1 spooled update(s) flushed" in line  # the good one
    assert f"spool/{other} is for store {str(tmp_path / 'other.sqlite')!r}: left there" in line
    assert f"spool/{bad} not flushed ({run.spool / bad}: runs[0].start: must be a finite number; got 'yesterday')" in line
    assert "spool/model-garbled.json not flushed (JSONDecodeError" in line
    assert sorted(p.name for p in run.entries()) == sorted([other, bad, "model-garbled.json"])  # never dropped
    assert run.keys() == sorted([run.key("A", 41), "d|r|Z|0|7"])
    assert good not in [p.name for p in run.entries()]
    # Z's run binned by the store (hour 10, idle < 1 h) beside A's cells
    assert run.cells() == [CELLS[0], CELLS[1], [10, 1, 600.0 + 600.0, 1.0 + 1.0]]


def test_an_outcome_entry_of_the_earlier_format_and_a_model_entry_flush_together(tmp_path: Path) -> None:
    """A spool of an agent-policy run written before model updates were spooled
    (entries without a kind) still flushes, beside a model update."""
    from test_hooks_faults import Case

    case = Case(tmp_path, policy="agent", store_timeout=0.2)
    assert case.pre() == 0
    replicas = int(case.out.read_text().rsplit("queue ", 1)[1])
    case.job(0, procs=replicas)
    holder = _locked(case.store)
    try:
        assert case.post(0, procs=replicas) == 0
    finally:
        holder.rollback()
        holder.close()
    (outcome,) = (case.context / "spool").glob("*.json")
    assert "kind" not in json.loads(outcome.read_text())
    runs = [{"replica": 1, "start": MONDAY_10, "end": MONDAY_10 + 60.0, "ended_by": "success", "keyboard_idle": None}]
    spool_model(str(case.context), str(case.store), "d|r|M|0|3", runs, "test")
    with SqliteStore(case.store) as store:
        assert flush_spool(str(case.context), store, str(case.store)) == (2, [])
        assert store.decisions()[0].reward is not None
        assert store.survival_cells() == [(10, -1, 60.0, 0.0)]
    assert not list((case.context / "spool").iterdir())


def test_a_stale_update_is_not_spooled_and_a_stale_entry_stays(tmp_path: Path) -> None:
    """After retention pruned run keys up to a horizon, runs that ended before
    it are not counted (the store cannot tell them from a repeat): POST says
    so and spools nothing (the store would refuse the entry forever); an
    entry already spooled stays, with the reason."""
    run = Run(tmp_path)
    with SqliteStore(run.store) as store:
        store.prune(runs_before=MONDAY_10 + 7200)
    stale = spool_model(str(run.context), str(run.store), "d|r|Z|0|7",
                        [{"replica": 0, "start": MONDAY_10, "end": MONDAY_10 + 60.0, "ended_by": "success",
                          "keyboard_idle": None}], "test")
    assert run.node("A", 41, MONDAY_10) == 0  # its runs end at MONDAY_10 + 2621, before the horizon
    line = run.log()[-1]
    assert "model NOT updated:" in line and "before the store's survival horizon" in line
    assert [p.name for p in run.entries()] == [stale]
    assert run.cells() == [] and run.keys() == []
    assert run.node("B", 42, MONDAY_10 + 7200) == 0  # after the horizon: counted; the stale entry stays
    line = run.log()[-1]
    assert line.count("survival horizon") == 1 and f"spool/{stale} not flushed" in line
    assert [p.name for p in run.entries()] == [stale] and run.keys() == [run.key("B", 42)]


def test_a_full_disk_neither_spools_nor_changes_the_verdict(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.spool.rmdir()
    run.spool.write_text("")  # a file where the spool directory should be
    holder = _locked(run.store)
    try:
        assert run.node("A", 41, MONDAY_10) == 0
    finally:
        holder.rollback()
        holder.close()
    line = run.log()[-1]
    assert "model NOT updated:" in line and "NOT spooled either" in line and "FAIL-OPEN" not in line


REAL_LOG = SHARED_DATA / "eventlogs" / "test_condor.log"


def test_the_real_hooks_spool_and_flush_on_a_real_node_log(tmp_path: Path) -> None:
    """``rlrep-pre``/``rlrep-post`` as DAGMan runs them, on the node log of a
    real pool (nodes A and C, clusters 2758 and 2759): A's POST finds the
    store locked and spools; C's POST records C and flushes A into it."""
    if not REAL_LOG.exists():
        pytest.skip(f"{REAL_LOG} not available")
    log = tmp_path / "nodes.log"
    shutil.copy(REAL_LOG, log)
    user = tmp_path / "user"
    user.mkdir()
    (user / "a.sub").write_text("executable = /bin/true\nqueue\n")
    (user / "w.dag").write_text('JOB A a.sub\nJOB C a.sub\nVARS A rlrep_estimate="60"\nVARS C rlrep_estimate="60"\n')
    out = tmp_path / "run" / "w.rlrep.dag"
    store = tmp_path / "agent.sqlite"
    result = instrument(user / "w.dag", out, InstrumentOptions(node_log=str(log), policy="model:3",
                                                               store=str(store), store_timeout=0.3))
    hooks_log = Path(result.context) / "hooks.log"
    for node in ("A", "C"):
        done = run_script(out, node, "PRE", pre_macros(dagid=9))
        assert done.returncode == 0, done.stderr
    holder = _locked(store)
    try:
        done = run_script(out, "A", "POST", {**post_macros(2758, 1, 0, dagid=9)})
    finally:
        holder.rollback()
        holder.close()
    assert done.returncode == 0, done.stderr
    assert "model update spooled in spool/model-" in hooks_log.read_text().splitlines()[-1]
    assert len(list((Path(result.context) / "spool").glob("model-*.json"))) == 1
    done = run_script(out, "C", "POST", {**post_macros(2759, 1, 0, dagid=9)})
    assert done.returncode == 0, done.stderr
    last = hooks_log.read_text().splitlines()[-1]
    assert "POST C" in last and "1 spooled update(s) flushed" in last
    assert not list((Path(result.context) / "spool").glob("*.json"))
    assert "FAIL-OPEN" not in hooks_log.read_text()

    def key(node: str, cluster: int) -> str:
        state = json.loads(Path(node_state_path(result.context, node)).read_text())
        return model_path.record_key(str(out), state["run_id"], node, state["retry"], cluster)

    with SqliteStore(store) as opened:
        cells = [list(c) for c in opened.survival_cells()]
        assert opened.stats().survival_runs == 2
    assert cells == _direct(tmp_path, [(key("A", 2758), log, 2758, None), (key("C", 2759), log, 2759, None)])
    assert sum(c[2] for c in cells) == 7 + 7  # each ran 7 s (21:05:25-32, 21:06:08-15), no eviction
