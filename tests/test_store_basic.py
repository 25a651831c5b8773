"""The SQLite agent store: decisions, outcomes, files, documents, misuse."""

from __future__ import annotations

import json
import math
import os
import sqlite3
import stat
import subprocess
import sys

import numpy as np
import pytest

from condor_rlrep.agent import Agent, AgentConfig, StateError
from condor_rlrep.store.sqlite import load_agent
from condor_rlrep.store import SqliteStore, default_store_path
from condor_rlrep.store._sqlite_schema import APPLICATION_ID, SCHEMA_VERSION
from condor_rlrep.energy import PowerTable
from condor_rlrep.errors import StoreError
from condor_rlrep.outcome import Invocation, evaluate


@pytest.fixture
def path(tmp_path):
    return tmp_path / "sub" / "agent.sqlite"


@pytest.fixture
def store(path):
    with SqliteStore.create(path, AgentConfig(n_bins=2, max_replicas=4)) as s:
        yield s


def _bytes(p):
    return p.read_bytes()


def test_file_is_private_and_marked(path):
    SqliteStore.create(path).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    with pytest.raises(StoreError, match="already exists"):
        SqliteStore.create(path)


def test_decide_then_record_learns_once(store):
    d = store.decide(phi_prime=0.7, hour=13, context={"node": "B"}, rng=1, now=100.0)
    assert (d.hour, d.phi_bin, d.state) == (13, 2, 13 * 4 + 2)
    assert d.replicas == 1 and not d.explored  # all untried, ε lost the draw: fewest replicas
    assert d.to_json() == {"decision_id": d.decision_id, "replicas": 1, "state": [13, 2], "explored": False}
    row = store.decision(d.decision_id)
    assert row.pending and row.context == {"node": "B"} and row.made_at == 100.0
    assert store.record(d.decision_id, 0.75, {"success": True}) is True
    assert store.record(d.decision_id, 0.75, {"success": True}) is False  # retried POST: a no-op
    with pytest.raises(StoreError, match="already closed"):
        store.record(d.decision_id, -5.0, {"success": False})
    stats = store.stats()
    assert (stats.decisions, stats.closed, stats.pending, stats.rewards_seen) == (1, 1, 0, 1)
    agent = store.load_agent()
    assert agent.counts[d.state, 0] == 1 and agent.estimates[d.state, 0] == 0.75


def test_hour_from_time_and_zone(tmp_path):
    with SqliteStore.create(tmp_path / "s", AgentConfig(timezone="Europe/London")) as s:
        d = s.decide(phi_prime=-1.0, timestamp=1_719_835_200.0)  # 12:00 UTC = 13:00 BST
        assert (d.hour, d.phi_bin) == (13, 0)


def test_record_outcome_from_evaluate(store):
    d = store.decide(phi_prime=0.5, hour=2, rng=0)
    runs = [Invocation(0, "h1", 10.0, 70.0, "success", 0), Invocation(1, "h2", 10.0, 40.0, "evicted")]
    outcome = evaluate(runs, submit_time=0.0, phi_prime=0.5, estimate=60.0, replicas=2, power=PowerTable(50.0))
    assert store.record_outcome(d.decision_id, outcome)
    assert store.decision(d.decision_id).reward == outcome.reward
    assert store.record_outcome(d.decision_id, outcome) is False


def test_store_and_memory_agent_learn_identically(tmp_path):
    config = AgentConfig(n_bins=1, max_replicas=3, schedule="sliding-window", switch_after=5, window=4,
                         drift_threshold=0.8, recovery=3)
    agent = Agent(config, rng=0)
    rng = np.random.default_rng(3)
    with SqliteStore.create(tmp_path / "s", config) as s:
        for _ in range(300):
            d = s.decide(phi_prime=float(rng.uniform(-0.5, 1.5)), hour=int(rng.integers(0, 3)), rng=rng)
            r = float(rng.choice([1.0, 0.6, -5.0]))
            s.record(d.decision_id, r)
            agent.learn(d.state, d.replicas, r)
        stored = s.load_agent()
    assert np.array_equal(stored.counts, agent.counts)
    assert np.array_equal(stored.estimates, agent.estimates)  # bit for bit
    assert stored.recovery == agent.recovery and stored.windows == agent.windows
    assert stored.to_state() == agent.to_state()


def test_unknown_and_bad_ids(store, path):
    store.close()
    before = _bytes(path)
    with SqliteStore(path) as s:
        for bad in (999, 0, -1, True, "1"):
            with pytest.raises(StoreError):
                s.record(bad, 1.0)
        with pytest.raises(StoreError, match="unknown decision"):
            s.decision(5)
    assert _bytes(path) == before


def test_failed_calls_write_nothing(store, path):
    d = store.decide(phi_prime=0.1, hour=1, rng=0)
    store.record(d.decision_id, 1.0)
    store.close()
    before = _bytes(path)
    with SqliteStore(path) as s:
        with pytest.raises(StoreError):
            s.record(d.decision_id, 0.5)  # different outcome for a closed decision
        for phi, hour in ((math.nan, 1), (0.1, 24), (0.1, -1)):
            with pytest.raises(StateError):
                s.decide(phi_prime=phi, hour=hour)
        for reward in (math.nan, math.inf, "x"):
            with pytest.raises(StoreError):
                s.record(d.decision_id, reward)
        with pytest.raises(StoreError, match="JSON"):
            s.decide(phi_prime=0.1, hour=1, context={"x": object()})
        assert s.stats().decisions == 1
    assert _bytes(path) == before


@pytest.mark.parametrize("content", [b"", b"hello, not a database\n" * 100, b"SQLite format 3\x00" + b"\xff" * 2000])
def test_corrupt_or_empty_files_are_refused_untouched(tmp_path, content):
    p = tmp_path / "bad.sqlite"
    p.write_bytes(content)
    with pytest.raises(StoreError):
        SqliteStore(p)
    assert p.read_bytes() == content


def test_foreign_sqlite_file_is_refused_untouched(tmp_path):
    p = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(p)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = p.read_bytes()
    with pytest.raises(StoreError, match="not a condor-rlrep agent store"):
        SqliteStore(p)
    assert p.read_bytes() == before


def test_missing_store_and_directory(tmp_path):
    with pytest.raises(StoreError, match="no agent store"):
        SqliteStore(tmp_path / "nope.sqlite")
    assert not (tmp_path / "nope.sqlite").exists()
    with pytest.raises(StoreError, match="directory"):
        SqliteStore(tmp_path)


def test_newer_schema_is_refused_untouched(store, path):
    store.close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = _bytes(path)
    with pytest.raises(StoreError, match="newer"):
        SqliteStore(path)
    assert _bytes(path) == before


def test_older_schema_is_migrated(store, path):
    d = store.decide(phi_prime=0.1, hour=1, rng=0)
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX decisions_pending")
    conn.execute("DROP TABLE settings")
    conn.execute("DROP TABLE survival")
    conn.execute("DROP TABLE survival_runs")
    conn.execute("DELETE FROM schema_version WHERE version > 1")
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with SqliteStore(path) as s:
        assert s.decision(d.decision_id).pending
        assert s.survival_cells() == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    assert conn.execute("SELECT version FROM schema_version ORDER BY 1").fetchall() == [(1,), (2,), (3,), (4,), (5,)]
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'decisions_pending'").fetchone()
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'survival_runs_recorded'").fetchone()
    conn.close()


def test_version_4_store_gains_the_run_key_index_and_keeps_its_model(store, path):
    """A store written by the previous release (version 4, the survival
    tables without the index retention prunes by) keeps every cell and
    key, is indexed, and its old keys can be pruned."""
    store.record_exposure("run/A/12", [[5, -1, 100.0, 1], [5, 2, 50.0, 0]], now=7.0)
    store.record_exposure("run/B/13", [[6, 0, 20.0, 0]], now=9000.0)
    before = store.export()
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX survival_runs_recorded")
    conn.execute("DELETE FROM schema_version WHERE version > 4")
    conn.execute("PRAGMA user_version = 4")
    conn.commit()
    conn.close()
    with SqliteStore(path) as s:
        assert s.export() == before
        assert s.prune(runs_before=100.0).runs == 1
        assert s.survival_cells() == [(5, -1, 100.0, 1.0), (5, 2, 50.0, 0.0), (6, 0, 20.0, 0.0)]
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 5
    assert conn.execute("SELECT version FROM schema_version ORDER BY 1").fetchall() == [(1,), (2,), (3,), (4,), (5,)]
    plan = " ".join(str(row) for row in conn.execute(
        "EXPLAIN QUERY PLAN SELECT key FROM survival_runs WHERE recorded_at < 5 ORDER BY recorded_at LIMIT 9"))
    assert "survival_runs_recorded" in plan  # the prune's batches use the index
    conn.close()


def test_version_3_store_gains_the_survival_model(store, path):
    """A store written by the previous release (version 3) keeps its
    decisions and retention, and gets the model policy's tables."""
    d = store.decide(phi_prime=0.1, hour=1, rng=0)
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE survival")
    conn.execute("DROP TABLE survival_runs")
    conn.execute("DELETE FROM schema_version WHERE version > 3")
    conn.execute("PRAGMA user_version = 3")
    conn.commit()
    conn.close()
    with SqliteStore(path) as s:
        assert s.decision(d.decision_id).pending
        assert s.record_exposure("run/A/12", [[5, -1, 100.0, 1], [5, 2, 50.0, 0]], now=7.0)
        assert not s.record_exposure("run/A/12", [[5, -1, 100.0, 1]])  # a rerun POST adds nothing
        assert s.survival_cells() == [(5, -1, 100.0, 1.0), (5, 2, 50.0, 0.0)]
        assert s.record_exposure("run/B/13", [[5, -1, 20.0, 0], [5, -1, 5.0, 1]])  # same cell: summed
        assert s.survival_cells() == [(5, -1, 125.0, 2.0), (5, 2, 50.0, 0.0)]
        doc = s.export()
    assert doc["survival"] == [[5, -1, 125.0, 2.0], [5, 2, 50.0, 0.0]]
    assert [key for key, _ in doc["survival_runs"]] == ["run/A/12", "run/B/13"]


@pytest.mark.parametrize("cell, fault", [
    ([168, 0, 1.0, 0], "hour"), ([0, -2, 1.0, 0], "bucket"), ([0, 0, -1.0, 0], "exposure"),
    ([0, 0, float("nan"), 0], "exposure"), ([0, 0, 1.0, True], "evictions"), ([0, 0, 1.0], "expected"),
])
def test_bad_exposure_cells_are_refused_and_nothing_is_written(store, cell, fault):
    with pytest.raises(StoreError, match=fault):
        store.record_exposure("k", [[1, 0, 10.0, 0], cell])
    assert store.survival_cells() == []
    assert store.record_exposure("k", [[1, 0, 10.0, 0]])  # the key was not taken by the refused call


def _filled(store):
    rng = np.random.default_rng(2)
    for k in range(40):
        phi = [math.inf, -math.inf, 0.3, 1e-300][k % 4]
        d = store.decide(phi_prime=phi, hour=k % 24, context={"node": f"n{k}", "k": k}, rng=rng, now=1000.0 + k / 3)
        if k % 3:
            store.record(d.decision_id, [1.0, 0.1 + 1 / 3, -5.0][k % 3], {"sigma": k / 7}, now=2000.0 + k / 7)
        if k % 5 == 0:
            store.record_exposure(f"run/n{k}/{k}", [[k % 168, k % 7 - 1, 100.0 + k / 3, k % 2]], now=3000.0 + k)


def test_export_import_round_trips_exactly(store, tmp_path):
    _filled(store)
    doc = store.export()
    text = json.dumps(doc, allow_nan=False)
    with SqliteStore.import_document(tmp_path / "copy.sqlite", json.loads(text)) as copy:
        assert copy.export() == doc
        assert json.dumps(copy.export(), allow_nan=False) == text
        d = copy.decide(phi_prime=0.2, hour=0, rng=0)
        assert d.decision_id == doc["last_decision_id"] + 1
    with pytest.raises(StoreError, match="already holds"):
        SqliteStore.import_document(tmp_path / "copy.sqlite", doc)
    SqliteStore.import_document(tmp_path / "copy.sqlite", doc, replace=True).close()


@pytest.mark.parametrize(
    "mutate, fragment",
    [
        (lambda d: d.update(format="other"), "format"),
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer"),
        (lambda d: d["config"].update(epsilon_low=7), "epsilon_low"),
        (lambda d: d["estimates"].append([10_000, 1, 1, 0.0, []]), r"estimates\[\d+\].state"),
        (lambda d: d["estimates"].append(list(d["estimates"][0])), "duplicate"),
        (lambda d: d["decisions"][1].update(reward=None), "both"),
        (lambda d: d["decisions"][1].update(replicas=99), "replicas"),
        (lambda d: d.update(last_decision_id=1), "last_decision_id"),
    ],
)
def test_bad_documents_are_refused_before_writing(store, tmp_path, mutate, fragment):
    _filled(store)
    doc = json.loads(json.dumps(store.export()))
    mutate(doc)
    target = tmp_path / "target.sqlite"
    SqliteStore.create(target).close()
    before = target.read_bytes()
    with pytest.raises(StoreError, match=fragment):
        SqliteStore.import_document(target, doc, replace=True)
    assert target.read_bytes() == before


def test_reset_keeps_ids_counting(store):
    d = store.decide(phi_prime=0.1, hour=1, rng=0)
    store.reset(AgentConfig(n_bins=2, max_replicas=4, strategy="ucb1"))
    assert store.stats().decisions == 0 and store.config.strategy == "ucb1"
    with pytest.raises(StoreError, match="unknown decision"):
        store.record(d.decision_id, 1.0)
    assert store.decide(phi_prime=0.1, hour=1).decision_id == d.decision_id + 1


def test_memory_agent_saves_and_loads(tmp_path):
    config = AgentConfig(n_bins=1, max_replicas=3, schedule="sliding-window", window=2, drift_threshold=0.5)
    agent = Agent(config, rng=0)
    for k in range(200):
        agent.learn(k % agent.n_states, 1 + k % 3, [1.0, -5.0, 0.25][k % 5 % 3])
    p = tmp_path / "trained.sqlite"
    SqliteStore.save_agent(p, agent)
    loaded = load_agent(p, rng=0)
    assert loaded.to_state() == agent.to_state() and loaded.config == config
    assert np.array_equal(loaded.policy()[0], agent.policy()[0])
    with pytest.raises(StoreError, match="already holds"):
        SqliteStore.save_agent(p, agent)
    SqliteStore.save_agent(p, agent, replace=True)
    with SqliteStore(p) as s:  # the hooks' view: the learned greedy action
        state = 5
        d = s.decide(phi_prime=0.5, hour=state // 3, rng=0)
        assert d.replicas == agent.greedy(d.state) or d.explored


def test_default_store_path():
    assert str(default_store_path({"CONDOR_RLREP_STORE": "/x/a.sqlite"})) == "/x/a.sqlite"
    assert str(default_store_path({"XDG_DATA_HOME": "/d"})) == "/d/condor-rlrep/agent.sqlite"
    assert str(default_store_path({})).endswith(".local/share/condor-rlrep/agent.sqlite")


def test_hook_path_imports_stay_light():
    code = (
        "import sys, condor_rlrep.agent, condor_rlrep.store.sqlite; "
        "heavy = [m for m in ('numpy', 'scipy', 'matplotlib', 'htcondor2') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_paths_with_uri_characters(tmp_path):
    p = tmp_path / "we ird?#%dir" / "a b.sqlite"
    with SqliteStore.create(p) as s:
        d = s.decide(phi_prime=0.1, hour=0)
    with SqliteStore(p) as s:
        assert s.decision(d.decision_id).pending
    assert sorted(x.name for x in p.parent.iterdir()) == ["a b.sqlite"]


def test_a_document_with_a_bad_survival_cell_is_refused_naming_it(store, tmp_path):
    doc = store.export()
    for bad, fault in (([[200, 0, 1.0, 0]], r"survival\[0\]\.hour"), ([[1, 0, 1.0, -1]], r"survival\[0\]\.evictions"),
                       ("x", "survival: must be a list")):
        with pytest.raises(StoreError, match=fault):
            SqliteStore.import_document(tmp_path / "new.sqlite", {**doc, "survival": bad})
        assert not (tmp_path / "new.sqlite").exists()  # nothing written
    with pytest.raises(StoreError, match=r"survival_runs\[1\]: duplicate key"):
        SqliteStore.import_document(tmp_path / "new.sqlite", {**doc, "survival_runs": [["k", 1.0], ["k", 2.0]]})
    old = {k: v for k, v in doc.items() if k not in ("survival", "survival_runs")}  # a version-3 document
    with SqliteStore.import_document(tmp_path / "v3.sqlite", {**old, "schema_version": 3}) as imported:
        assert imported.survival_cells() == []
