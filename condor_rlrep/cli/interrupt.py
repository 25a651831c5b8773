"""Ctrl-C as a good command-line tool takes it: one line, exit status 130.

A long command (``sweep``, ``simulate``, ``train``, ``status --watch``) may
be stopped at any moment. The library decides what is kept (a sweep keeps
every finished run and says so in its :class:`KeyboardInterrupt`'s message);
this module only turns the interrupt into ``condor-rlrep: interrupted: …``
instead of click's blank line, "Aborted." and, on a second Ctrl-C, a
traceback.
"""

from __future__ import annotations

import sys
from typing import NoReturn

import click

__all__ = ["Interrupted", "interrupted", "EXIT_INTERRUPTED"]

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


class Interrupted(Exception):
    """A KeyboardInterrupt carried past click (which would turn it into Abort)."""


def interrupted(message: str) -> NoReturn:
    """Say what the interrupt left behind and exit 130."""
    text = "condor-rlrep: interrupted" + (f": {message}" if message else "")
    try:
        click.echo(text, err=True)
    except OSError:
        pass
    sys.exit(EXIT_INTERRUPTED)
