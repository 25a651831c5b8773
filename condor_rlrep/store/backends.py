"""Which backend a store spec names, and the operations every caller needs on it.

A spec is a file path (the embedded SQLite store) or a ``postgresql://`` URL
(a server store shared by several access points). Callers pass specs
through these functions and never look at them; the PostgreSQL modules
(and psycopg) are imported only when a URL is used, so the SQLite path of
the hooks stays as light as it was.

Which spec a command or hook uses (``--store`` > ``$CONDOR_RLREP_STORE`` >
the XDG default) is :mod:`condor_rlrep.store.location`'s rule, and callers
go through that module; this one only dispatches on the spec.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any

from condor_rlrep.store.interface import DEFAULT_BUSY_TIMEOUT
from condor_rlrep.store.postgres_url import is_postgres_url, redact_url
from condor_rlrep.errors import StoreError

if TYPE_CHECKING:
    from condor_rlrep.agent.bandit import Agent
    from condor_rlrep.agent.config import AgentConfig
    from condor_rlrep.store.interface import AgentStore

__all__ = [
    "is_postgres_url",
    "describe_store",
    "open_store",
    "create_store",
    "store_exists",
    "import_stream",
    "save_agent",
    "load_agent",
]


def describe_store(spec: str) -> str:
    """How to name the store to a user, in a log or in a file: never with a password."""
    return redact_url(spec) if is_postgres_url(spec) else spec


def _postgres() -> Any:
    try:
        from condor_rlrep.store import postgres
    except ImportError as err:
        raise StoreError(
            f"PostgreSQL stores need psycopg 3 ({err}): pip install 'condor-rlrep[postgresql]'"
        ) from None
    return postgres


def open_store(
    spec: str, *, busy_timeout: float = DEFAULT_BUSY_TIMEOUT, connect_timeout: float | None = None
) -> AgentStore:
    """Open an existing store. ``busy_timeout`` bounds a wait on a lock (SQLite's
    busy timeout, PostgreSQL's statement timeout); ``connect_timeout`` the
    connection to a server."""
    if is_postgres_url(spec):
        postgres = _postgres()
        timeout = postgres.DEFAULT_CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        return postgres.open_postgres(spec, connect_timeout=timeout, statement_timeout=busy_timeout)
    from condor_rlrep.store.sqlite import SqliteStore

    return SqliteStore(spec, busy_timeout=busy_timeout)


def create_store(spec: str, config: AgentConfig | None = None) -> AgentStore:
    """Create a new store (a SQLite file, or the schema in a server database); an existing one is an error."""
    if is_postgres_url(spec):
        return _postgres().PostgresStore.create(spec, config)
    from condor_rlrep.store.sqlite import SqliteStore

    return SqliteStore.create(spec, config)


def store_exists(spec: str) -> bool:
    """A file at the path, or the store's schema in the database (connection failures raise)."""
    if is_postgres_url(spec):
        return bool(_postgres().PostgresStore.exists(spec))
    return os.path.exists(spec)


def import_stream(spec: str, stream: IO[str], *, name: str, replace: bool = False) -> tuple[AgentStore, int]:
    """Load an export document from ``stream`` (the store is created if missing)."""
    if is_postgres_url(spec):
        return _postgres().PostgresStore.import_stream(spec, stream, name=name, replace=replace)  # type: ignore[no-any-return]
    from condor_rlrep.store.sqlite import SqliteStore

    return SqliteStore.import_stream(spec, stream, name=name, replace=replace)


def save_agent(spec: str, agent: Agent, *, replace: bool = False) -> None:
    """Write a trained in-memory agent into a store (created if missing)."""
    if is_postgres_url(spec):
        _postgres().PostgresStore.save_agent(spec, agent, replace=replace)
        return
    from condor_rlrep.store.sqlite import SqliteStore

    SqliteStore.save_agent(spec, agent, replace=replace)


def load_agent(spec: str, *, rng: Any = None) -> Agent:
    """The in-memory agent of a store's config and estimates."""
    with open_store(spec) as store:  # type: ignore[attr-defined]
        return store.load_agent(rng=rng)  # type: ignore[no-any-return]
