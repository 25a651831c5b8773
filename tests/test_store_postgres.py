"""The PostgreSQL store against a real server: the SQLite store's semantics,
schema versions, credentials that never show, clean errors, the CLIs."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from click.testing import CliRunner

from _pgcluster import PASSWORD, ROLE
from condor_rlrep.agent import Agent, AgentConfig, StateError
from condor_rlrep.store import SqliteStore, backends
from condor_rlrep.cli.agent_cmd import agent
from condor_rlrep.cli.main import cli
from condor_rlrep.errors import StaleExposureError, StoreError

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")

from condor_rlrep.store.postgres import PostgresStore  # noqa: E402
from condor_rlrep.store._postgres_schema import SCHEMA, SCHEMA_VERSION  # noqa: E402

CONFIG = AgentConfig(n_bins=1, max_replicas=3, schedule="sliding-window", switch_after=5, window=4,
                     drift_threshold=0.8, recovery=3)


def _sql(url: str, statement: str):
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement)
        return cur.fetchall() if cur.description else None


def _text(store) -> str:
    out = io.StringIO()
    store.export_to(out)
    return out.getvalue()


def test_same_history_same_store_as_sqlite(pg_url, tmp_path):
    """Decisions, estimates, drift and recovery: bit for bit what SQLite holds."""
    rng_pg, rng_sq = np.random.default_rng(3), np.random.default_rng(3)
    with PostgresStore.create(pg_url, CONFIG) as pg, SqliteStore.create(tmp_path / "a.sqlite", CONFIG) as sq:
        for k in range(400):
            phi = [math.inf, -math.inf, 0.3, 1e-300, 0.7][k % 5]
            kwargs = {"phi_prime": phi, "hour": k % 3, "now": 1000.0 + k / 3, "context": {"k": k}}
            a, b = pg.decide(rng=rng_pg, **kwargs), sq.decide(rng=rng_sq, **kwargs)
            assert a == b
            if k % 7:
                reward = float([1.0, 0.6, -5.0, 0.25][k % 4])
                assert pg.record(a.decision_id, reward, {"s": k / 7}, now=2000.0 + k) is True
                assert sq.record(b.decision_id, reward, {"s": k / 7}, now=2000.0 + k) is True
            if k % 11 == 0:  # the model policy's cells, keys that sort differently by locale
                cells = [[k % 168, k % 5 - 1, 60.0 + k / 7, k % 2], [k % 168, -1, 1.5, 0]]
                key = f"{'Zz'[k % 2]}run/{k}-node_{k}"
                assert pg.record_exposure(key, cells, now=3000.0 + k) is sq.record_exposure(key, cells, now=3000.0 + k)
                assert pg.record_exposure(key, cells) is sq.record_exposure(key, cells) is False
        assert pg.survival_cells() == sq.survival_cells() != []
        # retention forgets the same run keys on both, and both refuse a repeat of one it forgot
        assert pg.prune(runs_before=3200.0, batch=3) == sq.prune(runs_before=3200.0, batch=3)
        assert pg.stats().survival_runs == sq.stats().survival_runs == sum(1 for k in range(400) if k % 11 == 0 and k >= 200)
        for store in (pg, sq):
            with pytest.raises(StaleExposureError, match="before the store's survival horizon"):
                store.record_exposure("zrun/11-node_11", [[11, -1, 1.5, 0]], ran_until=3010.0)
        assert _text(pg) == _text(sq)
        assert pg.stats().states_recovering == sq.stats().states_recovering
        assert pg.load_agent(rng=0).to_state() == sq.load_agent(rng=0).to_state()
        assert pg.decisions() == sq.decisions()
        assert pg.decide(phi_prime=0.3, hour=1, rng=0, max_replicas=1).replicas == 1


def test_record_rules(pg_url):
    with PostgresStore.create(pg_url, CONFIG) as store:
        d = store.decide(phi_prime=0.7, hour=13, context={"node": "B"}, rng=1, now=100.0)
        assert store.decision(d.decision_id).pending
        assert store.record(d.decision_id, 0.75, {"success": True}) is True
        assert store.record(d.decision_id, 0.75, {"success": True}) is False  # retried POST: a no-op
        before = _text(store)
        with pytest.raises(StoreError, match="already closed"):
            store.record(d.decision_id, -5.0, {"success": False})
        for bad in (999, 0, -1, True, "1"):
            with pytest.raises(StoreError):
                store.record(bad, 1.0)
        for phi, hour in ((math.nan, 1), (0.1, 24)):
            with pytest.raises(StateError):
                store.decide(phi_prime=phi, hour=hour)
        for reward in (math.nan, math.inf, "x"):
            with pytest.raises(StoreError):
                store.record(d.decision_id, reward)
        with pytest.raises(StoreError, match="JSON"):
            store.decide(phi_prime=0.1, hour=1, context={"x": object()})
        assert _text(store) == before  # failed calls wrote nothing
        stats = store.stats()
        assert (stats.decisions, stats.closed, stats.pending, stats.rewards_seen) == (1, 1, 0, 1)


def test_ids_are_never_reused(pg_url, tmp_path):
    with PostgresStore.create(pg_url, CONFIG) as store:
        first = store.decide(phi_prime=0.1, hour=1, rng=0)
        store.reset(AgentConfig(n_bins=2, max_replicas=4, strategy="ucb1"))
        assert store.stats().decisions == 0 and store.config.strategy == "ucb1"
        with pytest.raises(StoreError, match="unknown decision"):
            store.record(first.decision_id, 1.0)
        second = store.decide(phi_prime=0.1, hour=1)  # the new parameters: the state changed too
        assert second.decision_id == first.decision_id + 1 and second.state == 1 * 4 + 1
        doc = store.export()
    small = SqliteStore.create(tmp_path / "s.sqlite")
    small.close()
    with SqliteStore(tmp_path / "s.sqlite") as sq:
        sq.decide(phi_prime=0.1, hour=0)
        sq_doc = sq.export()  # last_decision_id 1, below the server's 2
    PostgresStore.import_document(pg_url, sq_doc, replace=True).close()
    with PostgresStore(pg_url) as store:
        assert store.decide(phi_prime=0.1, hour=0).decision_id == doc["last_decision_id"] + 1


def test_create_open_and_foreign_databases(pg_cluster, pg_url):
    with pytest.raises(StoreError, match="no agent store in this database"):
        PostgresStore(pg_url)
    assert not backends.store_exists(pg_url)
    PostgresStore.create(pg_url).close()
    assert backends.store_exists(pg_url)
    with pytest.raises(StoreError, match="already holds an agent store"):
        PostgresStore.create(pg_url)
    foreign = pg_cluster.create_database("foreign_db")
    _sql(foreign, f"CREATE SCHEMA {SCHEMA}")
    with pytest.raises(StoreError, match="not a condor-rlrep agent store"):
        PostgresStore(foreign)
    missing = pg_cluster.url("no_such_database", user=ROLE)
    with pytest.raises(StoreError, match="cannot connect.*no_such_database"):
        PostgresStore(missing)


def test_schema_versions(pg_url):
    with PostgresStore.create(pg_url, CONFIG) as store:
        d = store.decide(phi_prime=0.1, hour=1, rng=0)
    _sql(pg_url, f"DROP INDEX {SCHEMA}.decisions_pending; DROP TABLE {SCHEMA}.settings;"
                 f" DROP TABLE {SCHEMA}.survival; DROP TABLE {SCHEMA}.survival_runs;"
                 f" DELETE FROM {SCHEMA}.schema_version WHERE version > 1")
    with PostgresStore(pg_url) as store:  # migrated on open
        assert store.decision(d.decision_id).pending and store.retention.closed is None
        assert store.survival_cells() == []
    versions = [(1,), (2,), (3,), (4,), (5,)]
    assert _sql(pg_url, f"SELECT version FROM {SCHEMA}.schema_version ORDER BY 1") == versions
    # version 3 to 4: decisions kept, the model's tables added
    _sql(pg_url, f"DROP TABLE {SCHEMA}.survival; DROP TABLE {SCHEMA}.survival_runs;"
                 f" DELETE FROM {SCHEMA}.schema_version WHERE version > 3")
    with PostgresStore(pg_url) as store:
        assert store.decision(d.decision_id).pending
        assert store.record_exposure("r/A/1", [[3, 0, 10.0, 1]], now=7.0)
        assert store.survival_cells() == [(3, 0, 10.0, 1.0)]
    assert _sql(pg_url, f"SELECT version FROM {SCHEMA}.schema_version ORDER BY 1") == versions
    assert _sql(pg_url, "SELECT 1 FROM pg_indexes WHERE indexname = 'decisions_pending'") == [(1,)]
    # version 4 (the previous release) to 5: the model's cells and keys kept, the index retention prunes by added
    with PostgresStore(pg_url) as store:
        before = _text(store)
    _sql(pg_url, f"DROP INDEX {SCHEMA}.survival_runs_recorded; DELETE FROM {SCHEMA}.schema_version WHERE version > 4")
    with PostgresStore(pg_url) as store:
        assert _text(store) == before
        assert store.prune(runs_before=8.0).runs == 1 and store.survival_cells() == [(3, 0, 10.0, 1.0)]
    assert _sql(pg_url, f"SELECT version FROM {SCHEMA}.schema_version ORDER BY 1") == versions
    assert _sql(pg_url, "SELECT 1 FROM pg_indexes WHERE indexname = 'survival_runs_recorded'") == [(1,)]
    _sql(pg_url, f"INSERT INTO {SCHEMA}.schema_version VALUES ({SCHEMA_VERSION + 1}, 0)")
    with pytest.raises(StoreError, match="newer"):
        PostgresStore(pg_url)


def test_trained_agent_saves_loads_and_imports(pg_url, tmp_path):
    trained = Agent(CONFIG, rng=0)
    for k in range(300):
        trained.learn(k % trained.n_states, 1 + k % 3, [1.0, -5.0, 0.25][k % 5 % 3])
    backends.save_agent(pg_url, trained)
    assert backends.load_agent(pg_url, rng=0).to_state() == trained.to_state()
    with pytest.raises(StoreError, match="already holds"):
        backends.save_agent(pg_url, trained)
    backends.save_agent(pg_url, trained, replace=True)
    sqlite_path = tmp_path / "t.sqlite"
    SqliteStore.save_agent(str(sqlite_path), trained)
    with SqliteStore(sqlite_path) as sq, PostgresStore(pg_url) as pg:
        assert _text(sq).replace('"last_decision_id": 0', "") == _text(pg).replace('"last_decision_id": 0', "")


def test_password_is_never_shown(pg_cluster, pg_url, tmp_path):
    database = pg_url.split("/")[3].split("?")[0]
    url = pg_cluster.tcp_url(database)
    assert PASSWORD in url
    runner = CliRunner()
    result = runner.invoke(agent, ["init", "--store", url, "--max-replicas", "3"])
    assert result.exit_code == 0, result.output
    redacted = f"postgresql://{ROLE}@127.0.0.1:{pg_cluster.port}/{database}"
    assert redacted in result.output and PASSWORD not in result.output
    for args in (["stats", "--json"], ["decide", "--phi-prime", "0.3"], ["retention"], ["export"]):
        result = runner.invoke(agent, [args[0], "--store", url, *args[1:]])
        assert result.exit_code == 0, result.output
        assert PASSWORD not in result.output
    wrong = url.replace(PASSWORD, "not-" + PASSWORD)
    result = runner.invoke(agent, ["stats", "--store", wrong])
    assert isinstance(result.exception, StoreError) and "password authentication failed" in str(result.exception)
    assert PASSWORD not in str(result.exception) and "***" not in str(result.exception)
    garbled = url.replace(PASSWORD, PASSWORD + "%zz")  # libpq echoes a bad percent-escape
    with pytest.raises(StoreError) as err:
        PostgresStore(garbled)
    assert PASSWORD not in str(err.value)
    bare = pg_cluster.tcp_url(database, password=None)
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg_cluster.port}:{database}:{ROLE}:{PASSWORD}\n")
    passfile.chmod(0o600)
    service = tmp_path / "services.conf"
    service.write_text(f"[rlrep]\nhost=127.0.0.1\nport={pg_cluster.port}\ndbname={database}\nuser={ROLE}\n"
                       f"password={PASSWORD}\n")
    for spec, env in ((bare, {"PGPASSFILE": str(passfile)}),
                      ("postgresql:///?service=rlrep", {"PGSERVICEFILE": str(service)})):
        code = "import sys; from condor_rlrep.store.postgres import PostgresStore; print(PostgresStore(sys.argv[1]).stats().decisions)"
        run = subprocess.run([sys.executable, "-c", code, spec], env={**os.environ, **env}, capture_output=True,
                             text=True, timeout=60)
        assert run.returncode == 0 and run.stdout.strip() == "1", run.stderr
    for path in tmp_path.rglob("*"):
        if path not in (passfile, service) and path.is_file():
            assert PASSWORD not in path.read_text(errors="replace")


def test_unreachable_server_is_a_clean_store_error(pg_cluster):
    url = f"postgresql://{ROLE}:{PASSWORD}@127.0.0.1:1/nothing"
    with pytest.raises(StoreError) as err:
        backends.open_store(url, connect_timeout=2)
    text = str(err.value)
    assert text.startswith(f"postgresql://{ROLE}@127.0.0.1:1/nothing: cannot connect") and PASSWORD not in text


def test_statement_timeout_bounds_a_wait_on_a_lock(pg_url):
    PostgresStore.create(pg_url, CONFIG).close()
    with PostgresStore(pg_url) as store:
        d = store.decide(phi_prime=0.1, hour=1, rng=0)
    blocker = psycopg.connect(pg_url)
    try:
        blocker.execute(f"SELECT * FROM {SCHEMA}.decisions WHERE id = %s FOR UPDATE", (d.decision_id,))
        with backends.open_store(pg_url, busy_timeout=0.5) as store:
            with pytest.raises(StoreError, match="statement timeout"):
                store.record(d.decision_id, 1.0)
    finally:
        blocker.rollback()
        blocker.close()
    with PostgresStore(pg_url) as store:
        assert store.record(d.decision_id, 1.0)  # nothing half-done was left behind


def test_cli_and_train_accept_a_url(pg_url, tmp_path):
    from _simutil import poisson_trace
    from condor_rlrep.sim.trace_io import write_trace

    runner = CliRunner()
    assert runner.invoke(agent, ["init", "--store", pg_url, "--max-replicas", "3", "--n-bins", "2"]).exit_code == 0
    out = runner.invoke(agent, ["decide", "--store", pg_url, "--hour", "7", "--phi-prime", "0.3", "--json", "--seed", "1"])
    doc = json.loads(out.output)
    rec = runner.invoke(agent, ["record", "--store", pg_url, str(doc["decision_id"]), "--success", "--sigma", "0.5"])
    assert rec.exit_code == 0 and "recorded reward" in rec.output
    again = runner.invoke(agent, ["record", "--store", pg_url, str(doc["decision_id"]), "--success", "--sigma", "0.5"])
    assert "nothing changed" in again.output
    assert runner.invoke(agent, ["show", "--store", pg_url, "--json"]).exit_code == 0
    exported = tmp_path / "doc.json"
    assert runner.invoke(agent, ["export", "--store", pg_url, "-o", str(exported)]).exit_code == 0
    back = tmp_path / "back.sqlite"
    assert runner.invoke(agent, ["migrate", "--from", pg_url, "--to", str(back)]).exit_code == 0
    assert json.loads(runner.invoke(agent, ["export", "--store", str(back)]).output) == json.loads(exported.read_text())
    assert runner.invoke(agent, ["reset", "--store", pg_url, "--yes"]).exit_code == 0
    forward = runner.invoke(agent, ["migrate", "--from", str(back), "--to", pg_url, "--replace"])
    assert forward.exit_code == 0, forward.output
    assert json.loads(runner.invoke(agent, ["export", "--store", pg_url]).output) == json.loads(exported.read_text())

    trace = poisson_trace(np.random.default_rng(8), machines=20, rate=1 / 5000, length=2e5, session=1200, jobs=40,
                          job_length=900, job_window=(0, 1e5))
    write_trace(trace, tmp_path / "trace")
    args = ["train", "--trace", str(tmp_path / "trace"), "--store", pg_url, "--replicas", "3", "--fraction", "0.5"]
    refused = runner.invoke(cli, args)
    assert refused.exit_code != 0 and "--replace" in refused.output
    trained = runner.invoke(cli, args + ["--replace"])
    assert trained.exit_code == 0, trained.output
    assert backends.load_agent(pg_url).rewards_seen > 0


def test_migrate_and_export_carry_the_survival_model(pg_url, tmp_path):
    """`agent migrate` both ways and `agent export`/`import` keep the model
    policy's cells and the keys of the node attempts already counted."""
    runner = CliRunner()
    source = tmp_path / "s.sqlite"
    with SqliteStore.create(source, CONFIG) as sq:
        sq.record_exposure("dag|run|A|0|41", [[10, -1, 2521.0, 1], [10, 0, 1920.0, 0], [10, 1, 600.0, 1]], now=5.0)
        sq.record_exposure("dag|run|B|0|42", [[11, 2, 30.5, 0]], now=6.0)
        sq.record_exposure("dag|run|Z|0|40", [[9, 1, 12.0, 1]], now=1.0)
        assert sq.prune(runs_before=2.0).runs == 1  # Z's key goes, the horizon moves to 2.0
        cells = sq.survival_cells()
    moved = runner.invoke(agent, ["migrate", "--from", str(source), "--to", pg_url])
    assert moved.exit_code == 0, moved.output
    with PostgresStore(pg_url) as pg:
        assert pg.survival_cells() == cells
        assert pg.record_exposure("dag|run|A|0|41", [[10, -1, 1.0, 0]]) is False  # already counted before the move
        with pytest.raises(StaleExposureError):  # and the horizon moved with it: Z's repeat is not counted
            pg.record_exposure("dag|run|Z|0|40", [[9, 1, 12.0, 1]], ran_until=0.5)
        assert pg.stats().survival_horizon == 2.0
    back = tmp_path / "back.sqlite"
    assert runner.invoke(agent, ["migrate", "--from", pg_url, "--to", str(back)]).exit_code == 0
    exported = runner.invoke(agent, ["export", "--store", str(back)]).output
    assert json.loads(exported)["survival"] == [list(c) for c in cells]
    assert json.loads(exported)["survival_runs"] == [["dag|run|A|0|41", 5.0], ["dag|run|B|0|42", 6.0]]
    assert json.loads(exported)["survival_horizon"] == 2.0
