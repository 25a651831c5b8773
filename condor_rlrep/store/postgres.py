"""The agent store on a PostgreSQL server, for a pool whose access points share one agent.

Same contract as :class:`~condor_rlrep.store.sqlite.SqliteStore`: a decision
is logged when it is made and closed by exactly one outcome, whose reward is
folded into the (state, action) estimate in the same transaction; decision
ids are never reused; an identical repeated record is a no-op and a
different outcome for a closed decision an error; the same validation, the
same estimator and policy functions, the same export document.

Concurrency is the database's. ``decide`` reads its state's row in one
statement and inserts the decision in another (one short transaction
each; a decision carries what it saw). ``record`` is one transaction: an
``UPDATE … WHERE reward IS NULL RETURNING`` closes the decision under its
row lock (a concurrent duplicate waits, then finds it closed) and takes a
transaction advisory lock on the decision's state, which orders every
write to that state's estimates and recovery (so a drift that rewrites the
whole state cannot deadlock with a record of a sibling action); the global
reward count is sharded (see :mod:`.postgres_schema`). A client killed at
any point leaves nothing half done: the server rolls its transaction back.

Connections carry a statement timeout (a call never waits forever on a lock
or a stalled server) and ``idle_in_transaction_session_timeout`` (a stopped
client cannot hold locks for long); failures are :class:`StoreError` naming
the URL without its password.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import psycopg

from condor_rlrep.store._postgres_bulk import PostgresWholeStore
from condor_rlrep.store._postgres_session import PostgresSession
from condor_rlrep.store._values import (
    DECISION_COLUMNS,
    canonical_json,
    check_decision_id,
    check_phi,
    check_reward,
    context_json,
    record_of,
)
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.store.interface import DEFAULT_BUSY_TIMEOUT, Decision, DecisionRecord, StoreStats
from condor_rlrep.store._postgres_schema import LOCK_CLASS, SCHEMA, SCHEMA_VERSION, SHARDS
from condor_rlrep.store.postgres_url import ambiguous, is_postgres_url, redact_url
from condor_rlrep.agent.state import StateSpace
from condor_rlrep.errors import StoreError

if TYPE_CHECKING:
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.outcome import TaskOutcome

__all__ = ["PostgresStore", "open_postgres", "is_postgres_url", "redact_url", "DEFAULT_CONNECT_TIMEOUT"]

DEFAULT_CONNECT_TIMEOUT = 10.0

_S = SCHEMA
_DECIDE_READ = (
    f"SELECT a.config, a.rewards_seen + (SELECT COALESCE(SUM(n), 0) FROM {_S}.reward_counts)::bigint,"
    f" (SELECT remaining FROM {_S}.recovery WHERE state = %(s)s),"
    f" ARRAY(SELECT action FROM {_S}.estimates WHERE state = %(s)s ORDER BY action),"
    f" ARRAY(SELECT n FROM {_S}.estimates WHERE state = %(s)s ORDER BY action),"
    f" ARRAY(SELECT q FROM {_S}.estimates WHERE state = %(s)s ORDER BY action)"
    f" FROM {_S}.agent a WHERE a.id = 1"
)
_INSERT_DECISION = (
    f"INSERT INTO {_S}.decisions (made_at, state, hour, phi_bin, action, phi_prime, estimate, explored, epsilon,"
    " context) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
# record's first round trip: one simple query of three statements (each its own
# snapshot): open the transaction, close the decision under its row lock and
# take its state's lock, then read the cell as it is once that lock is held
_CLOSE = (
    f"BEGIN; UPDATE {_S}.decisions SET closed_at = %s, reward = %s, outcome = %s WHERE id = %s AND reward IS NULL"
    f" RETURNING pg_advisory_xact_lock({LOCK_CLASS}, state)::text;"
    f' SELECT d.state, d.action, d.reward, d.outcome, a.config, e.n, e.q, e."window"'
    f" FROM {_S}.decisions d CROSS JOIN {_S}.agent a"
    f" LEFT JOIN {_S}.estimates e ON e.state = d.state AND e.action = d.action WHERE d.id = %s AND a.id = 1"
)
# and its second: every write of the fold, then COMMIT
_FOLD = (
    f"WITH bump AS (UPDATE {_S}.reward_counts SET n = n + 1 WHERE shard = pg_backend_pid() %% {SHARDS} RETURNING 1),"
    f" recover AS (UPDATE {_S}.recovery SET remaining = remaining - 1"
    f"  WHERE %(sliding)s AND state = %(s)s AND remaining > 0 RETURNING 1)"
    f' INSERT INTO {_S}.estimates (state, action, n, q, "window") VALUES (%(s)s, %(a)s, %(n)s, %(q)s, %(w)s)'
    f' ON CONFLICT (state, action) DO UPDATE SET n = excluded.n, q = excluded.q, "window" = excluded."window";'
)
_DRIFT = (
    f"UPDATE {_S}.estimates SET n = LEAST(n, %(forget)s), \"window\" = '[]' WHERE state = %(s)s;"
    f" INSERT INTO {_S}.recovery (state, remaining) VALUES (%(s)s, %(recovery)s)"
    " ON CONFLICT (state) DO UPDATE SET remaining = excluded.remaining;"
)
_LAST_ID = f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {_S}.decisions_id_seq"


def open_postgres(
    url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, statement_timeout: float | None = DEFAULT_BUSY_TIMEOUT
) -> PostgresStore:
    """Open the store in the database ``url`` names (what the hooks and CLIs call)."""
    return PostgresStore(url, connect_timeout=connect_timeout, statement_timeout=statement_timeout)


class PostgresStore(PostgresWholeStore, PostgresSession):
    """The server store. Opens an existing store; see :meth:`create`.

    One connection for the object's life (use it as a context manager).
    ``location`` (and ``path``, as for SQLite) is the URL without its password.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        statement_timeout: float | None = DEFAULT_BUSY_TIMEOUT,
        _expect_store: bool = True,
    ):
        if not is_postgres_url(url):
            raise StoreError(f"{url}: not a postgresql:// URL")
        self._url = url
        self.location = self.path = redact_url(url)
        why = ambiguous(url)
        if why is not None:  # libpq would read another host or password than the user wrote
            raise StoreError(f"{self.location}: store URL not used: {why}")
        self._config_text = ""
        self._config: AgentConfig | None = None
        self._space: StateSpace | None = None
        self._conn = self._connect(connect_timeout, statement_timeout)
        # client-side binding: a record's statements travel together in one simple query
        self._client_cursor = psycopg.ClientCursor(self._conn)
        try:
            if _expect_store:
                self._check_and_migrate()
        except BaseException:
            self._conn.close()
            raise

    # -- creation ------------------------------------------------------------

    @classmethod
    def create(
        cls,
        url: str,
        config: AgentConfig | None = None,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        statement_timeout: float | None = DEFAULT_BUSY_TIMEOUT,
    ) -> PostgresStore:
        """Create the store's schema in an existing database; a store already there is an error."""
        store = cls(url, connect_timeout=connect_timeout, statement_timeout=statement_timeout, _expect_store=False)
        try:
            with store._errors(), store._conn.transaction():
                store._create_schema(config if config is not None else AgentConfig())
            store._check_and_migrate()
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _unchecked(cls, url: str) -> PostgresStore:
        """Connected, but the database may hold no store yet (import and save create one)."""
        return cls(url, _expect_store=False)

    @classmethod
    def exists(cls, url: str, *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> bool:
        """Whether the database holds a store (a connection failure is a StoreError)."""
        store = cls(url, connect_timeout=connect_timeout, _expect_store=False)
        try:
            return store._schema_comment() is not None
        finally:
            store.close()

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
        """Choose a replica count and log it as a pending decision (see SqliteStore.decide)."""
        from condor_rlrep.agent._uniform import uniform_source
        from condor_rlrep.agent.policy import choose, epsilon

        made_at = time.time() if now is None else float(now)
        context_text = context_json(context)
        phi_value = check_phi(phi_prime)
        uniform = uniform_source(rng, prefer_numpy=False)
        with self._errors():
            while True:  # the state depends on the parameters, which a reset may have changed
                config, space = self._known_config()
                if hour is not None:
                    state = space.index(hour, phi_value)
                else:
                    state = space.index_at(made_at if timestamp is None else timestamp, phi_value)
                row = self._conn.execute(_DECIDE_READ, {"s": state}).fetchone()
                if row is None:
                    raise StoreError(f"{self.location}: agent row missing (corrupt store)")
                text, rewards_seen, remaining, actions, counts, values = row
                if text == self._config_text:
                    break
                self._parse_config(text)
            state_hour, phi_bin = divmod(state, space.n_phi_bins)
            q_row = [config.initial_estimate] * config.max_replicas
            n_row = [0] * config.max_replicas
            for action, n, q in zip(actions, counts, values):
                if 1 <= action <= config.max_replicas:
                    q_row[action - 1], n_row[action - 1] = q, n
            if max_replicas is not None and max_replicas < len(q_row):
                limit = max(1, int(max_replicas))
                q_row, n_row = q_row[:limit], n_row[:limit]
            eps = epsilon(config, rewards_seen, remaining is not None and remaining > 0)
            index, explored = choose(config, q_row, n_row, eps, uniform)
            decision_id = self._conn.execute(
                _INSERT_DECISION,
                (made_at, state, state_hour, phi_bin, index + 1, phi_value, q_row[index], int(explored), eps,
                 context_text),
            ).fetchone()[0]
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
        """Close a pending decision and learn from it (see SqliteStore.record)."""
        decision_id = check_decision_id(decision_id)
        reward = check_reward(reward)
        outcome_text = None if outcome is None else canonical_json(outcome, "outcome")
        closed_at = time.time() if now is None else float(now)
        with self._errors(), self._rollback_on_error():
            cursor = self._client_cursor
            cursor.execute(_CLOSE, (closed_at, reward, outcome_text, decision_id, decision_id))
            cursor.nextset()
            closed_now = cursor.fetchone() is not None
            cursor.nextset()
            row = cursor.fetchone()
            if not closed_now:
                cursor.execute("ROLLBACK")
                if row is None:
                    raise StoreError(f"{self.location}: unknown decision id {decision_id}")
                old_reward, old_outcome = row[2], row[3]
                if old_reward == reward and old_outcome == outcome_text:
                    return False
                raise StoreError(
                    f"{self.location}: decision {decision_id} is already closed with reward {old_reward!r}"
                    f" and a different outcome; refusing to record reward {reward!r}"
                )
            state, action, _, _, text, n, q, window_text = row
            cursor.execute(self._fold(state, action, reward, text, n, q, window_text) + " COMMIT")
        return True

    def record_outcome(self, decision_id: int, outcome: TaskOutcome, *, now: float | None = None) -> bool:
        return self.record(decision_id, outcome.reward, asdict(outcome), now=now)

    # -- the survival model of model:R (condor_rlrep.survival.model) ---------------

    def survival_cells(self) -> list[tuple[int, int, float, float]]:
        """Every stored cell ``(hour of week, idle bucket (-1 unknown), exposure s, evictions)``."""
        with self._errors():
            rows = self._conn.execute(
                f"SELECT hour, bucket, exposure, evictions FROM {_S}.survival ORDER BY 1, 2").fetchall()
        return [tuple(row) for row in rows]

    def record_exposure(self, key: str, cells: Any, *, now: float | None = None,
                        ran_until: float | None = None) -> bool:
        """Add one node attempt's cells under ``key``, once (see SqliteStore):
        one transaction; the key's unique index orders concurrent duplicates.

        The horizon is read after the key is in: a prune commits the horizon
        before it deletes a key, so once the key's insert no longer finds a
        pruned key in the way, the statement after it sees the horizon that
        refuses its repeat (READ COMMITTED: each statement its own snapshot)."""
        from condor_rlrep.survival.cells import check_cells, check_key, check_time, stale

        key, rows = check_key(key), check_cells(cells)
        until = None if ran_until is None else check_time(ran_until, "ran_until")
        with self._errors(), self._conn.transaction():
            fresh = self._conn.execute(
                f"INSERT INTO {_S}.survival_runs (key, recorded_at) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                (key, time.time() if now is None else float(now))).fetchone()
            if fresh is None:
                return False
            if until is not None:
                horizon = self._horizon()
                if horizon is not None and until < horizon:
                    raise stale(self.location, key, until, horizon)  # the transaction rolls the key back
            self._conn.cursor().executemany(
                f"INSERT INTO {_S}.survival AS s (hour, bucket, exposure, evictions) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT (hour, bucket) DO UPDATE SET exposure = s.exposure + excluded.exposure,"
                " evictions = s.evictions + excluded.evictions", rows)
        return True

    # -- reading -------------------------------------------------------------

    @property
    def config(self) -> AgentConfig:
        with self._errors():
            text = self._conn.execute(f"SELECT config FROM {_S}.agent WHERE id = 1").fetchone()
        if text is None:
            raise StoreError(f"{self.location}: agent row missing (corrupt store)")
        return self._parse_config(text[0])[0]

    def decision(self, decision_id: int) -> DecisionRecord:
        decision_id = check_decision_id(decision_id)
        with self._errors():
            row = self._conn.execute(f"SELECT {DECISION_COLUMNS} FROM {_S}.decisions WHERE id = %s",
                                     (decision_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.location}: unknown decision id {decision_id}")
        return record_of(row)

    def decisions(self) -> list[DecisionRecord]:
        with self._errors():
            rows = self._conn.execute(f"SELECT {DECISION_COLUMNS} FROM {_S}.decisions ORDER BY id").fetchall()
        return [record_of(row) for row in rows]

    def stats(self) -> StoreStats:
        from condor_rlrep.agent.policy import epsilon

        with self._errors(), self._snapshot():
            text, rewards_seen = self._agent_row()
            total, closed = self._conn.execute(f"SELECT COUNT(*), COUNT(reward) FROM {_S}.decisions").fetchone()
            recovering = self._conn.execute(f"SELECT COUNT(*) FROM {_S}.recovery WHERE remaining > 0").fetchone()[0]
            last_id = self._conn.execute(_LAST_ID).fetchone()[0]
            cells, runs = self._conn.execute(
                f"SELECT (SELECT COUNT(*) FROM {_S}.survival), (SELECT COUNT(*) FROM {_S}.survival_runs)").fetchone()
            horizon = self._horizon()
        config = self._parse_config(text)[0]
        return StoreStats(
            path=self.location,
            schema_version=SCHEMA_VERSION,
            strategy=config.strategy,
            schedule=config.schedule,
            decisions=total,
            closed=closed,
            pending=total - closed,
            rewards_seen=rewards_seen,
            epsilon=epsilon(config, rewards_seen, False),
            states_recovering=recovering,
            last_decision_id=int(last_id),
            survival_cells=int(cells),
            survival_runs=int(runs),
            survival_horizon=horizon,
        )

    def load_agent(self, *, rng: Any = None) -> Agent:
        from condor_rlrep.agent.bandit import Agent

        with self._errors(), self._snapshot():
            text, rewards_seen = self._agent_row()
            cells = [[s, a, n, q, json.loads(w)] for s, a, n, q, w in self._conn.execute(
                f'SELECT state, action, n, q, "window" FROM {_S}.estimates ORDER BY 1, 2')]
            recovery = {str(s): r for s, r in self._conn.execute(
                f"SELECT state, remaining FROM {_S}.recovery WHERE remaining > 0")}
        config = self._parse_config(text)[0]
        return Agent.from_state(config, {"rewards_seen": rewards_seen, "recovery": recovery, "cells": cells}, rng=rng)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------

    def _agent_row(self) -> tuple[str, int]:
        row = self._conn.execute(
            f"SELECT config, rewards_seen + (SELECT COALESCE(SUM(n), 0) FROM {_S}.reward_counts)::bigint"
            f" FROM {_S}.agent WHERE id = 1"
        ).fetchone()
        if row is None:
            raise StoreError(f"{self.location}: agent row missing (corrupt store)")
        return row[0], int(row[1])

    def _known_config(self) -> tuple[AgentConfig, StateSpace]:
        if self._config is None or self._space is None:
            text = self._conn.execute(f"SELECT config FROM {_S}.agent WHERE id = 1").fetchone()
            if text is None:
                raise StoreError(f"{self.location}: agent row missing (corrupt store)")
            return self._parse_config(text[0])
        return self._config, self._space

    def _parse_config(self, text: str) -> tuple[AgentConfig, StateSpace]:
        if text != self._config_text or self._config is None or self._space is None:
            try:
                config = AgentConfig.from_dict(json.loads(text))
            except (ValueError, TypeError) as err:
                raise StoreError(f"{self.location}: stored agent parameters are invalid: {err}") from err
            self._config, self._space, self._config_text = config, StateSpace.from_config(config), text
        return self._config, self._space

    def _fold(self, state: int, action: int, reward: float, config_text: str, n: int | None, q: float | None,
              window_text: str | None) -> str:
        """The writes of Agent.learn for one reward, as SQL text (the same
        functions in the same order as SqliteStore._learn)."""
        from condor_rlrep.agent.estimator import drifted, push_window, update_estimate

        config = self._parse_config(config_text)[0]
        if n is None:
            n, q, window_text = 0, config.initial_estimate, "[]"
        q, n = update_estimate(q, n, reward, config.step_size)
        sliding = config.strategy == "epsilon-greedy" and config.schedule == "sliding-window"
        drift = False
        window: list[float] = []
        if sliding:
            window = push_window(json.loads(window_text), reward, config.window)
            drift = drifted(window, q, config.window, config.drift_threshold)
        bind = self._client_cursor.mogrify
        sql = bind(_FOLD, {"sliding": sliding, "s": state, "a": action, "n": n, "q": q, "w": json.dumps(window)})
        if drift:
            sql += " " + bind(_DRIFT, {"forget": config.forget_to, "s": state, "recovery": config.recovery})
        return sql


