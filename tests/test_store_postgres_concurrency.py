"""Many hook processes against one PostgreSQL store: concurrency, clients
killed at random moments, and the server restarted under them."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import defaultdict

import pytest

from condor_rlrep.agent import AgentConfig
from condor_rlrep.errors import StoreError

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")

from condor_rlrep.store.postgres import PostgresStore  # noqa: E402
from condor_rlrep.store._postgres_schema import SCHEMA  # noqa: E402

REWARDS = (1.0, 0.5, -5.0)
CONFIG = AgentConfig(switch_after=10**9)  # sample means throughout: q is the plain mean of a cell's rewards


def _reward_of(decision_id: int) -> float:
    return REWARDS[decision_id % 3]


def _hook_worker(url: str, worker: int, pairs: int, barrier, results) -> None:
    """Each call opens the store afresh, as the PRE and POST hooks do."""
    errors, fresh = [], 0
    rng = random.Random(worker)
    barrier.wait()
    for k in range(pairs):
        try:
            with PostgresStore(url) as store:
                d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=(worker + k) % 24, rng=rng)
            for _ in range(2):  # the second is a retried POST hook: must not count
                with PostgresStore(url) as store:
                    fresh += store.record(d.decision_id, _reward_of(d.decision_id), {"w": worker})
        except Exception as err:  # collected and asserted on in the parent
            errors.append(repr(err))
    results.put((worker, fresh, errors))


def check_consistent(url: str) -> int:
    """Estimates are exactly the fold of the closed decisions; returns their number."""
    with psycopg.connect(url, autocommit=True) as conn:
        closed = conn.execute(f"SELECT COUNT(*) FROM {SCHEMA}.decisions WHERE reward IS NOT NULL").fetchone()[0]
        seen = conn.execute(f"SELECT rewards_seen + (SELECT SUM(n) FROM {SCHEMA}.reward_counts) FROM {SCHEMA}.agent"
                            ).fetchone()[0]
        assert seen == closed
        assert conn.execute(f"SELECT COALESCE(SUM(n), 0) FROM {SCHEMA}.estimates").fetchone()[0] == closed
        by_cell = defaultdict(list)
        for state, action, r in conn.execute(
            f"SELECT state, action, reward FROM {SCHEMA}.decisions WHERE reward IS NOT NULL ORDER BY id"
        ):
            by_cell[(state, action)].append(r)
        for state, action, n, q in conn.execute(f"SELECT state, action, n, q FROM {SCHEMA}.estimates"):
            rewards = by_cell[(state, action)]
            assert n == len(rewards)
            assert q == pytest.approx(sum(rewards) / n, abs=1e-9)
        half = conn.execute(
            f"SELECT COUNT(*) FROM {SCHEMA}.decisions WHERE (closed_at IS NULL) != (reward IS NULL)"
            " OR (reward IS NOT NULL AND outcome IS NULL)"
        ).fetchone()[0]
        assert half == 0
        return closed


def test_64_processes_decide_and_record_each_outcome_once(pg_url):
    PostgresStore.create(pg_url, CONFIG).close()
    ctx = multiprocessing.get_context("fork")
    n_workers, pairs = 64, 8
    barrier = ctx.Barrier(n_workers)
    results = ctx.Queue()
    procs = [ctx.Process(target=_hook_worker, args=(pg_url, w, pairs, barrier, results)) for w in range(n_workers)]
    for p in procs:
        p.start()
    collected = [results.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    errors = [e for _, _, errs in collected for e in errs]
    assert errors == []
    assert sum(fresh for _, fresh, _ in collected) == n_workers * pairs  # 0 lost, 0 double-counted
    assert check_consistent(pg_url) == n_workers * pairs
    with PostgresStore(pg_url) as store:
        stats = store.stats()
    assert (stats.decisions, stats.pending, stats.rewards_seen) == (n_workers * pairs, 0, n_workers * pairs)


def _looping_worker(url: str, seed: int) -> None:
    rng = random.Random(seed)
    while True:
        with PostgresStore(url) as store:
            d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=rng.randrange(24), rng=rng)
            store.record(d.decision_id, _reward_of(d.decision_id), {"seed": seed})


def test_100_kills_at_random_moments_leave_a_sound_store(pg_url):
    PostgresStore.create(pg_url, CONFIG).close()
    ctx = multiprocessing.get_context("fork")
    chooser = random.Random(1234)
    kills = 0
    for round_ in range(10):
        procs = [ctx.Process(target=_looping_worker, args=(pg_url, 100 * round_ + w)) for w in range(10)]
        for p in procs:
            p.start()
        for p in procs:
            time.sleep(chooser.uniform(0.01, 0.12))
            os.kill(p.pid, signal.SIGKILL)
            kills += 1
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == -signal.SIGKILL
        closed = check_consistent(pg_url)
    print(f"kills: {kills} clients killed, {closed} decisions closed, estimates = their fold")
    assert kills == 100 and closed > 0
    with PostgresStore(pg_url, statement_timeout=5.0) as store:  # no lock was left behind
        d = store.decide(phi_prime=0.2, hour=3)
        assert store.record(d.decision_id, 1.0, {"after": True})
    assert check_consistent(pg_url) == closed + 1


def _restart_worker(url: str, seed: int, seconds: float, results) -> None:
    """Hook-style calls for ``seconds``; a failed record is spooled, as the POST hook does."""
    rng = random.Random(seed)
    decided, recorded, spool, errors = [], [], [], []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with PostgresStore(url, connect_timeout=2, statement_timeout=5.0) as store:
                d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=rng.randrange(24), rng=rng)
        except StoreError as err:
            errors.append(str(err))
            time.sleep(0.05)
            continue
        decided.append(d.decision_id)
        try:
            with PostgresStore(url, connect_timeout=2, statement_timeout=5.0) as store:
                store.record(d.decision_id, _reward_of(d.decision_id), {"seed": seed})
            recorded.append(d.decision_id)
        except StoreError as err:
            errors.append(str(err))
            spool.append((d.decision_id, seed))
    results.put((decided, recorded, spool, errors))


def test_server_restart_mid_run_is_a_clean_store_error_and_loses_nothing(pg_cluster, pg_url):
    PostgresStore.create(pg_url, CONFIG).close()
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    procs = [ctx.Process(target=_restart_worker, args=(pg_url, w, 6.0, results)) for w in range(8)]
    for p in procs:
        p.start()
    time.sleep(1.5)
    pg_cluster.restart()  # fast shutdown: every connection is cut, then the server comes back
    collected = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    decided = [i for d, _, _, _ in collected for i in d]
    recorded = [i for _, r, _, _ in collected for i in r]
    spool = [i for _, _, s, _ in collected for i in s]
    errors = [e for _, _, _, errs in collected for e in errs]
    print(f"restart: {len(decided)} decided, {len(recorded)} recorded, {len(spool)} spooled, {len(errors)} StoreErrors,"
          f" e.g. {sorted(set(e.split(': ', 1)[1][:90] for e in errors))[:3]}")
    assert errors, "the restart should have been seen by some call"
    assert all(e.startswith("postgresql://") and "Traceback" not in e for e in errors)
    with PostgresStore(pg_url) as store:
        for decision_id, seed in spool:  # the spool flushes once the server is back: same outcome, counted once
            store.record(decision_id, _reward_of(decision_id), {"seed": seed})
        for decision_id in decided:
            record = store.decision(decision_id)  # every decision handed out is there
            assert not record.pending and record.reward == _reward_of(decision_id)
        assert store.stats().pending == 0
    assert check_consistent(pg_url) == len(decided) == len(recorded) + len(spool)
