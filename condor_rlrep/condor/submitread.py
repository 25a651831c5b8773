"""The values of a submit description, read without running anything.

``htcondor2.Submit`` runs the command of an ``include : CMD |`` line when
it parses a description: fine for the user's own file at submit time, not
for ``report`` reading a run that someone else wrote (it would run their
command as whoever runs ``report``). :func:`submit_values` reads the
``key = value`` lines only (case-insensitive keys, ``\\`` continuations,
the last assignment wins), skips ``include`` and ``if``/``else`` lines,
stops at the first ``queue``, and expands ``$(NAME)`` macros from the
description and the given ones, to a bounded depth. It is a best-effort reader for
courtesies (where a node's stderr went), never for what is submitted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["submit_values", "expand"]

_ASSIGN = re.compile(r"^\s*([A-Za-z_+.][A-Za-z0-9_+.]*)\s*=\s?(.*)$")
_MACRO = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.]*)\)")
_SKIP = re.compile(r"^\s*(include\b|if\b|elif\b|else\b|endif\b|error\s*:|warning\s*:)", re.IGNORECASE)
_QUEUE = re.compile(r"^\s*queue\b", re.IGNORECASE)
_MAX_ROUNDS = 16


def submit_values(text: str) -> dict[str, str]:
    """The description's assignments, keys lower-cased; nothing is run or read besides ``text``."""
    values: dict[str, str] = {}
    pending = ""
    for raw in text.splitlines():
        line = pending + raw
        if line.endswith("\\"):
            pending = line[:-1]
            continue
        pending = ""
        stripped = line.strip()
        if _QUEUE.match(stripped):
            break  # what follows describes the next jobs, not these
        if not stripped or stripped.startswith("#") or _SKIP.match(stripped):
            continue
        match = _ASSIGN.match(line)
        if match:
            values[match.group(1).lower()] = match.group(2).strip()
    return values


def expand(value: str, values: Mapping[str, str]) -> str:
    """``value`` with ``$(NAME)`` replaced from ``values`` (keys lower-cased);
    unknown macros stay as they are; at most a few rounds (a macro naming
    itself cannot loop)."""
    def one(match: re.Match[str]) -> str:
        return values.get(match.group(1).lower(), match.group(0))

    for _ in range(_MAX_ROUNDS):
        expanded = _MACRO.sub(one, value)
        if expanded == value:
            break
        value = expanded
        if len(value) > 65536:
            break
    return value
