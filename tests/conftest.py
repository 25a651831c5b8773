"""Session fixtures shared by test modules: a throw-away PostgreSQL server
and the real HTCondor pool; and how the suite is spread over pytest-xdist
workers (``python -m pytest -n 4 --dist loadscope``).

Under xdist every worker is its own session: it starts its own PostgreSQL
cluster and its own pool when one of its tests asks for them (own temporary
folder, own free ports), so no test sees another worker's databases or jobs.
The checkout the pools' hooks run is installed once per run, in a folder the
controller makes (``RLREP_TEST_SHARED``) and removes at the end.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from _pgcluster import Cluster, ClusterUnavailable, start_cluster
from _pool import Pool, PoolUnavailable, start_pool

_databases = itertools.count(1)
SHARED = "RLREP_TEST_SHARED"


def pytest_configure(config: pytest.Config) -> None:
    """In the controller (or a run without xdist): a folder the pool user can
    reach, for the one install of the checkout that every worker's pool uses.
    Workers inherit it through the environment."""
    if hasattr(config, "workerinput"):
        return
    # the order pytest_collection_modifyitems gives is the order work is
    # handed out in (xdist would otherwise put the modules with most tests first)
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False
    if os.environ.get(SHARED):
        return
    base = tempfile.mkdtemp(prefix="rlrep-tests-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None)
    os.chmod(base, 0o755)
    os.environ[SHARED] = base
    config.stash[_shared_key] = base


def pytest_unconfigure(config: pytest.Config) -> None:
    base = config.stash.get(_shared_key, None)
    if base:
        os.environ.pop(SHARED, None)
        shutil.rmtree(base, ignore_errors=True)


_shared_key = pytest.StashKey[str]()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the tests for xdist's ``--dist loadscope`` (one module's tests on
    one worker, in file order, as in a run without xdist: a module fixture such
    as a pool of its own or results computed once is built once). The modules
    with long tests go first (pool, then slow), so that no worker starts a
    five-minute module when the others are nearly done. Every test still
    runs; only where and when changes. (``--dist loadgroup`` would group finer,
    but xdist 3.8 cannot mark the groups in pytest 9's node ids.)
    """
    def rank(item: pytest.Item) -> int:
        return 0 if item.get_closest_marker("pool") else 1 if item.get_closest_marker("slow") else 2

    modules: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        modules[module] = min(modules.get(module, 2), rank(item))
    # stable: file order within a module and among modules of one rank
    items.sort(key=lambda item: modules[item.nodeid.split("::")[0]])


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
    shared = os.environ.get(SHARED)
    try:
        started = start_pool(Path(shared) if shared else None)
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
