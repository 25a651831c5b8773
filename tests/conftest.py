"""Session fixtures shared by test modules: a throw-away PostgreSQL server
and the real HTCondor pool."""

from __future__ import annotations

import itertools
import os
import shutil

import pytest

from _pgcluster import Cluster, ClusterUnavailable, start_cluster
from _pool import Pool, PoolUnavailable, start_pool

_databases = itertools.count(1)


@pytest.fixture(scope="session")
def pg_cluster() -> Cluster:
    """A PostgreSQL 15 cluster in a temporary directory, run as an unprivileged
    user on 127.0.0.1 and a private Unix socket; skips, with the reason, when
    none can be started (or psycopg is missing)."""
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed (pip install 'condor-rlrep[postgresql]')")
    try:
        cluster = start_cluster(fsync=False)
    except ClusterUnavailable as err:
        pytest.skip(f"no PostgreSQL server: {err}")
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database owned by the unprivileged role; its socket URL."""
    return pg_cluster.create_database(f"rlrep_{next(_databases)}")


@pytest.fixture(scope="session")
def pool() -> Pool:
    """A personal HTCondor 25.14 pool with this checkout installed in it
    (``../shared/htcondor``); skips, with the reason, when there is none."""
    try:
        started = start_pool()
    except PoolUnavailable as err:
        pytest.skip(f"no HTCondor pool: {err}")
    try:
        yield started
    finally:
        started.stop()
        if os.environ.get("RLREP_KEEP_POOL"):  # for a look at the logs afterwards
            print(f"pool files kept in {started.base}")
        else:
            shutil.rmtree(started.base, ignore_errors=True)
