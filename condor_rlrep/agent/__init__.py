"""The replica bandit agent (§4.4 of the replication paper) and its store.

Public API, imported lazily so that the hooks' ``SqliteStore(...).decide()``
path loads neither numpy nor the in-memory agent:

- :class:`AgentConfig`, :class:`ConfigError` — every parameter, validated.
- :class:`StateSpace`, :class:`StateError` — (hour, φ′ bin) ↔ state index.
- :class:`Agent`, :class:`Choice` — in-memory agent: ``choose``/``learn``.
- :class:`SqliteStore`, :class:`PostgresStore` (psycopg 3, imported only on
  use), :class:`AgentStore`, :class:`Decision`, :class:`DecisionRecord`,
  :class:`StoreStats`, :func:`default_store_path`; :mod:`.backends` opens
  either from a spec (a path or a ``postgresql://`` URL).
- ``sigma``, ``reward``, ``evaluate``, ``DEFAULT_FAILURE_REWARD`` — re-exported
  from :mod:`condor_rlrep.outcome`, the one definition of σ and the reward.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = [
    "AgentConfig",
    "ConfigError",
    "StateSpace",
    "StateError",
    "Agent",
    "Choice",
    "SqliteStore",
    "PostgresStore",
    "AgentStore",
    "Decision",
    "DecisionRecord",
    "StoreStats",
    "default_store_path",
    "sigma",
    "reward",
    "evaluate",
    "DEFAULT_FAILURE_REWARD",
]

_WHERE = {
    "AgentConfig": "config",
    "ConfigError": "config",
    "StateSpace": "state",
    "StateError": "state",
    "Agent": "bandit",
    "Choice": "bandit",
    "SqliteStore": "store",
    "PostgresStore": "postgres",
    "AgentStore": "interface",
    "Decision": "interface",
    "DecisionRecord": "interface",
    "StoreStats": "interface",
    "default_store_path": "interface",
}
_OUTCOME = ("sigma", "reward", "evaluate", "DEFAULT_FAILURE_REWARD")

if TYPE_CHECKING:
    from condor_rlrep.agent.bandit import Agent, Choice
    from condor_rlrep.agent.config import AgentConfig, ConfigError
    from condor_rlrep.agent.state import StateError, StateSpace
    from condor_rlrep.agent.interface import AgentStore, Decision, DecisionRecord, StoreStats, default_store_path
    from condor_rlrep.agent.postgres import PostgresStore
    from condor_rlrep.agent.store import SqliteStore
    from condor_rlrep.outcome import DEFAULT_FAILURE_REWARD, evaluate, reward, sigma


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module = importlib.import_module(f"condor_rlrep.agent.{_WHERE[name]}")
    elif name in _OUTCOME:
        module = importlib.import_module("condor_rlrep.outcome")
    else:
        raise AttributeError(f"module 'condor_rlrep.agent' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
