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

from condor_rlrep.agent import AgentConfig, backends
from condor_rlrep.agent.retention import Retention, format_duration, parse_duration
from condor_rlrep.cli.agent_cmd import agent
from condor_rlrep.errors import StoreError

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
