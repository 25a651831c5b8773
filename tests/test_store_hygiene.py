"""Store hygiene on both backends: retention and pruning, pending expiry,
streaming export/import (exact round trips, any key order, bad entries
rolled back), `agent prune|retention|migrate`."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from condor_rlrep.agent import AgentConfig
from condor_rlrep.store import backends
from condor_rlrep.store.retention import Retention, format_duration, parse_duration
from condor_rlrep.cli.agent_cmd import agent
from condor_rlrep.errors import StaleExposureError, StoreError

CONFIG = AgentConfig(n_bins=2, max_replicas=4, schedule="sliding-window", switch_after=5, window=3,
                     drift_threshold=0.5, recovery=2)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def spec(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "agent.sqlite")
    return request.getfixturevalue("pg_url")


@pytest.fixture
def other(tmp_path):
    """A second, empty SQLite location (PostgreSQL to SQLite is the cross-backend case)."""
    return str(tmp_path / "other.sqlite")


def _fill(store, count=60):
    """Decisions made at t = 1000 + k, closed (two in three) at t = 5000 + k."""
    rng = np.random.default_rng(4)
    ids = []
    for k in range(count):
        phi = [math.inf, -math.inf, 0.3, 1e-300, 0.8][k % 5]
        d = store.decide(phi_prime=phi, hour=k % 24, context={"node": f"n{k}", "k": k}, rng=rng, now=1000.0 + k)
        ids.append(d.decision_id)
        if k % 3:
            store.record(d.decision_id, [1.0, 0.1 + 1 / 3, -5.0][k % 3], {"sigma": k / 7}, now=5000.0 + k)
    return ids


def _text(store) -> str:
    out = io.StringIO()
    store.export_to(out)
    return out.getvalue()


def test_prune_keeps_estimates_and_counts(spec):
    with backends.create_store(spec, CONFIG) as store:
        _fill(store)
        before = store.load_agent(rng=0).to_state()
        stats = store.stats()
        result = store.prune(closed_before=5030.0, batch=7)  # several batches
        assert result.closed == sum(1 for k in range(30) if k % 3) and result.pending == 0
        left = store.decisions()
        assert all(d.pending or d.closed_at >= 5030.0 for d in left)
        assert store.load_agent(rng=0).to_state() == before  # only history went
        assert store.stats().rewards_seen == stats.rewards_seen
        expired = store.prune(pending_before=1040.0, batch=4)
        assert expired == type(result)(closed=0, pending=sum(1 for k in range(40) if k % 3 == 0))
        assert all(not d.pending or d.made_at >= 1040.0 for d in store.decisions())
        gone = next(d for d in left if d.pending and d.made_at < 1040.0)
        with pytest.raises(StoreError, match="unknown decision"):
            store.record(gone.decision_id, 1.0)  # a late POST of an expired decision
        nxt = store.decide(phi_prime=0.1, hour=0, rng=0)
        assert nxt.decision_id == stats.last_decision_id + 1  # ids are never reused


def test_retention_policy_is_stored_exported_and_applied(spec, tmp_path):
    with backends.create_store(spec, CONFIG) as store:
        assert store.retention == Retention()
        _fill(store)
        store.set_retention(Retention(closed=86400.0, pending=3600.0))
        assert store.retention == Retention(86400.0, 3600.0)
        doc = store.export()
        assert doc["retention"] == {"closed": 86400.0, "pending": 3600.0}
        result = store.apply_retention(now=5040.0 + 86400.0)  # closed before 5040, pending made before 1440 (all)
        assert result.closed == sum(1 for k in range(40) if k % 3)
        assert result.pending == sum(1 for k in range(60) if k % 3 == 0)
    copy = str(tmp_path / "copy.sqlite")
    backends.import_stream(copy, io.StringIO(json.dumps(doc)), name="doc")[0].close()
    with backends.open_store(copy) as imported:
        assert imported.retention == Retention(86400.0, 3600.0)


def test_streamed_export_round_trips_exactly_across_backends(spec, other):
    with backends.create_store(spec, CONFIG) as store:
        _fill(store)
        store.set_retention(Retention(pending=7200.0))
        text = _text(store)
        assert json.loads(text) == store.export()
    copy, count = backends.import_stream(other, io.StringIO(text), name="doc")
    with copy:
        assert count == 60
        assert _text(copy) == text
        assert copy.decide(phi_prime=0.2, hour=0, rng=0).decision_id == json.loads(text)["last_decision_id"] + 1


def test_any_key_order_and_layout_is_read(spec, tmp_path):
    with backends.create_store(spec, CONFIG) as store:
        _fill(store, 12)
        doc = store.export()
    reordered = {"decisions": doc["decisions"], **{k: v for k, v in reversed(doc.items()) if k != "decisions"}}
    tail = {k: v for k, v in doc.items() if k not in ("recovery", "retention")}
    tail["recovery"], tail["retention"] = doc["recovery"], doc["retention"]  # keys after the decisions
    for n, variant in enumerate((reordered, tail)):
        for text in (json.dumps(variant), json.dumps(variant, indent=3)):
            target = str(tmp_path / f"v{n}-{len(text)}.sqlite")
            store, count = backends.import_stream(target, io.StringIO(text), name="doc")
            with store:
                assert count == 12 and store.export() == doc


def _broken(doc: dict, where: int, change: dict) -> str:
    doc = json.loads(json.dumps(doc))
    doc["decisions"][where].update(change)
    return json.dumps(doc, indent=1)


@pytest.mark.parametrize(
    "change, fragment",
    [({"reward": None}, r"decisions\[40\]: closed_at and reward"),
     ({"replicas": 99}, r"decisions\[40\].replicas"),
     ({"decision_id": 3}, "duplicate decision id 3"),
     ({"decision_id": 10**6}, "above last_decision_id")],
)
def test_a_bad_entry_late_in_the_stream_writes_nothing(spec, change, fragment):
    with backends.create_store(spec, CONFIG) as store:
        _fill(store)
        doc = store.export()
        before = _text(store)
        text = _broken(doc, 40, change)
        with pytest.raises(StoreError, match=fragment) as err:
            backends.import_stream(spec, io.StringIO(text), name="bad.json", replace=True)
        assert str(err.value).startswith("bad.json:")
        assert _text(store) == before


def test_truncated_and_malformed_documents(spec, tmp_path):
    with backends.create_store(spec, CONFIG) as store:
        _fill(store, 10)
        text = _text(store)
    for bad, fragment in ((text[: len(text) // 2], "not valid JSON"), (text + "x", "after the document"),
                          (text.replace('"decisions": [', '"decisions": 7, "x": ['), "decisions"),
                          ("[]", "expected '{'"), ("", "expected '{'")):
        target = tmp_path / "t.sqlite"
        with pytest.raises(StoreError, match=fragment):
            backends.import_stream(str(target), io.StringIO(bad), name="d.json")
        assert not target.exists()  # a store this import created is removed again


def test_line_numbers_point_at_the_entry(tmp_path):
    with backends.create_store(str(tmp_path / "a.sqlite"), CONFIG) as store:
        _fill(store, 20)
        text = _text(store)
    lines = text.splitlines()
    index = next(i for i, line in enumerate(lines) if '"decision_id": 15,' in line)
    lines[index] = lines[index].replace('"explored": ', '"explored": 3, "x": ')
    with pytest.raises(StoreError, match=rf"d.json:{index + 1}: decisions\[14\].explored"):
        backends.import_stream(str(tmp_path / "b.sqlite"), io.StringIO("\n".join(lines)), name="d.json")


def test_durations():
    assert [parse_duration(t) for t in ("90d", "12h", "30m", "45s", "2w", "3600", "1.5d")] == [
        7776000.0, 43200.0, 1800.0, 45.0, 1209600.0, 3600.0, 129600.0]
    assert [format_duration(s) for s in (7776000.0, 43200.0, 90.0, 1209600.0)] == ["90d", "12h", "90s", "2w"]
    for bad in ("", "-1d", "ten", "5y", "1e3"):
        with pytest.raises(StoreError, match="not a duration"):
            parse_duration(bad)
    with pytest.raises(StoreError):
        Retention(closed=-1.0)


def test_cli_prune_retention_and_migrate(spec, tmp_path):
    runner = CliRunner()
    with backends.create_store(spec, CONFIG) as store:
        _fill(store, 30)  # made around t = 1000, i.e. in 1970: everything is old
    out = runner.invoke(agent, ["prune", "--store", spec])
    assert out.exit_code != 0 and "nothing to prune" in out.output
    out = runner.invoke(agent, ["retention", "--store", spec, "--pending", "2d"])
    assert out.exit_code == 0 and "pending decisions expire 2d after deciding" in out.output
    assert "closed decisions kept forever" in out.output
    out = runner.invoke(agent, ["prune", "--store", spec, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["pending"] == 10 and json.loads(out.output)["closed"] == 0
    target = str(tmp_path / "migrated.sqlite")
    out = runner.invoke(agent, ["migrate", "--from", spec, "--to", target])
    assert out.exit_code == 0, out.output
    assert "migrated 20 of 20 decisions" in out.output
    with backends.open_store(spec) as a, backends.open_store(target) as b:
        assert _text(a) == _text(b)
    again = runner.invoke(agent, ["migrate", "--from", spec, "--to", target])
    assert isinstance(again.exception, StoreError) and "already holds" in str(again.exception)
    out = runner.invoke(agent, ["prune", "--store", spec, "--older-than", "1d"])
    assert out.exit_code == 0 and "removed 20 closed decision(s)" in out.output and "0 decision(s) left" in out.output
    out = runner.invoke(agent, ["retention", "--store", spec, "--pending", "never"])
    assert "pending decisions kept forever" in out.output
    assert runner.invoke(agent, ["prune", "--store", spec, "--older-than", "soon"]).exit_code == 2
    assert runner.invoke(agent, ["migrate", "--from", spec, "--to", spec]).exit_code == 2


def _runs(store, count=10):
    """Node attempts of the model policy: key k recorded at t = 1000 + k, its runs ended at 1000 + k - 1."""
    for k in range(count):
        assert store.record_exposure(f"dag|run|n{k}|0|{k}", [[k % 168, k % 3 - 1, 60.0 + k, k % 2]],
                                     now=1000.0 + k, ran_until=999.0 + k)


def test_prune_forgets_old_run_keys_never_the_survival_model(spec):
    with backends.create_store(spec, CONFIG) as store:
        _runs(store)
        cells = store.survival_cells()
        assert store.stats().survival_horizon is None
        result = store.prune(runs_before=1005.0, batch=2)  # several batches
        assert (result.closed, result.pending, result.runs) == (0, 0, 5)
        assert store.survival_cells() == cells  # only the idempotency memory went
        stats = store.stats()
        assert (stats.survival_cells, stats.survival_runs, stats.survival_horizon) == (len(cells), 5, 1005.0)
        assert [key for key, _ in store.export()["survival_runs"]] == [f"dag|run|n{k}|0|{k}" for k in range(5, 10)]
        # a very late repeat of a pruned attempt: its key is gone, but its runs
        # ended before the horizon, so it is refused, and nothing is written
        with pytest.raises(StaleExposureError, match=r"dag\|run\|n2\|0\|2.*survival horizon"):
            store.record_exposure("dag|run|n2|0|2", [[2, 1, 62.0, 0]], now=9000.0, ran_until=1001.0)
        assert store.survival_cells() == cells and store.stats().survival_runs == 5
        assert store.record_exposure("dag|run|n7|0|7", [[7, 0, 67.0, 1]], ran_until=1006.0) is False  # kept: a no-op
        assert store.record_exposure("dag|run|new|0|11", [[1, -1, 5.0, 0]], now=1011.0, ran_until=1005.0) is True
        # the horizon never moves back (an older cutoff would let a pruned key's repeat in)
        assert store.prune(runs_before=500.0).runs == 0 and store.stats().survival_horizon == 1005.0
        # retention: keys are kept as long as closed decisions, and never shorter than the pending expiry
        store.set_retention(Retention(closed=100.0, pending=300.0))
        assert store.apply_retention(now=1308.0).runs == 3  # before 1008: n5, n6, n7
        assert store.stats().survival_horizon == 1008.0
        store.reset()
        assert store.stats().survival_horizon is None  # an empty model cannot be given a repeat


def test_run_keys_and_horizon_round_trip_across_backends(spec, other):
    with backends.create_store(spec, CONFIG) as store:
        _fill(store, 12)
        _runs(store)
        store.prune(runs_before=1003.0)
        text = _text(store)
        assert json.loads(text)["survival_horizon"] == 1003.0
    copy, _ = backends.import_stream(other, io.StringIO(text), name="doc")
    with copy:
        assert _text(copy) == text
        with pytest.raises(StaleExposureError):
            copy.record_exposure("dag|run|n1|0|1", [[1, 0, 61.0, 1]], ran_until=1000.0)
    old = json.loads(text)
    del old["survival_horizon"]
    old["schema_version"] = 4  # a document of the previous release
    copy, _ = backends.import_stream(other, io.StringIO(json.dumps(old)), name="old.json", replace=True)
    with copy:
        assert copy.stats().survival_horizon is None and copy.stats().survival_runs == 7
    bad = dict(old, survival_horizon="soon")
    with pytest.raises(StoreError, match="survival_horizon"):
        backends.import_stream(other, io.StringIO(json.dumps(bad)), name="bad.json", replace=True)


def test_run_key_window():
    assert Retention().runs_window() is None and Retention(pending=3600.0).runs_cutoff(5000.0) is None
    assert Retention(closed=86400.0).runs_window() == 86400.0
    assert Retention(closed=3600.0, pending=86400.0).runs_window() == 86400.0  # a POST may still come that late
    assert Retention(closed=86400.0, pending=3600.0).runs_cutoff(100000.0) == 100000.0 - 86400.0
    assert Retention(closed=3600.0, pending=7200.0).describe().endswith(
        "the model policy's run keys pruned 2h after recording (its survival model is never pruned)")


def test_cli_prune_and_stats_name_the_model_run_keys(spec):
    runner = CliRunner()
    with backends.create_store(spec, CONFIG) as store:
        _runs(store, 4)  # recorded in 1970: old
    helped = runner.invoke(agent, ["prune", "--help"]).output
    assert "survival_runs" in helped and "survival model itself are never pruned" in helped
    shown = runner.invoke(agent, ["stats", "--store", spec]).output
    assert "survival runs: 4 (keys of the node attempts counted" in shown
    assert "survival horizon: none" in shown
    out = runner.invoke(agent, ["prune", "--store", spec, "--older-than", "1d", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["runs"] == 4 and doc["survival_runs_left"] == 0 and doc["runs_before"] == doc["closed_before"]
    out = runner.invoke(agent, ["prune", "--store", spec, "--older-than", "1d", "--pending-older-than", "3d"])
    assert "0 model run key(s) recorded before" in out.output
    assert "estimates and survival model unchanged" in out.output
    shown = runner.invoke(agent, ["stats", "--store", spec, "--json"]).output
    assert json.loads(shown)["survival_runs"] == 0 and json.loads(shown)["survival_horizon"] > 0
    assert "no longer counted" in runner.invoke(agent, ["stats", "--store", spec]).output
