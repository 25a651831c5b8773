"""Which agent store a command or hook uses, and opening it.

One rule everywhere (``instrument``, the hooks, ``agent …``, ``train``):
an explicit ``--store`` wins, else ``$CONDOR_RLREP_STORE``, else ``store``
in the user's config file, else HTCondor's ``RLREP_STORE`` (a pool admin's
setting, :mod:`condor_rlrep.condor.config`), else
``$XDG_DATA_HOME/condor-rlrep/agent.sqlite`` (``~/.local/share`` when
``XDG_DATA_HOME`` is unset). ``instrument`` resolves it once and writes the
result into the instrumented run, because DAGMan passes its scripts only a
short environment: a hook never resolves a store from its own environment.

A store *spec* is a file path (the embedded SQLite store) or a
``postgresql://`` URL (a server store shared by several access points);
callers never look at a spec themselves. A URL is kept exactly as given
(its password, if any, is only ever shown redacted, see
:func:`describe_store`); file paths are made absolute and checked for
writability. The backend-specific work lives in :mod:`.backends`, which
imports psycopg only when a URL is used, so the SQLite path of the hooks
stays light.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condor_rlrep.store.interface import AgentStore

__all__ = [
    "STORE_ENV", "resolve_store", "store_setting", "is_url", "open_store", "create_store", "store_exists", "describe_store",
    "unwritable_reason", "has_password", "HOOK_CONNECT_TIMEOUT",
]

STORE_ENV = "CONDOR_RLREP_STORE"


def store_setting(flag: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None,
                  config_file: str | None = None) -> Any:
    """The store spec as given and where it came from (a
    :class:`condor_rlrep.condor.config.Setting`): ``flag`` >
    ``$CONDOR_RLREP_STORE`` > the user config (``config_file``, else the
    XDG one) > HTCondor's ``RLREP_STORE`` > the XDG default."""
    from condor_rlrep.condor.config import load_user_config, resolve_setting, user_config_path

    env = os.environ if environ is None else environ
    config_name = config_file or user_config_path(env)
    data_home = env.get("XDG_DATA_HOME") or os.path.join(_home(env), ".local", "share")
    return resolve_setting(
        "store", os.fspath(flag) if flag is not None else None, environ=env,
        user_config=load_user_config(config_name) if not (flag or env.get(STORE_ENV)) else None,
        user_config_name=config_name, default=os.path.join(data_home, "condor-rlrep", "agent.sqlite"),
    )


def resolve_store(flag: str | os.PathLike[str] | None, environ: Mapping[str, str] | None = None) -> str:
    """The store to use (:func:`store_setting`'s order), as an absolute
    path (relative ones are taken from the current directory) or a URL."""
    spec = str(store_setting(flag, environ).value)
    if is_url(spec):
        from condor_rlrep.store.postgres_url import is_postgres_url

        if not is_postgres_url(spec):
            from condor_rlrep.errors import StoreError

            scheme = spec.partition("://")[0]
            raise StoreError(f"store {describe_store(spec)!r}: unknown scheme {scheme!r} (a file path or a postgresql:// URL)")
        return spec
    return os.path.abspath(os.path.expanduser(spec))


def is_url(spec: str) -> bool:
    """``scheme://…`` (a server store), as opposed to a file path."""
    scheme, sep, _ = spec.partition("://")
    return bool(sep) and scheme[:1].isalpha() and scheme.isascii() and all(c.isalnum() or c in "+-." for c in scheme)


def _home(env: Mapping[str, str]) -> str:
    home = env.get("HOME")
    return home if home else os.path.expanduser("~")


#: A hook waits at most this long for a store server to answer a connection:
#: DAGMan runs hooks serially per node, and an unreachable server must fail
#: open (outcome spooled) quickly rather than hold the node.
HOOK_CONNECT_TIMEOUT = 2.0


def open_store(
    spec: str, *, busy_timeout: float | None = None, connect_timeout: float | None = None,
    broker: str | None = None,
) -> AgentStore:
    """Open an existing store (:class:`~condor_rlrep.errors.StoreError` if there is
    none, or its server cannot be reached). ``busy_timeout`` bounds a wait on a
    lock (SQLite's busy timeout, PostgreSQL's statement timeout);
    ``connect_timeout`` the connection to a server. ``broker``: the socket of
    a :mod:`~condor_rlrep.store.broker` serving this (server) store, tried
    first; without an answer there the store is opened directly."""
    if broker is not None and is_url(spec) and os.path.exists(broker):
        from condor_rlrep.store.broker import connect

        client = connect(broker, describe_store(spec), timeout=busy_timeout or 10.0)
        if client is not None:
            return client  # type: ignore[return-value]
    from condor_rlrep.store import backends

    if busy_timeout is None:
        return backends.open_store(spec, connect_timeout=connect_timeout)
    return backends.open_store(spec, busy_timeout=busy_timeout, connect_timeout=connect_timeout)


def create_store(spec: str, config: Any = None) -> AgentStore:
    """Create a new store (a SQLite file, or the schema in a server database);
    an existing one is an error."""
    from condor_rlrep.store import backends

    return backends.create_store(spec, config)


def store_exists(spec: str) -> bool:
    """A file at the path, or the store's schema in the database (an unreachable
    server raises :class:`~condor_rlrep.errors.StoreError`)."""
    if not is_url(spec):
        return os.path.exists(spec)
    from condor_rlrep.store import backends

    return backends.store_exists(spec)


def describe_store(spec: str) -> str:
    """How to name the store to a user, in a log or in a file: never with a password."""
    if not is_url(spec):
        return spec
    from condor_rlrep.store.postgres_url import redact_url

    return redact_url(spec)


def has_password(spec: str) -> bool:
    """Whether a store URL carries a password (which must never be written into a run)."""
    if not is_url(spec):
        return False
    from condor_rlrep.store.postgres_url import has_password as url_has_password

    return url_has_password(spec)


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
