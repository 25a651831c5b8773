"""The run's store broker: one server connection shared by the hooks over a Unix socket."""

from __future__ import annotations

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from condor_rlrep.agent import AgentConfig
from condor_rlrep.store.broker import BrokerClient, StoreBroker, connect
from condor_rlrep.store.location import create_store, open_store
from condor_rlrep.errors import StaleExposureError, StoreError
from condor_rlrep.rundir.layout import broker_socket


@pytest.fixture
def sqlite_spec(tmp_path: Path) -> str:
    spec = str(tmp_path / "agent.sqlite")
    create_store(spec, AgentConfig(max_replicas=3)).close()
    return spec


def _short_socket(tmp_path: Path) -> str:
    path = broker_socket(str(tmp_path))
    assert path is not None, "tmp_path too long for a Unix socket"
    return path


def test_the_broker_answers_like_the_store_itself(tmp_path: Path, sqlite_spec: str) -> None:
    sock = _short_socket(tmp_path)
    with StoreBroker(sqlite_spec, sock) as broker:
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        client = connect(sock, sqlite_spec)
        assert isinstance(client, BrokerClient)
        with client:
            assert client.config == AgentConfig(max_replicas=3)
            decision = client.decide(phi_prime=0.2, timestamp=1_780_000_000.0, now=1_780_000_000.0,
                                     max_replicas=2, context={"node": "A"})
            assert 1 <= decision.replicas <= 2
            assert client.record(decision.decision_id, 1.0, {"k": 1}) is True
            assert client.record(decision.decision_id, 1.0, {"k": 1}) is False  # identical repeat: a no-op
            record = client.decision(decision.decision_id)
            assert record.reward == 1.0 and record.context == {"node": "A"} and not record.pending
            with pytest.raises(StoreError, match="closed"):  # a different outcome for a closed decision
                client.record(decision.decision_id, -5.0, {"k": 2})
            with pytest.raises(StoreError):
                client.decision(10_000)
            assert client.config.max_replicas == 3  # the connection survives errors
        assert broker.requests == 8 and broker.errors == 2
    assert not os.path.exists(sock)
    with open_store(sqlite_spec) as store:  # what went through the broker is in the store
        (row,) = store.decisions()
        assert row.reward == 1.0 and row.outcome == {"k": 1}


def test_a_model_update_older_than_the_horizon_is_refused_through_the_broker(tmp_path: Path, sqlite_spec: str) -> None:
    with open_store(sqlite_spec) as store:
        assert store.record_exposure("d|r|A|0|7", [[3, 0, 10.0, 1]], now=100.0, ran_until=99.0)
        assert store.prune(runs_before=200.0).runs == 1
    sock = _short_socket(tmp_path)
    with StoreBroker(sqlite_spec, sock) as broker, connect(sock, sqlite_spec) as client:
        with pytest.raises(StaleExposureError, match="survival horizon"):  # the kind survives the socket
            client.record_exposure("d|r|A|0|7", [[3, 0, 10.0, 1]], ran_until=99.0)
        assert client.record_exposure("d|r|B|0|8", [[3, 0, 5.0, 0]], ran_until=250.0) is True
        assert client.survival_cells() == [(3, 0, 15.0, 1.0)]
        assert broker.errors == 0  # an answer about the request, not a broken store
    assert not os.path.exists(sock)


def test_concurrent_hooks_through_one_broker_lose_nothing(tmp_path: Path, sqlite_spec: str) -> None:
    sock = _short_socket(tmp_path)
    errors: list[BaseException] = []

    def hook(k: int) -> None:
        try:
            for _ in range(10):
                with connect(sock, sqlite_spec) as client:
                    d = client.decide(phi_prime=0.1 * k)
                with connect(sock, sqlite_spec) as client:
                    client.record(d.decision_id, 1.0, {"hook": k})
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    with StoreBroker(sqlite_spec, sock):
        threads = [threading.Thread(target=hook, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    with open_store(sqlite_spec) as store:
        rows = store.decisions()
        stats = store.stats()
    assert len(rows) == 80 and len({r.decision_id for r in rows}) == 80
    assert stats.pending == 0 and stats.closed == 80


def test_bad_requests_get_an_answer_and_do_not_stop_the_broker(tmp_path: Path, sqlite_spec: str) -> None:
    sock = _short_socket(tmp_path)
    with StoreBroker(sqlite_spec, sock):
        raw = socket.socket(socket.AF_UNIX)
        raw.connect(sock)
        with raw, raw.makefile("rwb") as conn:
            for line in (b"not json\n", b"[1, 2]\n", b'{"op": "drop table"}\n', b'{"op": "decide", "args": {"x": 1}}\n'):
                conn.write(line)
                conn.flush()
                answer = json.loads(conn.readline())
                assert "error" in answer and answer["kind"] == "request"
        with connect(sock, sqlite_spec) as client:
            assert client.config.max_replicas == 3


def test_hooks_open_the_store_directly_without_a_live_broker(tmp_path: Path, sqlite_spec: str) -> None:
    sock = _short_socket(tmp_path)
    url = "postgresql://nobody@127.0.0.1:1/none"
    assert connect(sock, url) is None  # nothing there
    Path(sock).touch()  # a stale file of a killed reaper: no one listens
    assert connect(sock, url) is None
    # then open_store goes direct: here an unreachable server, so the hooks' StoreError (fail open)
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError):
        open_store(url, connect_timeout=1.0, broker=sock)
    # a file store never uses the broker, even when one answers
    os.unlink(sock)
    with StoreBroker(sqlite_spec, sock):
        with open_store(sqlite_spec, broker=sock) as store:
            assert not isinstance(store, BrokerClient)


def test_a_run_directory_too_long_for_a_socket_has_no_broker(tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    assert broker_socket(str(deep)) is None
    assert broker_socket(None) is None


def test_a_postgresql_store_through_the_broker(tmp_path: Path, pg_url: str) -> None:
    create_store(pg_url, AgentConfig(max_replicas=3)).close()
    sock = _short_socket(tmp_path)
    with StoreBroker(pg_url, sock) as broker:
        with open_store(pg_url, broker=sock) as store:
            assert isinstance(store, BrokerClient)
            d = store.decide(phi_prime=0.5, max_replicas=3, context={"node": "A"})
            assert store.record(d.decision_id, 1.0, {"ok": True})
        assert broker.requests == 2
    with open_store(pg_url) as store:
        (row,) = store.decisions()
        assert row.reward == 1.0 and row.context == {"node": "A"}


def test_the_model_policys_requests_go_through_the_broker(tmp_path: Path, pg_url: str) -> None:
    """model:R's PRE reads the survival model and its POST adds a node's runs,
    through the run's broker as the agent's hooks do (a server store)."""
    from condor_rlrep.survival import live as model_path
    from condor_rlrep.survival.model import ModelSpec

    create_store(pg_url, AgentConfig(max_replicas=3)).close()
    sock = _short_socket(tmp_path)
    cells = [[10, -1, 2521.0, 1.0], [10, 0, 1920.0, 0.0], [10, 1, 600.0, 1.0]]
    monday_10 = 1796637600.0
    with StoreBroker(pg_url, sock) as broker:
        with open_store(pg_url, broker=sock) as store:
            assert isinstance(store, BrokerClient)
            assert model_path.decide(store, ModelSpec(3), phi=0.5, estimate=1920, decided_at=monday_10, cap=3)[0] == 2
            assert store.record_exposure("run|A|0|41", cells) is True
            assert store.record_exposure("run|A|0|41", cells) is False
            with pytest.raises(StoreError, match="hour"):
                store.record_exposure("bad", [[200, 0, 1.0, 0]])
            assert store.survival_cells() == [tuple(c) for c in cells]
            replicas, detail = model_path.decide(store, ModelSpec(3), phi=0.5, estimate=1920, decided_at=monday_10,
                                                 cap=3)
            assert replicas == 3 and detail["hour_evictions"] == 2
        assert broker.errors == 1
    with open_store(pg_url) as store:
        assert store.survival_cells() == [tuple(c) for c in cells]
