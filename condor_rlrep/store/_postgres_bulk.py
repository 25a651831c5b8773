"""Whole-store operations of the PostgreSQL store: saving a trained agent,
reset, retention and pruning, streaming export and import.

A mixin of :class:`~condor_rlrep.store.postgres.PostgresStore`. Operations
that rewrite the store take ``EXCLUSIVE`` locks on its tables, so they wait
for the records in flight and hold new ones back until they commit (reads go
on); their statements run without the hooks' statement timeout. An export
reads one ``REPEATABLE READ`` snapshot through a server-side cursor; an
import is one transaction that also creates the schema when the database
has none, so a bad document leaves the database exactly as it was.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from condor_rlrep.survival.cells import HORIZON_SETTING
from condor_rlrep.store._values import DECISION_COLUMNS, config_json, decision_to_doc
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.store.interface import DOCUMENT_FORMAT
from condor_rlrep.store._postgres_schema import SCHEMA, SCHEMA_VERSION
from condor_rlrep.store.retention import PruneResult, Retention
from condor_rlrep.errors import StoreError

if TYPE_CHECKING:
    from condor_rlrep.store._document import Header
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.store.postgres import PostgresStore

__all__ = ["PostgresWholeStore", "PRUNE_BATCH"]

PRUNE_BATCH = 5000
_S = SCHEMA
_TABLES = ", ".join(f"{_S}.{t}" for t in ("agent", "reward_counts", "estimates", "recovery", "decisions", "settings",
                                                   "survival", "survival_runs"))
_DECISIONS_SEQUENCE = f"{_S}.decisions_id_seq"


class PostgresWholeStore:
    """Operations on the whole store (mixed into PostgresStore)."""

    # provided by PostgresStore
    _conn: Any
    _errors: Any
    _snapshot: Any
    _agent_row: Any
    _parse_config: Any
    _schema_comment: Any
    _create_schema: Any
    _check_and_migrate: Any
    location: str

    @classmethod
    def save_agent(cls, url: str, agent: Agent, *, replace: bool = False) -> None:
        """Write an in-memory agent's config and estimates (created if missing; see SqliteStore.save_agent)."""
        state = agent.to_state()
        store = cls._unchecked(url)  # type: ignore[attr-defined]
        with store:
            with store._rewrite(agent.config) as conn:
                if not replace and store._has_data():
                    raise StoreError(f"{store.location}: store already holds decisions or estimates (pass --replace to overwrite them)")
                store._wipe(config_json(agent.config), state["rewards_seen"])
                with conn.cursor().copy(f'COPY {_S}.estimates (state, action, n, q, "window") FROM STDIN') as copy:
                    for s, a, n, q, w in state["cells"]:
                        copy.write_row((s, a, n, q, json.dumps(w)))
                conn.cursor().executemany(f"INSERT INTO {_S}.recovery (state, remaining) VALUES (%s, %s)",
                                          [(int(s), r) for s, r in state["recovery"].items()])

    def reset(self, config: AgentConfig | None = None) -> None:
        """Forget every decision and estimate (ids keep counting up; see SqliteStore.reset)."""
        with self._rewrite(None):
            text = config_json(config) if config is not None else self._agent_row()[0]
            self._wipe(text, 0)

    @property
    def retention(self) -> Retention:
        with self._errors():
            return self._read_retention()

    def set_retention(self, retention: Retention) -> None:
        with self._errors():
            self._write_retention(retention)

    def prune(
        self, *, closed_before: float | None = None, pending_before: float | None = None,
        runs_before: float | None = None, batch: int = PRUNE_BATCH
    ) -> PruneResult:
        """Remove old closed and expired pending decisions and old run keys of
        the model policy, ``batch`` per transaction (see SqliteStore.prune)."""
        closed = pending = runs = 0
        if closed_before is not None:
            closed = self._delete_batches("decisions", "id", "id", "closed_at < %(cut)s", float(closed_before), batch)
        if pending_before is not None:
            pending = self._delete_batches("decisions", "id", "id", "closed_at IS NULL AND made_at < %(cut)s",
                                           float(pending_before), batch)
        if runs_before is not None:
            # the horizon is committed before any key goes (see PostgresStore.record_exposure)
            with self._errors(), self._conn.transaction():
                self._raise_horizon(float(runs_before))
            runs = self._delete_batches("survival_runs", "key", "recorded_at", "recorded_at < %(cut)s",
                                        float(runs_before), batch)
        return PruneResult(closed, pending, runs)

    def apply_retention(self, *, now: float | None = None) -> PruneResult:
        at = time.time() if now is None else now
        policy = self.retention
        closed_before, pending_before = policy.cutoffs(at)
        return self.prune(closed_before=closed_before, pending_before=pending_before, runs_before=policy.runs_cutoff(at))

    def export(self) -> dict[str, Any]:
        """The whole store as one JSON-able document (small stores; see :meth:`export_to`)."""
        with self._errors(), self._snapshot():
            header, estimates, recovery = self._export_header()
            decisions = [decision_to_doc(row) for row in self._decision_rows()]
        return {**header, "estimates": estimates, "recovery": recovery, "decisions": decisions}

    def export_to(self, out: IO[str]) -> int:
        """Stream the store to ``out`` from one snapshot, a decision at a time."""
        from condor_rlrep.store._docstream import write_document

        with self._errors(), self._snapshot():
            self._conn.execute("SET LOCAL statement_timeout = 0")
            header, estimates, recovery = self._export_header()
            return write_document(out, header, estimates, recovery, map(decision_to_doc, self._decision_rows()))

    @classmethod
    def import_document(cls, url: str, document: Mapping[str, Any], *, replace: bool = False) -> PostgresStore:
        """Load an export document (schema created if missing; see SqliteStore.import_document)."""
        from condor_rlrep.store._document import parse_document

        parsed = parse_document(document, SCHEMA_VERSION)
        return cls._import(url, parsed.header, [parsed.decisions], lambda: parsed.header, replace)

    @classmethod
    def import_stream(
        cls, url: str, stream: IO[str], *, name: str = "<document>", replace: bool = False
    ) -> tuple[PostgresStore, int]:
        """Load a document from a text stream in one transaction, a decision at a time."""
        from condor_rlrep.store._docstream import DocumentReader

        reader = DocumentReader(stream, name, SCHEMA_VERSION)
        header = reader.header()
        store = cls._import(url, header, reader.decision_rows(), reader.finish, replace)
        return store, reader.decisions

    @classmethod
    def _import(
        cls,
        url: str,
        header: Header,
        batches: Iterable[list[tuple[Any, ...]]],
        finish: Callable[[], Header],
        replace: bool,
    ) -> PostgresStore:
        store = cls._unchecked(url)  # type: ignore[attr-defined]
        try:
            with store._rewrite(header.config) as conn:
                if not replace and store._has_data():
                    raise StoreError(f"{store.location}: store already holds decisions or estimates (pass --replace to overwrite them)")
                issued = conn.execute(f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {_DECISIONS_SEQUENCE}").fetchone()[0]
                store._wipe(config_json(header.config), header.rewards_seen)
                with conn.cursor().copy(f"COPY {_S}.decisions ({DECISION_COLUMNS}) FROM STDIN") as copy:
                    for rows in batches:
                        for row in rows:
                            copy.write_row(row)
                header = finish()
                conn.execute(f"UPDATE {_S}.agent SET config = %s, rewards_seen = %s WHERE id = 1",
                             (config_json(header.config), header.rewards_seen))
                with conn.cursor().copy(f'COPY {_S}.estimates (state, action, n, q, "window") FROM STDIN') as copy:
                    for cell in header.estimates:
                        copy.write_row(cell)
                conn.cursor().executemany(f"INSERT INTO {_S}.recovery (state, remaining) VALUES (%s, %s)",
                                          header.recovery)
                store._write_retention(header.retention)
                conn.cursor().executemany(f"INSERT INTO {_S}.survival (hour, bucket, exposure, evictions)"
                                          " VALUES (%s, %s, %s, %s)", header.survival)
                conn.cursor().executemany(f"INSERT INTO {_S}.survival_runs (key, recorded_at) VALUES (%s, %s)",
                                          header.survival_runs)
                if header.survival_horizon is not None:
                    store._raise_horizon(header.survival_horizon)
                last = max(header.last_decision_id, int(issued))  # never reuse an id this store handed out
                if last:
                    conn.execute("SELECT setval(%s, %s, true)", (_DECISIONS_SEQUENCE, last))
        except BaseException:
            store.close()
            raise
        return store

    # -- internals -----------------------------------------------------------

    @contextmanager
    def _rewrite(self, create_with: AgentConfig | None) -> Iterator[Any]:
        """One transaction holding the store's tables exclusively; with
        ``create_with``, the schema is created first if there is none."""
        with self._errors(), self._conn.transaction():
            self._conn.execute("SET LOCAL statement_timeout = 0")
            if self._schema_comment() is None and create_with is not None:
                self._create_schema(create_with)
            else:
                self._check_and_migrate()
            self._conn.execute(f"LOCK TABLE {_TABLES} IN EXCLUSIVE MODE")
            yield self._conn

    def _has_data(self) -> bool:
        return bool(self._conn.execute(
            f"SELECT EXISTS (SELECT 1 FROM {_S}.decisions) OR EXISTS (SELECT 1 FROM {_S}.estimates)"
            f" OR EXISTS (SELECT 1 FROM {_S}.survival)"
            f" OR (SELECT rewards_seen FROM {_S}.agent WHERE id = 1)"
            f" + (SELECT COALESCE(SUM(n), 0) FROM {_S}.reward_counts) > 0"
        ).fetchone()[0])

    def _wipe(self, config_text: str, rewards_seen: int) -> None:
        conn = self._conn
        conn.execute(f"DELETE FROM {_S}.decisions")
        conn.execute(f"DELETE FROM {_S}.estimates")
        conn.execute(f"DELETE FROM {_S}.recovery")
        conn.execute(f"DELETE FROM {_S}.survival")
        conn.execute(f"DELETE FROM {_S}.survival_runs")
        conn.execute(f"DELETE FROM {_S}.settings WHERE key = %s", (HORIZON_SETTING,))  # see _sqlite.wipe
        conn.execute(f"UPDATE {_S}.reward_counts SET n = 0 WHERE n <> 0")
        conn.execute(f"UPDATE {_S}.agent SET config = %s, rewards_seen = %s WHERE id = 1", (config_text, rewards_seen))

    def _read_retention(self) -> Retention:
        row = self._conn.execute(f"SELECT value FROM {_S}.settings WHERE key = 'retention'").fetchone()
        return Retention() if row is None else Retention.from_dict(json.loads(row[0]))

    def _write_retention(self, retention: Retention) -> None:
        self._conn.execute(
            f"INSERT INTO {_S}.settings (key, value) VALUES ('retention', %s)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (json.dumps(retention.to_dict(), sort_keys=True),),
        )

    def _horizon(self) -> float | None:
        """The survival horizon (:mod:`._survival`), None when no run key was ever pruned."""
        row = self._conn.execute(f"SELECT value FROM {_S}.settings WHERE key = %s", (HORIZON_SETTING,)).fetchone()
        return None if row is None else float(json.loads(row[0]))

    def _raise_horizon(self, value: float) -> None:
        """Set the survival horizon to ``value`` unless it is already later (it never goes back)."""
        self._conn.execute(
            f"INSERT INTO {_S}.settings AS s (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE"
            " SET value = excluded.value WHERE s.value::double precision < excluded.value::double precision",
            (HORIZON_SETTING, json.dumps(value)))

    def _export_header(self) -> tuple[dict[str, Any], list[Any], list[Any]]:
        text, rewards_seen = self._agent_row()
        last_id = self._conn.execute(
            f"SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {_DECISIONS_SEQUENCE}").fetchone()[0]
        header = {
            "format": DOCUMENT_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "config": self._parse_config(text)[0].to_dict(),
            "rewards_seen": rewards_seen,
            "last_decision_id": int(last_id),
            "retention": self._read_retention().to_dict(),
            "survival": [list(row) for row in self._conn.execute(
                f"SELECT hour, bucket, exposure, evictions FROM {_S}.survival ORDER BY 1, 2")],
            "survival_runs": [list(row) for row in self._conn.execute(
                f'SELECT key, recorded_at FROM {_S}.survival_runs ORDER BY key COLLATE "C"')],
            "survival_horizon": self._horizon(),
        }
        estimates = [[s, a, n, q, json.loads(w)] for s, a, n, q, w in self._conn.execute(
            f'SELECT state, action, n, q, "window" FROM {_S}.estimates ORDER BY 1, 2')]
        recovery = [[s, r] for s, r in self._conn.execute(f"SELECT state, remaining FROM {_S}.recovery ORDER BY 1")]
        return header, estimates, recovery

    def _decision_rows(self) -> Iterator[tuple[Any, ...]]:
        cursor = self._conn.cursor(name="rlrep_export")
        cursor.itersize = 2000
        cursor.execute(f"SELECT {DECISION_COLUMNS} FROM {_S}.decisions ORDER BY id")
        yield from cursor

    def _delete_batches(self, table: str, column: str, order: str, condition: str, cutoff: float, batch: int) -> int:
        """Delete the rows of ``table`` (key ``column``) that meet ``condition``,
        ``batch`` at a time in ``order`` (an indexed column)."""
        # the condition is repeated outside the subquery: a row that a record
        # changed meanwhile is re-checked under its lock (READ COMMITTED)
        statement = (f"DELETE FROM {_S}.{table} WHERE {column} IN (SELECT {column} FROM {_S}.{table} WHERE {condition}"
                     f" ORDER BY {order} LIMIT %(batch)s) AND {condition}")
        removed = 0
        while True:
            with self._errors():
                count = self._conn.execute(statement, {"cut": cutoff, "batch": batch}).rowcount
            removed += count
            if count == 0:
                return removed
