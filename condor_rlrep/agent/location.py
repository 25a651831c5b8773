"""Which agent store a command or hook uses, and opening it.

One rule everywhere (``instrument``, the hooks, ``agent …``, ``train``):
an explicit ``--store`` wins, else ``$CONDOR_RLREP_STORE``, else
``$XDG_DATA_HOME/condor-rlrep/agent.sqlite`` (``~/.local/share`` when
``XDG_DATA_HOME`` is unset). ``instrument`` resolves it once and writes the
result into the instrumented run, because DAGMan passes its scripts only a
short environment: a hook never resolves a store from its own environment.

A store *spec* is a file path today; other backends (a server database
URL) plug in here, so callers never look at the spec themselves. A spec
with a URL scheme (``scheme://…``) is kept exactly as given: only file paths
are made absolute and checked for writability.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condor_rlrep.agent.interface import AgentStore

__all__ = [
    "STORE_ENV", "resolve_store", "is_url", "open_store", "create_store", "store_exists", "describe_store",
    "unwritable_reason",
]

STORE_ENV = "CONDOR_RLREP_STORE"


def resolve_store(flag: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> str:
    """The store to use: ``flag`` > ``$CONDOR_RLREP_STORE`` > the XDG default,
    as an absolute path (relative ones are taken from the current directory)."""
    env = os.environ if environ is None else environ
    if flag is not None and os.fspath(flag) != "":
        spec = os.fspath(flag)
    elif env.get(STORE_ENV):
        spec = str(env[STORE_ENV])
    else:
        data_home = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
        spec = os.path.join(data_home, "condor-rlrep", "agent.sqlite")
    if is_url(spec):
        return spec
    return os.path.abspath(os.path.expanduser(spec))


def is_url(spec: str) -> bool:
    """``scheme://…`` (a server store), as opposed to a file path."""
    scheme, sep, _ = spec.partition("://")
    return bool(sep) and scheme[:1].isalpha() and scheme.isascii() and all(c.isalnum() or c in "+-." for c in scheme)


def _home(env: Mapping[str, str]) -> str:
    home = env.get("HOME")
    return home if home else os.path.expanduser("~")


def open_store(spec: str, *, busy_timeout: float | None = None) -> AgentStore:
    """Open an existing store (:class:`~condor_rlrep.errors.StoreError` if there is none)."""
    from condor_rlrep.agent.store import SqliteStore

    if busy_timeout is None:
        return SqliteStore(spec)
    return SqliteStore(spec, busy_timeout=busy_timeout)


def create_store(spec: str, config: Any = None) -> AgentStore:
    """Create a new store (an existing one is an error)."""
    from condor_rlrep.agent.store import SqliteStore

    return SqliteStore.create(spec, config)


def store_exists(spec: str) -> bool:
    return os.path.exists(spec)


def describe_store(spec: str) -> str:
    """How to name the store to a user (never a secret)."""
    return spec


def unwritable_reason(spec: str) -> str | None:
    """Why this process could not write the store, or None when it can.

    SQLite in WAL mode writes ``-wal``/``-shm`` files beside the store, so its
    directory must be writable too (a store that does not exist yet needs
    the nearest existing parent directory to be). A URL: None (its server
    answers for itself when the store is opened)."""
    if is_url(spec):
        return None
    if os.path.exists(spec):
        if not os.access(spec, os.R_OK | os.W_OK):
            return f"{spec} is not readable and writable by this user"
        directory = os.path.dirname(spec) or "."
        if not os.access(directory, os.W_OK | os.X_OK):
            return f"directory {directory} is not writable by this user (SQLite writes {os.path.basename(spec)}-wal there)"
        return None
    parent = os.path.dirname(spec) or "."
    while not os.path.exists(parent):
        parent = os.path.dirname(parent) or "."
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot create {spec}: {parent} is not a writable directory for this user"
    return None
