"""The ``--store`` option of the ``condor-rlrep agent`` commands, and how
they name a store.

The store is ``--store``, else ``$CONDOR_RLREP_STORE``, else
``$XDG_DATA_HOME/condor-rlrep/agent.sqlite``: one rule, the library's
:func:`~condor_rlrep.store.location.resolve_store`. A store is named by
:func:`~condor_rlrep.store.backends.describe_store`, so a URL is never
printed with its password.
"""

from __future__ import annotations

from typing import Any

import click

from condor_rlrep.store import backends
from condor_rlrep.store.location import resolve_store

__all__ = ["store_option", "store_path_of", "store_name"]

_STORE_HELP = ("Agent store: a file (SQLite) or a postgresql:// URL"
               " [default: $CONDOR_RLREP_STORE, else $XDG_DATA_HOME/condor-rlrep/agent.sqlite].")


def store_option(func: Any) -> Any:
    return click.option("--store", "store_path", default=None, metavar="FILE|URL", help=_STORE_HELP)(func)


def store_path_of(store_path: str | None) -> str:
    return resolve_store(store_path)  # the one rule: --store > $CONDOR_RLREP_STORE > XDG default


def store_name(spec: str) -> str:
    return backends.describe_store(spec)
