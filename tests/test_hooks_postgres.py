"""The hooks on a PostgreSQL store whose server goes away mid-run: they fail
open exactly as on a locked SQLite file, and nothing is lost once it is back."""

from __future__ import annotations

from pathlib import Path

from _pgcluster import Cluster
from condor_rlrep.store.location import open_store
from condor_rlrep.condor.eventlog_writer import EventLogWriter
from condor_rlrep.instrument import InstrumentOptions, instrument
from test_live_path import T0, figure1, hooks_log, post, pre, state_of


def _ran(out: Path, node: str, cluster: int, at: float) -> int:
    """The node's replicas in the node log: proc 0 wins, the others are removed."""
    replicas = int(state_of(out, node).get("replicas", 1))
    w = EventLogWriter(str(out) + ".nodes.log")
    for proc in range(replicas):
        w.submit(cluster, proc, at, node)
        w.execute(cluster, proc, at + 1, f"h{proc}")
    w.terminate(cluster, 0, at + 30, exit_code=0, run_seconds=29)
    for proc in range(1, replicas):
        w.remove(cluster, proc, at + 30)
    return replicas


def test_server_down_mid_run_fails_open_and_the_spool_reaches_the_same_store(tmp_path: Path, pg_cluster: Cluster) -> None:
    url = pg_cluster.create_database("rlrep_hooks_down")
    dag = figure1(tmp_path)
    out = tmp_path / "run" / "f.dag"
    instrument(dag, out, InstrumentOptions(store=url, phi=1.0, policy="agent"))
    assert pre(out, "A", T0) == 0
    replicas = _ran(out, "A", 11, T0 + 1)
    pg_cluster.stop()
    try:
        # the winner's POST cannot reach the server: the node still succeeds, its outcome waits in the spool
        assert post(out, "A", 11, replicas) == 0
        assert "spooled" in hooks_log(out).splitlines()[-1]
        assert list((Path(str(out) + ".rlrep") / "spool").glob("*.json"))
        # a PRE that cannot decide runs the user's job unchanged
        assert pre(out, "B", T0 + 40) == 0
        last = hooks_log(out).splitlines()[-1]
        assert "FAIL-OPEN" in last and "PRE B" in last
    finally:
        pg_cluster.start()
    assert pre(out, "C", T0 + 50) == 0
    replicas_c = _ran(out, "C", 12, T0 + 51)
    assert post(out, "C", 12, replicas_c) == 0
    assert "1 spooled outcome(s)/model update(s) flushed" in hooks_log(out).splitlines()[-1]
    with open_store(url) as store:
        rows = {row.context["node"]: row for row in store.decisions()}
        stats = store.stats()
    assert sorted(rows) == ["A", "C"]  # B decided nothing: it ran unmodified
    assert not rows["A"].pending and rows["A"].outcome["completed"] and rows["A"].outcome["winner"] == 0
    assert not rows["C"].pending and stats.pending == 0
    assert not list((Path(str(out) + ".rlrep") / "spool").glob("*.json"))


def test_model_updates_wait_in_the_spool_while_the_server_is_down(tmp_path: Path, pg_cluster: Cluster) -> None:
    """model:R: a POST that cannot reach the server spools the attempt's runs;
    the next POST that can flushes them into the same store, binned as a
    direct record would have binned them."""
    from condor_rlrep.store.sqlite import SqliteStore
    from condor_rlrep.condor.eventlog import read_events, rebuild_cluster
    from condor_rlrep.survival import live as model_path

    url = pg_cluster.create_database("rlrep_hooks_model_down")
    out = tmp_path / "run" / "f.dag"
    instrument(figure1(tmp_path), out, InstrumentOptions(store=url, policy="model:3"))
    spool = Path(str(out) + ".rlrep") / "spool"
    assert pre(out, "A", T0) == 0
    replicas = _ran(out, "A", 11, T0 + 1)
    pg_cluster.stop()
    try:
        assert post(out, "A", 11, replicas) == 0
        assert "model update spooled in spool/model-" in hooks_log(out).splitlines()[-1]
        assert len(list(spool.glob("model-*.json"))) == 1
    finally:
        pg_cluster.start()
    assert pre(out, "C", T0 + 50) == 0
    replicas_c = _ran(out, "C", 12, T0 + 51)
    assert post(out, "C", 12, replicas_c) == 0
    last = hooks_log(out).splitlines()[-1]
    assert "POST C" in last and "1 spooled update(s) flushed" in last and "FAIL-OPEN" not in hooks_log(out)
    assert not list(spool.glob("*.json"))
    with open_store(url) as store:
        cells, config, stats = store.survival_cells(), store.config, store.stats()
    assert stats.survival_runs == 2 and stats.decisions == 0  # the model policy decides nothing in the store
    log = str(out) + ".nodes.log"
    with SqliteStore.create(tmp_path / "direct.sqlite", config) as direct:
        for node, cluster in (("A", 11), ("C", 12)):
            state = state_of(out, node)
            key = model_path.record_key(str(out), state["run_id"], node, state["retry"], cluster)
            model_path.record(direct, key, rebuild_cluster(read_events(log), cluster))
        assert cells == direct.survival_cells() and sum(c[2] for c in cells) == 29 * (replicas + replicas_c)


def test_outcomes_spooled_while_the_server_stays_down_are_reported_and_flushed_later(
        tmp_path: Path, pg_cluster: Cluster) -> None:
    """Issue 23 item 7: PostgreSQL stopped mid-run and still down when the run
    ends (no rescue follows): `status` reports what waits in the spool, and
    `agent flush` records it once the server is back: nothing stays pending."""
    import json
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "condor-rlrep")
    url = pg_cluster.create_database("rlrep_hooks_down_at_end")
    dag = figure1(tmp_path)
    out = tmp_path / "run" / "f.dag"
    instrument(dag, out, InstrumentOptions(store=url, phi=1.0, policy="agent"))
    assert pre(out, "A", T0) == 0 and pre(out, "B", T0) == 0
    replicas = {"A": _ran(out, "A", 11, T0 + 1), "B": _ran(out, "B", 12, T0 + 1)}
    pg_cluster.stop()
    try:
        assert post(out, "A", 11, replicas["A"]) == 0 and post(out, "B", 12, replicas["B"]) == 0
        status = subprocess.run([cli, "status", str(out), "--json"], capture_output=True, text=True, timeout=120)
        assert status.returncode == 0, status.stderr
        (warning,) = [w for w in json.loads(status.stdout)["warnings"] if "spool" in w]
        assert warning.startswith("2 outcome(s)/model update(s) wait in"), warning
    finally:
        pg_cluster.start()
    with open_store(url) as store:
        assert store.stats().pending == 2
    done = subprocess.run([cli, "agent", "flush", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("2 spooled outcome(s)"), done.stdout + done.stderr
    with open_store(url) as store:
        assert store.stats().pending == 0
    assert not list((Path(str(out) + ".rlrep") / "spool").glob("*.json"))
