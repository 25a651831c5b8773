"""The agent store: decisions and learned estimates in one SQLite file.

A decision is written when it is made (pending) and closed by exactly one
outcome; closing it folds the reward into the (state, action) estimate in
the same transaction, so the learned values are always the fold of exactly
the closed decisions. Every call is one short ``BEGIN IMMEDIATE``
transaction (writers queue on the busy timeout instead of failing on a stale
read snapshot); WAL makes that safe under many hook processes and a
``kill -9`` at any moment. The file is created mode 0600.

The hooks' fast path is ``SqliteStore(path).decide(...)`` in a fresh
process: this module imports neither numpy nor anything heavy. Operations
on the whole store (reset, retention and pruning, export and import) are in
:mod:`._sqlite_bulk`; :class:`AgentStore` is the interface it shares with
the PostgreSQL store (:mod:`.postgres`).
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from condor_rlrep.store import _sqlite_file as _sqlite
from condor_rlrep.store._sqlite_bulk import SqliteWholeStore
from condor_rlrep.store._sqlite_schema import APPLICATION_ID, SCHEMA_VERSION
from condor_rlrep.store._values import (
    DECISION_COLUMNS,
    check_decision_id,
    check_phi,
    check_reward,
    canonical_json,
    config_json,
    context_json,
    record_of,
)
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.store.interface import (
    DEFAULT_BUSY_TIMEOUT,
    DOCUMENT_FORMAT,
    AgentStore,
    Decision,
    DecisionRecord,
    StoreStats,
    default_store_path,
)
from condor_rlrep.agent.state import StateSpace
from condor_rlrep.errors import StoreError

if TYPE_CHECKING:
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.outcome import TaskOutcome

__all__ = [
    "AgentStore",
    "SqliteStore",
    "Decision",
    "DecisionRecord",
    "StoreStats",
    "default_store_path",
    "DOCUMENT_FORMAT",
    "DEFAULT_BUSY_TIMEOUT",
]

class SqliteStore(SqliteWholeStore):
    """The embedded store. Opens an existing store; see :meth:`create`.

    One connection for the object's life (use it as a context manager);
    every public call is one transaction.
    """

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise StoreError(f"{self.path}: no agent store here (create one with `condor-rlrep agent init`)")
        if os.path.isdir(self.path):
            raise StoreError(f"{self.path}: is a directory, not an agent store")
        self._conn = _sqlite.connect(self.path, busy_timeout)
        self._config_text = ""
        self._config: AgentConfig | None = None
        self._space: StateSpace | None = None
        try:
            self._check_and_migrate()
        except BaseException:
            self._conn.close()
            raise

    # -- creation ------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        config: AgentConfig | None = None,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
    ) -> SqliteStore:
        """Create a new store file (mode 0600); an existing file is an error."""
        path = os.fspath(path)
        config = config if config is not None else AgentConfig()
        parent = os.path.dirname(os.path.abspath(path))
        os.makedirs(parent, mode=0o700, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError as err:
            raise StoreError(f"{path}: already exists (pass --force to reset it, or remove it first)") from err
        os.close(fd)
        try:
            conn = _sqlite.connect(path, busy_timeout)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN IMMEDIATE")
                _sqlite.migrate(conn, 0)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute("INSERT INTO agent (id, config, rewards_seen) VALUES (1, ?, 0)", (config_json(config),))
                conn.execute("COMMIT")
            finally:
                conn.close()
        except BaseException:
            os.unlink(path)
            raise
        return cls(path, busy_timeout=busy_timeout)

    # -- the two verbs -------------------------------------------------------

    def decide(
        self,
        *,
        phi_prime: float,
        hour: int | None = None,
        timestamp: float | None = None,
        context: Mapping[str, Any] | None = None,
        rng: Any = None,
        now: float | None = None,
        max_replicas: int | None = None,
    ) -> Decision:
        """Choose a replica count and log it as a pending decision.

        The state is ``(hour, bin(φ′))``; ``hour`` wins over ``timestamp``,
        and with neither the hour of ``now`` (default: the clock) is used.
        ``rng``: see :mod:`condor_rlrep.agent._uniform` (default: OS entropy).
        ``max_replicas``: choose among ``1 … min(R, max_replicas)`` only (a
        live run's cap), so the decision logged is the replica count run.
        """
        # imported here, not at the top: a POST hook (record only) does not pay for them
        from condor_rlrep.agent._uniform import uniform_source
        from condor_rlrep.agent.policy import choose, epsilon

        made_at = time.time() if now is None else float(now)
        context_text = context_json(context)
        phi_value = check_phi(phi_prime)
        uniform = uniform_source(rng, prefer_numpy=False)
        with self._write() as conn:
            config, space, rewards_seen = self._agent_row(conn)
            if hour is not None:
                state = space.index(hour, phi_value)
            else:
                state = space.index_at(made_at if timestamp is None else timestamp, phi_value)
            state_hour, phi_bin = divmod(state, space.n_phi_bins)
            q_row, n_row = self._row(conn, config, state)
            if max_replicas is not None and max_replicas < len(q_row):
                limit = max(1, int(max_replicas))
                q_row, n_row = q_row[:limit], n_row[:limit]
            recovering = self._recovering(conn, state)
            eps = epsilon(config, rewards_seen, recovering)
            index, explored = choose(config, q_row, n_row, eps, uniform)
            cursor = conn.execute(
                "INSERT INTO decisions (made_at, state, hour, phi_bin, action, phi_prime, estimate, explored,"
                " epsilon, context) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (made_at, state, state_hour, phi_bin, index + 1, phi_value, q_row[index], int(explored), eps,
                 context_text),
            )
            decision_id = cursor.lastrowid
        return Decision(
            decision_id=int(decision_id),
            replicas=index + 1,
            state=state,
            hour=state_hour,
            phi_bin=phi_bin,
            explored=explored,
            estimate=q_row[index],
            epsilon=eps,
            phi_prime=phi_value,
            made_at=made_at,
        )

    def record(
        self,
        decision_id: int,
        reward: float,
        outcome: Mapping[str, Any] | None = None,
        *,
        now: float | None = None,
    ) -> bool:
        """Close a pending decision with its reward and learn from it.

        Returns True when the decision was closed now, False when it was
        already closed with the identical reward and outcome (a retried POST
        hook: counted once). A different outcome for a closed decision, or an
        unknown id, is a :class:`StoreError` and changes nothing.
        """
        decision_id = check_decision_id(decision_id)
        reward = check_reward(reward)
        outcome_text = None if outcome is None else canonical_json(outcome, "outcome")
        closed_at = time.time() if now is None else float(now)
        with self._write() as conn:
            row = conn.execute(
                "SELECT state, action, reward, outcome FROM decisions WHERE id = ?", (decision_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: unknown decision id {decision_id}")
            state, action, old_reward, old_outcome = row
            if old_reward is not None:
                if old_reward == reward and old_outcome == outcome_text:
                    return False
                raise StoreError(
                    f"{self.path}: decision {decision_id} is already closed with reward {old_reward!r}"
                    f" and a different outcome; refusing to record reward {reward!r}"
                )
            conn.execute(
                "UPDATE decisions SET closed_at = ?, reward = ?, outcome = ? WHERE id = ?",
                (closed_at, reward, outcome_text, decision_id),
            )
            self._learn(conn, state, action, reward)
        return True

    def record_outcome(self, decision_id: int, outcome: TaskOutcome, *, now: float | None = None) -> bool:
        """:meth:`record` an :func:`condor_rlrep.outcome.evaluate` result (its reward and fields)."""
        return self.record(decision_id, outcome.reward, asdict(outcome), now=now)

    # -- the survival model of model:R (condor_rlrep.survival.model) ---------------

    def survival_cells(self) -> list[tuple[int, int, float, float]]:
        """Every stored cell ``(hour of week, idle bucket (-1 unknown), exposure s, evictions)``."""
        with self._read() as conn:
            return [tuple(row) for row in conn.execute(  # type: ignore[misc]
                "SELECT hour, bucket, exposure, evictions FROM survival ORDER BY 1, 2")]

    def record_exposure(self, key: str, cells: Any, *, now: float | None = None,
                        ran_until: float | None = None) -> bool:
        """Add one node attempt's cells under ``key``, once: False (nothing
        added) when ``key`` was recorded before. One transaction.

        ``ran_until``: when the attempt's last run ended. An unknown key
        whose runs ended before the store's survival horizon is refused
        (:class:`~condor_rlrep.errors.StaleExposureError`): its key may
        have been pruned (:mod:`.retention`). Callers that may repeat an
        update (the hooks) pass it."""
        from condor_rlrep.survival.cells import check_cells, check_key, check_time, stale

        key, rows = check_key(key), check_cells(cells)
        until = None if ran_until is None else check_time(ran_until, "ran_until")
        with self._write() as conn:
            fresh = conn.execute("INSERT INTO survival_runs (key, recorded_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                                 (key, time.time() if now is None else float(now))).rowcount
            if not fresh:
                return False
            if until is not None:
                horizon = _sqlite.horizon(conn)
                if horizon is not None and until < horizon:
                    raise stale(self.path, key, until, horizon)  # rolls the key back
            conn.executemany(
                "INSERT INTO survival (hour, bucket, exposure, evictions) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (hour, bucket) DO UPDATE SET exposure = exposure + excluded.exposure,"
                " evictions = evictions + excluded.evictions", rows)
        return True

    # -- reading -------------------------------------------------------------

    @property
    def config(self) -> AgentConfig:
        with self._read() as conn:
            return self._agent_row(conn)[0]

    def decision(self, decision_id: int) -> DecisionRecord:
        decision_id = check_decision_id(decision_id)
        with self._read() as conn:
            row = conn.execute(f"SELECT {DECISION_COLUMNS} FROM decisions WHERE id = ?", (decision_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: unknown decision id {decision_id}")
        return record_of(row)

    def decisions(self) -> list[DecisionRecord]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id").fetchall()
        return [record_of(row) for row in rows]

    def stats(self) -> StoreStats:
        from condor_rlrep.agent.policy import epsilon

        with self._read() as conn:
            config, _, rewards_seen = self._agent_row(conn)
            total, closed = conn.execute("SELECT COUNT(*), COUNT(reward) FROM decisions").fetchone()
            recovering = conn.execute("SELECT COUNT(*) FROM recovery WHERE remaining > 0").fetchone()[0]
            last_id = _sqlite.last_id(conn)
            cells, runs = conn.execute("SELECT (SELECT COUNT(*) FROM survival), (SELECT COUNT(*) FROM survival_runs)"
                                       ).fetchone()
            horizon = _sqlite.horizon(conn)
        return StoreStats(
            path=self.path,
            schema_version=SCHEMA_VERSION,
            strategy=config.strategy,
            schedule=config.schedule,
            decisions=total,
            closed=closed,
            pending=total - closed,
            rewards_seen=rewards_seen,
            epsilon=epsilon(config, rewards_seen, False),
            states_recovering=recovering,
            last_decision_id=last_id,
            survival_cells=cells,
            survival_runs=runs,
            survival_horizon=horizon,
        )

    def load_agent(self, *, rng: Any = None) -> Agent:
        """An in-memory :class:`~condor_rlrep.agent.bandit.Agent` with this store's config and estimates."""
        from condor_rlrep.agent.bandit import Agent

        with self._read() as conn:
            config, _, rewards_seen = self._agent_row(conn)
            cells = [
                [s, a, n, q, json.loads(w)]
                for s, a, n, q, w in conn.execute("SELECT state, action, n, q, window FROM estimates ORDER BY 1, 2")
            ]
            recovery = {str(s): r for s, r in conn.execute("SELECT state, remaining FROM recovery WHERE remaining > 0")}
        return Agent.from_state(config, {"rewards_seen": rewards_seen, "recovery": recovery, "cells": cells}, rng=rng)

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``: ``"ok"`` for a sound file."""
        with self._read() as conn:
            return "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SqliteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.Error as err:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise _sqlite.store_error(self.path, err) from err

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn
        try:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        except sqlite3.Error as err:
            raise _sqlite.store_error(self.path, err) from err

    def _agent_row(self, conn: sqlite3.Connection) -> tuple[AgentConfig, StateSpace, int]:
        row = conn.execute("SELECT config, rewards_seen FROM agent WHERE id = 1").fetchone()
        if row is None:
            raise StoreError(f"{self.path}: agent row missing (corrupt store)")
        text, rewards_seen = row
        if text != self._config_text or self._config is None or self._space is None:
            try:
                config = AgentConfig.from_dict(json.loads(text))
            except (ValueError, TypeError) as err:
                raise StoreError(f"{self.path}: stored agent parameters are invalid: {err}") from err
            self._config, self._space, self._config_text = config, StateSpace.from_config(config), text
        return self._config, self._space, rewards_seen

    def _row(self, conn: sqlite3.Connection, config: AgentConfig, state: int) -> tuple[list[float], list[int]]:
        q_row = [config.initial_estimate] * config.max_replicas
        n_row = [0] * config.max_replicas
        for action, n, q in conn.execute("SELECT action, n, q FROM estimates WHERE state = ?", (state,)):
            if 1 <= action <= config.max_replicas:
                q_row[action - 1] = q
                n_row[action - 1] = n
        return q_row, n_row

    def _recovering(self, conn: sqlite3.Connection, state: int) -> bool:
        row = conn.execute("SELECT remaining FROM recovery WHERE state = ?", (state,)).fetchone()
        return row is not None and row[0] > 0

    def _learn(self, conn: sqlite3.Connection, state: int, action: int, reward: float) -> None:
        """The store's half of Agent.learn: same functions, same order."""
        from condor_rlrep.agent.estimator import drifted, push_window, update_estimate  # a PRE does not learn

        config, _, _ = self._agent_row(conn)
        row = conn.execute("SELECT n, q, window FROM estimates WHERE state = ? AND action = ?", (state, action)).fetchone()
        n, q, window_text = row if row is not None else (0, config.initial_estimate, "[]")
        q, n = update_estimate(q, n, reward, config.step_size)
        conn.execute("UPDATE agent SET rewards_seen = rewards_seen + 1 WHERE id = 1")
        drift = False
        window: list[float] = []
        if config.strategy == "epsilon-greedy" and config.schedule == "sliding-window":
            conn.execute("UPDATE recovery SET remaining = remaining - 1 WHERE state = ? AND remaining > 0", (state,))
            window = push_window(json.loads(window_text), reward, config.window)
            drift = drifted(window, q, config.window, config.drift_threshold)
        conn.execute(
            "INSERT INTO estimates (state, action, n, q, window) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (state, action) DO UPDATE SET n = excluded.n, q = excluded.q, window = excluded.window",
            (state, action, n, q, json.dumps(window)),
        )
        if drift:
            conn.execute("UPDATE estimates SET n = MIN(n, ?), window = '[]' WHERE state = ?", (config.forget_to, state))
            conn.execute(
                "INSERT INTO recovery (state, remaining) VALUES (?, ?)"
                " ON CONFLICT (state) DO UPDATE SET remaining = excluded.remaining",
                (state, config.recovery),
            )

    def _has_data(self, conn: sqlite3.Connection) -> bool:
        return (
            conn.execute("SELECT EXISTS (SELECT 1 FROM decisions) OR EXISTS (SELECT 1 FROM estimates)"
                         " OR EXISTS (SELECT 1 FROM survival)"
                         " OR (SELECT rewards_seen FROM agent WHERE id = 1) > 0").fetchone()[0]
            == 1
        )

    def _check_and_migrate(self) -> None:
        conn = self._conn
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as err:
            raise StoreError(f"{self.path}: not an agent store ({err})") from err
        if app_id != APPLICATION_ID:
            what = "an empty file" if os.path.getsize(self.path) == 0 else f"application id {app_id:#x}"
            raise StoreError(f"{self.path}: not a condor-rlrep agent store ({what})")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema version {version} is newer than this condor-rlrep"
                f" understands ({SCHEMA_VERSION}); upgrade condor-rlrep"
            )
        if version < SCHEMA_VERSION:
            with self._write() as conn:
                current = conn.execute("PRAGMA user_version").fetchone()[0]
                if current < SCHEMA_VERSION:
                    _sqlite.migrate(conn, current)


def load_agent(path: str, *, rng: Any = None) -> Agent:
    """An in-memory agent with the config and estimates of the SQLite store at ``path``."""
    with SqliteStore(path) as store:
        return store.load_agent(rng=rng)
