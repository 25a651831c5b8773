"""The agent store: where a replica agent's decisions, learned estimates and
survival-model cells live between hook runs — a SQLite file or a PostgreSQL
database — and everything about keeping them (schema and migrations,
retention, export and import, the broker that shares one server connection
across a DAG's hooks). The learning itself is :mod:`condor_rlrep.agent`.

Public API, imported lazily (the hooks open a store without numpy):

- :class:`SqliteStore`, :class:`PostgresStore` (psycopg 3, imported only on
  use), :class:`AgentStore` (the interface both implement),
  :class:`Decision`, :class:`DecisionRecord`, :class:`StoreStats`,
  :func:`default_store_path`;
- :mod:`.backends` opens either from a spec (a path or a ``postgresql://``
  URL); :mod:`.location` resolves which store a command or hook uses.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["SqliteStore", "PostgresStore", "AgentStore", "Decision", "DecisionRecord", "StoreStats",
           "default_store_path"]

_WHERE = {
    "SqliteStore": "sqlite",
    "PostgresStore": "postgres",
    "AgentStore": "interface",
    "Decision": "interface",
    "DecisionRecord": "interface",
    "StoreStats": "interface",
    "default_store_path": "interface",
}

if TYPE_CHECKING:
    from condor_rlrep.store.interface import AgentStore, Decision, DecisionRecord, StoreStats, default_store_path
    from condor_rlrep.store.postgres import PostgresStore
    from condor_rlrep.store.sqlite import SqliteStore


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'condor_rlrep.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"condor_rlrep.store.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
