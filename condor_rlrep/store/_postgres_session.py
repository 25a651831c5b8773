"""A PostgreSQL store's connection: opening it, its errors, its schema.

A mixin of :class:`~condor_rlrep.store.postgres.PostgresStore`. The
connection is in autocommit mode; a statement timeout bounds every wait
(a lock, a stalled server) and ``idle_in_transaction_session_timeout``
bounds how long a stopped client can hold locks. Every driver error becomes
a :class:`StoreError` naming the URL without its password, the password
scrubbed from the driver's words too.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from condor_rlrep.store._values import config_json
from condor_rlrep.agent.config import AgentConfig
from condor_rlrep.store._postgres_schema import LOCK_CLASS, MIGRATIONS, SCHEMA, SCHEMA_COMMENT, SCHEMA_VERSION
from condor_rlrep.store.postgres_url import scrub
from condor_rlrep.errors import StoreError

__all__ = ["PostgresSession", "IDLE_IN_TRANSACTION_TIMEOUT"]

IDLE_IN_TRANSACTION_TIMEOUT = 60.0
_S = SCHEMA


class PostgresSession:
    """Connection, error mapping and schema versioning (mixed into PostgresStore)."""

    _url: str
    _conn: Any
    location: str
    _parse_config: Any

    def _connect(self, connect_timeout: float, statement_timeout: float | None) -> psycopg.Connection[Any]:
        try:
            params = conninfo_to_dict(self._url)
        except psycopg.Error as err:
            raise StoreError(f"{self.location}: not a valid PostgreSQL URL ({_message(err, self._url)})") from None
        timeout_ms = 0 if statement_timeout is None else max(1, int(statement_timeout * 1000))
        ours = (f"-c statement_timeout={timeout_ms}"
                f" -c idle_in_transaction_session_timeout={int(IDLE_IN_TRANSACTION_TIMEOUT * 1000)}")
        params["options"] = f"{params.get('options', '')} {ours}".strip()
        params["connect_timeout"] = str(max(2, math.ceil(connect_timeout)))  # libpq: whole seconds, at least 2
        params.setdefault("application_name", "condor-rlrep")
        try:
            return psycopg.connect(autocommit=True, **params)
        except psycopg.Error as err:
            raise StoreError(
                f"{self.location}: cannot connect to the agent store's database ({_message(err, self._url)})"
            ) from None

    @contextmanager
    def _rollback_on_error(self) -> Iterator[None]:
        """For a transaction opened by hand (``BEGIN`` inside a statement): roll it back on any failure."""
        try:
            yield
        except BaseException:
            self._abandon()
            raise

    def _abandon(self) -> None:
        if self._conn.closed or self._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            return
        try:
            self._conn.execute("ROLLBACK")
        except psycopg.Error:
            self._conn.close()  # the next call reports it; the server rolls back a dropped session

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Database errors as StoreError, the password scrubbed out of them."""
        try:
            yield
        except pg_errors.QueryCanceled as err:
            raise StoreError(
                f"{self.location}: the database did not answer within the statement timeout ({_message(err, self._url)})"
            ) from None
        except psycopg.OperationalError as err:
            raise StoreError(f"{self.location}: lost the database connection ({_message(err, self._url)})") from None
        except psycopg.Error as err:
            raise StoreError(f"{self.location}: {_message(err, self._url)}") from None

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """A read-only transaction whose statements all see one snapshot."""
        with self._conn.transaction():
            self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    def _schema_comment(self) -> str | None:
        with self._errors():
            row = self._conn.execute(
                "SELECT COALESCE(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = %s",
                (SCHEMA,),
            ).fetchone()
        return None if row is None else row[0]

    def _check_and_migrate(self) -> None:
        comment = self._schema_comment()
        if comment is None:
            raise StoreError(
                f"{self.location}: no agent store in this database (create one with `condor-rlrep agent init --store URL`)"
            )
        if comment != SCHEMA_COMMENT:
            raise StoreError(f"{self.location}: schema {SCHEMA} here is not a condor-rlrep agent store")
        with self._errors():
            version, text = self._conn.execute(
                f"SELECT (SELECT MAX(version) FROM {_S}.schema_version), (SELECT config FROM {_S}.agent WHERE id = 1)"
            ).fetchone()
            version = version or 0
            if text is not None:
                self._parse_config(text)  # decide's first call then needs no extra round trip
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.location}: store schema version {version} is newer than this condor-rlrep"
                    f" understands ({SCHEMA_VERSION}); upgrade condor-rlrep"
                )
            if version < SCHEMA_VERSION:
                with self._conn.transaction():
                    self._conn.execute("SELECT pg_advisory_xact_lock(%s, -1)", (LOCK_CLASS,))
                    current = self._conn.execute(f"SELECT MAX(version) FROM {_S}.schema_version").fetchone()[0] or 0
                    self._migrate(current, SCHEMA_VERSION)

    def _migrate(self, current: int, target: int) -> None:
        for version in sorted(MIGRATIONS):
            if current < version <= target:
                for statement in MIGRATIONS[version]:
                    self._conn.execute(statement)
                self._conn.execute(f"INSERT INTO {_S}.schema_version (version, applied_at) VALUES (%s, %s)",
                                   (version, time.time()))

    def _create_schema(self, config: AgentConfig, *, version: int = SCHEMA_VERSION) -> None:
        self._conn.execute("SELECT pg_advisory_xact_lock(%s, -1)", (LOCK_CLASS,))
        if self._schema_comment() is not None:
            raise StoreError(f"{self.location}: already holds an agent store (pass --force to reset it, or drop schema {SCHEMA})")
        statements = MIGRATIONS[1]
        for statement in statements[:3]:  # the schema and its version log first
            self._conn.execute(statement)
        self._conn.execute(f"INSERT INTO {_S}.schema_version (version, applied_at) VALUES (1, %s)", (time.time(),))
        for statement in statements[3:]:
            self._conn.execute(statement)
        self._migrate(1, version)
        self._conn.execute(f"INSERT INTO {_S}.agent (id, config, rewards_seen) VALUES (1, %s, 0)",
                           (config_json(config),))


def _message(err: BaseException, url: str) -> str:
    """The driver's words on one line, the password taken out first (before
    the whitespace is folded, which could break a password apart)."""
    return " ".join(scrub(str(err), url).split())
