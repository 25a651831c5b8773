"""SQLite schema of the agent store and its migrations.

The file says what it is in its header: ``PRAGMA application_id`` marks it as
ours (anything else is a foreign file), ``PRAGMA user_version`` carries the
schema version (a newer one than we know is refused). ``schema_version``
logs when each migration ran. The version numbers are shared with the
PostgreSQL schema (:mod:`.postgres_schema`): a store at version N holds the
same things in either backend, and an export document says N.
"""

from __future__ import annotations

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "MIGRATIONS"]

APPLICATION_ID = 0x524C5250  # "RLRP"

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE schema_version (
               version INTEGER PRIMARY KEY,
               applied_at REAL NOT NULL)""",
        # one row: the agent's parameters (JSON) and its global reward count
        """CREATE TABLE agent (
               id INTEGER PRIMARY KEY CHECK (id = 1),
               config TEXT NOT NULL,
               rewards_seen INTEGER NOT NULL DEFAULT 0)""",
        # sparse: a (state, action) without a row has n = 0, q = initial estimate
        """CREATE TABLE estimates (
               state INTEGER NOT NULL,
               action INTEGER NOT NULL,
               n INTEGER NOT NULL,
               q REAL NOT NULL,
               window TEXT NOT NULL DEFAULT '[]',
               PRIMARY KEY (state, action)) WITHOUT ROWID""",
        """CREATE TABLE recovery (
               state INTEGER PRIMARY KEY,
               remaining INTEGER NOT NULL)""",
        # AUTOINCREMENT: ids are never reused, even after a reset, so a late
        # POST hook of a wiped decision cannot close a new one
        """CREATE TABLE decisions (
               id INTEGER PRIMARY KEY AUTOINCREMENT,
               made_at REAL NOT NULL,
               state INTEGER NOT NULL,
               hour INTEGER NOT NULL,
               phi_bin INTEGER NOT NULL,
               action INTEGER NOT NULL,
               phi_prime REAL,
               estimate REAL NOT NULL,
               explored INTEGER NOT NULL,
               epsilon REAL NOT NULL,
               context TEXT NOT NULL,
               closed_at REAL,
               reward REAL,
               outcome TEXT,
               CHECK ((closed_at IS NULL) = (reward IS NULL)))""",
    ),
    2: ("CREATE INDEX decisions_pending ON decisions (id) WHERE closed_at IS NULL",),
    # store-wide settings as JSON values: "retention" (see agent.retention)
    3: ("CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",),
    # the model policy's survival model (condor_rlrep.survival.model): exposure
    # seconds and owner evictions per (hour of week, idle bucket; -1 unknown),
    # and the invocations already counted (a rerun POST adds nothing)
    4: (
        """CREATE TABLE survival (
               hour INTEGER NOT NULL CHECK (hour BETWEEN 0 AND 167),
               bucket INTEGER NOT NULL CHECK (bucket >= -1),
               exposure REAL NOT NULL CHECK (exposure >= 0),
               evictions REAL NOT NULL CHECK (evictions >= 0),
               PRIMARY KEY (hour, bucket)) WITHOUT ROWID""",
        """CREATE TABLE survival_runs (
               key TEXT PRIMARY KEY,
               recorded_at REAL NOT NULL) WITHOUT ROWID""",
    ),
    # retention prunes survival_runs by age (agent.retention), a batch at a
    # time: without this index every batch would scan all the keys
    5: ("CREATE INDEX survival_runs_recorded ON survival_runs (recorded_at)",),
}

SCHEMA_VERSION = max(MIGRATIONS)
