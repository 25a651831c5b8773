"""The run's agent store as a hook opens it.

Every hook that reaches the store (PRE deciding, POST recording, a decision
closed after a removal) opens the store ``instrument`` resolved
(``hooks.json``, never the hook's own environment) the same way: a bounded
wait on a lock (the run's ``store_timeout``), a short connect timeout to a
server (:data:`~condor_rlrep.store.location.HOOK_CONNECT_TIMEOUT`: DAGMan
runs a node's hooks serially, so an unreachable server must fail open fast),
and the reaper's broker tried first (:mod:`condor_rlrep.store.broker`: one
server connection for the whole run). A hook fails open, or spools, when
the store cannot be opened; none waits longer than these bounds.

Imports nothing of the store until a hook asks for it: a fixed policy's
PRE and POST never load it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULT_STORE_TIMEOUT", "store_timeout", "open_hook_store"]

DEFAULT_STORE_TIMEOUT = 10.0
"""Seconds a PRE/POST waits for a locked store before failing open."""


def store_timeout(settings: Any) -> float:
    """The run's wait for a locked store (``hooks.json``'s ``store_timeout``)."""
    return float(getattr(settings, "store_timeout", DEFAULT_STORE_TIMEOUT))


def open_hook_store(context: str | None, settings: Any, *, broker: bool = True) -> Any:
    """Open the run's store (an :class:`~condor_rlrep.store.interface.AgentStore`,
    a context manager). ``broker``: False for a request the broker does not
    serve (scanning the decisions), which then goes to the store directly."""
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.store.location import HOOK_CONNECT_TIMEOUT, open_store

    return open_store(settings.store_path(), busy_timeout=store_timeout(settings),
                      connect_timeout=HOOK_CONNECT_TIMEOUT, broker=broker_socket(context) if broker else None)
