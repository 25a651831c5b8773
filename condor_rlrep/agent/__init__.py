"""The replica bandit agent (§4.4 of the replication paper): what it learns
and how it chooses. How its values are kept on disk is :mod:`condor_rlrep.store`,
which depends on this package, never the other way round.

Public API, imported lazily so that the hooks' fast path (a store's
``decide()``) loads neither numpy nor the in-memory agent:

- :class:`AgentConfig`, :class:`ConfigError` — every parameter, validated.
- :class:`StateSpace`, :class:`StateError` — (hour, φ′ bin) ↔ state index.
- :class:`Agent`, :class:`Choice` — in-memory agent: ``choose``/``learn``.

σ and the reward are defined once, in :mod:`condor_rlrep.outcome`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["AgentConfig", "ConfigError", "StateSpace", "StateError", "Agent", "Choice"]

_WHERE = {
    "AgentConfig": "config",
    "ConfigError": "config",
    "StateSpace": "state",
    "StateError": "state",
    "Agent": "bandit",
    "Choice": "bandit",
}

if TYPE_CHECKING:
    from condor_rlrep.agent.bandit import Agent, Choice
    from condor_rlrep.agent.config import AgentConfig, ConfigError
    from condor_rlrep.agent.state import StateError, StateSpace


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'condor_rlrep.agent' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"condor_rlrep.agent.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
