"""Whole-store operations of the SQLite store: saving a trained agent,
reset, retention and pruning, streaming export and import.

A mixin of :class:`~condor_rlrep.store.sqlite.SqliteStore` (split out to keep
the hooks' module short); none of it is on a hook's path.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

from condor_rlrep.store import _sqlite_file as _sqlite
from condor_rlrep.store._sqlite_schema import SCHEMA_VERSION
from condor_rlrep.store._values import DECISION_COLUMNS, config_json, decision_to_doc
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.store.interface import DOCUMENT_FORMAT
from condor_rlrep.store.retention import PruneResult, Retention
from condor_rlrep.errors import StoreError

if TYPE_CHECKING:
    from condor_rlrep.store._document import Header
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.store.sqlite import SqliteStore

__all__ = ["SqliteWholeStore", "PRUNE_BATCH"]

PRUNE_BATCH = 5000
"""Decisions removed per transaction: a prune never holds the write lock for long."""


class SqliteWholeStore:
    """Operations on the whole store (mixed into SqliteStore)."""

    # provided by SqliteStore
    _write: Any
    _read: Any
    _agent_row: Any
    _has_data: Any

    @classmethod
    def save_agent(cls, path: str | os.PathLike[str], agent: Agent, *, replace: bool = False) -> None:
        """Write an in-memory agent's config and estimates to ``path`` (created if missing).

        An existing store is refused unless ``replace``; then its decisions
        and estimates are wiped first (decision ids keep counting up).
        """
        path = os.fspath(path)
        state = agent.to_state()
        store = cls(path) if os.path.exists(path) else cls.create(path, agent.config)
        with store:
            with store._write() as conn:
                if not replace and store._has_data(conn):
                    raise StoreError(f"{path}: store already holds decisions or estimates (pass --replace to overwrite them)")
                _sqlite.wipe(conn)
                conn.execute(
                    "UPDATE agent SET config = ?, rewards_seen = ? WHERE id = 1",
                    (config_json(agent.config), state["rewards_seen"]),
                )
                conn.executemany(
                    "INSERT INTO estimates (state, action, n, q, window) VALUES (?, ?, ?, ?, ?)",
                    [(s, a, n, q, json.dumps(w)) for s, a, n, q, w in state["cells"]],
                )
                conn.executemany(
                    "INSERT INTO recovery (state, remaining) VALUES (?, ?)",
                    [(int(s), r) for s, r in state["recovery"].items()],
                )

    # -- whole-store operations ----------------------------------------------

    def reset(self, config: AgentConfig | None = None) -> None:
        """Forget every decision and estimate (and optionally change the parameters).

        Decision ids keep counting up, so outcomes of wiped decisions are refused.
        """
        with self._write() as conn:
            _sqlite.wipe(conn)
            conn.execute("UPDATE agent SET rewards_seen = 0 WHERE id = 1")
            if config is not None:
                conn.execute("UPDATE agent SET config = ? WHERE id = 1", (config_json(config),))

    @property
    def retention(self) -> Retention:
        with self._read() as conn:
            return _retention(conn)

    def set_retention(self, retention: Retention) -> None:
        with self._write() as conn:
            _store_retention(conn, retention)

    def prune(
        self, *, closed_before: float | None = None, pending_before: float | None = None,
        runs_before: float | None = None, batch: int = PRUNE_BATCH
    ) -> PruneResult:
        """Remove closed decisions closed before ``closed_before``, pending
        ones made before ``pending_before`` and the model policy's run keys
        recorded before ``runs_before`` (POSIX times). Estimates and the
        survival model stay as they are. Runs in transactions of ``batch``
        rows, so that hooks keep working while a large history goes."""
        closed = pending = runs = 0
        if closed_before is not None:
            closed = self._delete_batches(
                "DELETE FROM decisions WHERE id IN (SELECT id FROM decisions WHERE closed_at < ? ORDER BY id LIMIT ?)",
                float(closed_before), batch,
            )
        if pending_before is not None:
            pending = self._delete_batches(
                "DELETE FROM decisions WHERE id IN (SELECT id FROM decisions WHERE closed_at IS NULL AND made_at < ?"
                " ORDER BY id LIMIT ?)", float(pending_before), batch,
            )
        if runs_before is not None:
            # the horizon first, in its own commit: from then on a repeat of
            # any key about to go is refused (see .retention)
            with self._write() as conn:
                _sqlite.raise_horizon(conn, float(runs_before))
            runs = self._delete_batches(
                "DELETE FROM survival_runs WHERE key IN (SELECT key FROM survival_runs WHERE recorded_at < ?"
                " ORDER BY recorded_at LIMIT ?)", float(runs_before), batch,
            )
        return PruneResult(closed, pending, runs)

    def apply_retention(self, *, now: float | None = None) -> PruneResult:
        """:meth:`prune` by the store's own :attr:`retention`."""
        at = time.time() if now is None else now
        policy = self.retention
        closed_before, pending_before = policy.cutoffs(at)
        return self.prune(closed_before=closed_before, pending_before=pending_before, runs_before=policy.runs_cutoff(at))

    def export(self) -> dict[str, Any]:
        """The whole store as one JSON-able document (small stores; see :meth:`export_to`)."""
        with self._read() as conn:
            header, estimates, recovery = self._export_header(conn)
            decisions = [decision_to_doc(row) for row in conn.execute(f"SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id")]
        return {**header, "estimates": estimates, "recovery": recovery, "decisions": decisions}

    def export_to(self, out: IO[str]) -> int:
        """Stream the whole store to ``out`` as a JSON document, a decision at a
        time, from one consistent snapshot. Returns the number of decisions."""
        from condor_rlrep.store._docstream import write_document

        with self._read() as conn:
            header, estimates, recovery = self._export_header(conn)
            rows = conn.execute(f"SELECT {DECISION_COLUMNS} FROM decisions ORDER BY id")
            return write_document(out, header, estimates, recovery, map(decision_to_doc, rows))

    @classmethod
    def import_document(
        cls, path: str | os.PathLike[str], document: Mapping[str, Any], *, replace: bool = False
    ) -> SqliteStore:
        """Load an :meth:`export` document into ``path`` (created if missing).

        An existing store holding data is refused unless ``replace``. Nothing
        is written unless the whole document is valid.
        """
        from condor_rlrep.store._document import parse_document

        parsed = parse_document(document, SCHEMA_VERSION)
        return cls._import(os.fspath(path), parsed.header, [parsed.decisions], lambda: parsed.header, replace)

    @classmethod
    def import_stream(
        cls, path: str | os.PathLike[str], stream: IO[str], *, name: str = "<document>", replace: bool = False
    ) -> tuple[SqliteStore, int]:
        """:meth:`import_document` from a text stream, a decision at a time, in
        one transaction (a bad entry anywhere rolls it all back). Returns the
        store and the number of decisions imported."""
        from condor_rlrep.store._docstream import DocumentReader

        reader = DocumentReader(stream, name, SCHEMA_VERSION)
        header = reader.header()
        store = cls._import(os.fspath(path), header, reader.decision_rows(), reader.finish, replace)
        return store, reader.decisions

    @classmethod
    def _import(
        cls,
        path: str,
        header: Header,
        batches: Iterable[list[tuple[Any, ...]]],
        finish: Callable[[], Header],
        replace: bool,
    ) -> SqliteStore:
        created = not os.path.exists(path)
        store = cls.create(path, header.config) if created else cls(path)
        try:
            with store._write() as conn:
                if not replace and store._has_data(conn):
                    raise StoreError(f"{path}: store already holds decisions or estimates (pass --replace to overwrite them)")
                issued = _sqlite.last_id(conn)
                _sqlite.wipe(conn)
                placeholders = ", ".join("?" * 14)
                for rows in batches:
                    conn.executemany(f"INSERT INTO decisions ({DECISION_COLUMNS}) VALUES ({placeholders})", rows)
                header = finish()
                conn.execute(
                    "UPDATE agent SET config = ?, rewards_seen = ? WHERE id = 1",
                    (config_json(header.config), header.rewards_seen),
                )
                conn.executemany("INSERT INTO estimates (state, action, n, q, window) VALUES (?, ?, ?, ?, ?)",
                                 header.estimates)
                conn.executemany("INSERT INTO recovery (state, remaining) VALUES (?, ?)", header.recovery)
                _store_retention(conn, header.retention)
                conn.executemany("INSERT INTO survival (hour, bucket, exposure, evictions) VALUES (?, ?, ?, ?)",
                                 header.survival)
                conn.executemany("INSERT INTO survival_runs (key, recorded_at) VALUES (?, ?)", header.survival_runs)
                if header.survival_horizon is not None:
                    _sqlite.raise_horizon(conn, header.survival_horizon)
                # never below what this store already handed out: a late outcome
                # of a replaced decision must not close an imported one
                _sqlite.set_last_id(conn, max(header.last_decision_id, issued))
        except BaseException:
            store.close()
            if created:
                _sqlite.remove_store_files(path)
            raise
        return store

    def _export_header(self, conn: sqlite3.Connection) -> tuple[dict[str, Any], list[Any], list[Any]]:
        config, _, rewards_seen = self._agent_row(conn)
        header = {
            "format": DOCUMENT_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "config": config.to_dict(),
            "rewards_seen": rewards_seen,
            "last_decision_id": _sqlite.last_id(conn),
            "retention": _retention(conn).to_dict(),
            "survival": [list(row) for row in conn.execute(
                "SELECT hour, bucket, exposure, evictions FROM survival ORDER BY 1, 2")],
            "survival_runs": [list(row) for row in conn.execute(
                "SELECT key, recorded_at FROM survival_runs ORDER BY 1")],
            "survival_horizon": _sqlite.horizon(conn),
        }
        estimates = [
            [s, a, n, q, json.loads(w)]
            for s, a, n, q, w in conn.execute("SELECT state, action, n, q, window FROM estimates ORDER BY 1, 2")
        ]
        recovery = [[s, r] for s, r in conn.execute("SELECT state, remaining FROM recovery ORDER BY 1")]
        return header, estimates, recovery

    def _delete_batches(self, delete: str, cutoff: float, batch: int) -> int:
        removed = 0
        while True:
            with self._write() as conn:
                count = conn.execute(delete, (cutoff, batch)).rowcount
            removed += count
            if count < batch:
                return removed



def _retention(conn: sqlite3.Connection) -> Retention:
    row = conn.execute("SELECT value FROM settings WHERE key = 'retention'").fetchone()
    return Retention() if row is None else Retention.from_dict(json.loads(row[0]))


def _store_retention(conn: sqlite3.Connection, retention: Retention) -> None:
    conn.execute(
        "INSERT INTO settings (key, value) VALUES ('retention', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (json.dumps(retention.to_dict(), sort_keys=True),),
    )
