"""Store specs that are server URLs: resolution, naming, and instrument writing them into a run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from _hookutil import FIGURE1
from _pgcluster import PASSWORD, Cluster
from condor_rlrep.store.location import (
    describe_store, has_password, open_store, resolve_store, store_exists, unwritable_reason,
)
from condor_rlrep.errors import InputError, StoreError
from condor_rlrep.instrument import InstrumentOptions, instrument


def test_a_postgresql_url_is_kept_and_named_without_its_password() -> None:
    url = "postgresql://rlrep:pa%3Ass@db.example:5432/agent?sslmode=require"
    assert resolve_store(url, {}) == url
    assert resolve_store(None, {"CONDOR_RLREP_STORE": url}) == url
    assert has_password(url) and not has_password("postgresql://rlrep@db.example/agent")
    assert has_password("postgres://db.example/agent?password=x")
    assert describe_store(url) == "postgresql://rlrep@db.example:5432/agent?sslmode=require"
    assert describe_store("postgres://db.example/agent?password=x") == "postgres://db.example/agent"
    assert unwritable_reason(url) is None
    assert not has_password("/data/agent.sqlite") and describe_store("/data/agent.sqlite") == "/data/agent.sqlite"


def test_an_unknown_url_scheme_is_refused_by_name() -> None:
    with pytest.raises(StoreError, match=r"unknown scheme 'mysql'.*postgresql://"):
        resolve_store("mysql://u:secret@h/db", {})
    with pytest.raises(StoreError) as caught:
        resolve_store("mysql://u:secret@h/db", {})
    assert "secret" not in str(caught.value)


def test_an_unreachable_server_is_a_store_error_within_the_connect_timeout() -> None:
    pytest.importorskip("psycopg")
    url = "postgresql://nobody@127.0.0.1:1/none"  # port 1: refused at once
    with pytest.raises(StoreError):
        open_store(url, connect_timeout=1.0)
    with pytest.raises(StoreError):
        store_exists(url)


def _user_dag(tmp_path: Path) -> Path:
    user = tmp_path / "user"
    shutil.copytree(FIGURE1.parent, user)
    return user / "figure1.dag"


def test_instrument_writes_the_url_without_its_password_and_says_where_it_must_be(
    tmp_path: Path, pg_cluster: Cluster
) -> None:
    pg_cluster.create_database("rlrep_instrument")
    url = pg_cluster.tcp_url("rlrep_instrument")
    dag = _user_dag(tmp_path)
    result = instrument(dag, dag.with_name("run.dag"), InstrumentOptions(store=url, phi=1.0))
    bare = pg_cluster.tcp_url("rlrep_instrument", password=None)
    assert result.store == bare and result.store_created
    assert "~/.pgpass" in result.store_note and PASSWORD not in result.store_note
    written = [p for p in Path(result.context).rglob("*") if p.is_file()] + [Path(result.dag)]
    assert not [p for p in written if PASSWORD in p.read_text(errors="replace")]
    assert json.loads((Path(result.context) / "hooks.json").read_text())["store"] == bare
    with open_store(url) as store:  # created with the live defaults
        assert store.config.max_replicas == 3 and store.stats().decisions == 0
    # and a second instrument finds the existing store
    again = instrument(dag, dag.with_name("run2.dag"), InstrumentOptions(store=url, phi=1.0))
    assert not again.store_created and again.store_note.startswith("existing")


def test_instrument_refuses_an_unreachable_server_and_writes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    dag = _user_dag(tmp_path)
    before = sorted(p.name for p in dag.parent.iterdir())
    with pytest.raises(InputError, match="agent store unusable"):
        instrument(dag, dag.with_name("run.dag"),
                   InstrumentOptions(store="postgresql://nobody:pw@127.0.0.1:1/none", phi=1.0))
    assert sorted(p.name for p in dag.parent.iterdir()) == before
