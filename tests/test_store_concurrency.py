"""Many hook processes against one store file: concurrency and kill -9 safety."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import sqlite3
import time
from collections import defaultdict

import pytest

from condor_rlrep.agent import AgentConfig
from condor_rlrep.store import SqliteStore

REWARDS = (1.0, 0.5, -5.0)


def _reward_of(decision_id: int) -> float:
    return REWARDS[decision_id % 3]


def _hook_worker(path: str, worker: int, pairs: int, barrier, results) -> None:
    """Each call opens the store afresh, as the PRE and POST hooks do."""
    errors = []
    fresh = 0
    rng = random.Random(worker)
    barrier.wait()
    for k in range(pairs):
        try:
            with SqliteStore(path) as store:
                d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=(worker + k) % 24, rng=rng)
            for _ in range(2):  # the second is a retried POST hook: must not count
                with SqliteStore(path) as store:
                    fresh += store.record(d.decision_id, _reward_of(d.decision_id), {"w": worker})
        except Exception as err:  # collected and asserted on in the parent
            errors.append(repr(err))
    results.put((worker, fresh, errors))


def _check_consistent(path: str) -> int:
    """Estimates are exactly the fold of the closed decisions; returns their number."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        closed = conn.execute("SELECT COUNT(*) FROM decisions WHERE reward IS NOT NULL").fetchone()[0]
        assert conn.execute("SELECT rewards_seen FROM agent").fetchone()[0] == closed
        assert (conn.execute("SELECT COALESCE(SUM(n), 0) FROM estimates").fetchone()[0]) == closed
        by_cell = defaultdict(list)
        for state, action, r in conn.execute(
            "SELECT state, action, reward FROM decisions WHERE reward IS NOT NULL ORDER BY id"
        ):
            by_cell[(state, action)].append(r)
        for state, action, n, q in conn.execute("SELECT state, action, n, q FROM estimates"):
            rewards = by_cell[(state, action)]
            assert n == len(rewards)
            assert q == pytest.approx(sum(rewards) / n, abs=1e-9)
        half = conn.execute(
            "SELECT COUNT(*) FROM decisions WHERE (closed_at IS NULL) != (reward IS NULL)"
            " OR (reward IS NOT NULL AND outcome IS NULL)"
        ).fetchone()[0]
        assert half == 0
        return closed
    finally:
        conn.close()


def test_32_processes_decide_and_record_each_outcome_once(tmp_path):
    path = str(tmp_path / "agent.sqlite")
    SqliteStore.create(path, AgentConfig(switch_after=10**9)).close()  # sample means throughout
    ctx = multiprocessing.get_context("fork")
    n_workers, pairs = 32, 15
    barrier = ctx.Barrier(n_workers)
    results = ctx.Queue()
    procs = [ctx.Process(target=_hook_worker, args=(path, w, pairs, barrier, results)) for w in range(n_workers)]
    for p in procs:
        p.start()
    collected = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    errors = [e for _, _, errs in collected for e in errs]
    assert errors == []  # in particular no "database is locked"
    assert sum(fresh for _, fresh, _ in collected) == n_workers * pairs
    assert _check_consistent(path) == n_workers * pairs
    with SqliteStore(path) as store:
        stats = store.stats()
    assert (stats.decisions, stats.pending, stats.rewards_seen) == (n_workers * pairs, 0, n_workers * pairs)


def _looping_worker(path: str, seed: int) -> None:
    rng = random.Random(seed)
    while True:
        with SqliteStore(path) as store:
            d = store.decide(phi_prime=rng.uniform(-0.5, 1.5), hour=rng.randrange(24), rng=rng)
            store.record(d.decision_id, _reward_of(d.decision_id), {"seed": seed})


def test_kill_9_at_random_moments_leaves_a_sound_store(tmp_path):
    path = str(tmp_path / "agent.sqlite")
    SqliteStore.create(path, AgentConfig(switch_after=10**9)).close()
    ctx = multiprocessing.get_context("fork")
    chooser = random.Random(1234)
    for round_ in range(4):
        procs = [ctx.Process(target=_looping_worker, args=(path, 100 * round_ + w)) for w in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            time.sleep(chooser.uniform(0.02, 0.15))
            os.kill(p.pid, signal.SIGKILL)
        for p in procs:
            p.join(timeout=30)
            assert p.exitcode == -signal.SIGKILL
        closed = _check_consistent(path)
    assert closed > 0
    with SqliteStore(path) as store:  # still usable after the carnage
        assert store.integrity_check() == "ok"
        d = store.decide(phi_prime=0.2, hour=3)
        assert store.record(d.decision_id, 1.0, {"after": True})
    assert _check_consistent(path) == closed + 1
