"""The SQLite file under the store: opening, migrating, errors, whole-table steps."""

from __future__ import annotations

import json
import os
import sqlite3
import time

from condor_rlrep.store._sqlite_schema import MIGRATIONS, SCHEMA_VERSION
from condor_rlrep.survival.cells import HORIZON_SETTING
from condor_rlrep.errors import StoreError

__all__ = ["connect", "migrate", "wipe", "last_id", "set_last_id", "horizon", "raise_horizon", "store_error",
           "remove_store_files"]


def connect(path: str, busy_timeout: float) -> sqlite3.Connection:
    # URI only to get mode=rw (never create); escape what a URI path may not hold
    escaped = os.path.abspath(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")
    uri = "file:" + escaped + "?mode=rw"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        # NORMAL is durable against process crashes (kill -9) in WAL mode;
        # only an OS crash or power cut can lose the last commits
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as err:
        raise StoreError(f"{path}: cannot open agent store ({err}); is it an agent store?") from err
    return conn


def migrate(conn: sqlite3.Connection, current: int) -> None:
    for version in sorted(MIGRATIONS):
        if version <= current:
            continue
        for statement in MIGRATIONS[version]:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)", (version, time.time()))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def wipe(conn: sqlite3.Connection) -> None:
    conn.execute("DELETE FROM decisions")
    conn.execute("DELETE FROM estimates")
    conn.execute("DELETE FROM recovery")
    conn.execute("DELETE FROM survival")
    conn.execute("DELETE FROM survival_runs")
    # no key is missing from an empty model: nothing recorded later can be a repeat
    conn.execute("DELETE FROM settings WHERE key = ?", (HORIZON_SETTING,))


def horizon(conn: sqlite3.Connection) -> float | None:
    """The survival horizon (:mod:`._survival`), None when no run key was ever pruned."""
    row = conn.execute("SELECT value FROM settings WHERE key = ?", (HORIZON_SETTING,)).fetchone()
    return None if row is None else float(json.loads(row[0]))


def raise_horizon(conn: sqlite3.Connection, value: float) -> None:
    """Set the survival horizon to ``value`` unless it is already later (it never goes back)."""
    current = horizon(conn)
    if current is None or value > current:
        conn.execute("INSERT INTO settings (key, value) VALUES (?, ?)"
                     " ON CONFLICT (key) DO UPDATE SET value = excluded.value", (HORIZON_SETTING, json.dumps(value)))


def last_id(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'decisions'").fetchone()
    return 0 if row is None else int(row[0])


def set_last_id(conn: sqlite3.Connection, value: int) -> None:
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'decisions'")
    conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('decisions', ?)", (value,))


def store_error(path: str, err: sqlite3.Error) -> StoreError:
    text = str(err)
    if "locked" in text or "busy" in text:
        return StoreError(f"{path}: store stayed locked beyond the busy timeout ({text})")
    if isinstance(err, sqlite3.DatabaseError) and not isinstance(err, sqlite3.OperationalError):
        return StoreError(f"{path}: agent store is corrupt or not a store ({text})")
    return StoreError(f"{path}: {text}")


def remove_store_files(path: str) -> None:
    """Remove a store this process created and failed to fill (and its WAL files)."""
    for name in (path, path + "-wal", path + "-shm"):
        try:
            os.unlink(name)
        except FileNotFoundError:
            pass
