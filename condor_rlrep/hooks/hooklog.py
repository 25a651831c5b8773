"""The per-DAG hook log: one clear line per hook event.

``<ctx>/hooks.log`` next to the instrumented DAG. Every line is written with
one ``O_APPEND`` write, so concurrent hook processes never interleave within
a line:

    2026-12-02T11:07:45.120Z PRE A retry=0 a=3 phi=0.42 decision=17
    2026-12-02T11:08:00.031Z POST A FAIL-OPEN cannot read node log: …; exit 0 ($RETURN)
"""

from __future__ import annotations

import os
import time

__all__ = ["HookLog"]


class HookLog:
    """Appends lines ``<UTC time> <HOOK> <node> <message>`` to ``path``.

    Writing never raises: a hook must not fail because its log cannot be
    written (the problem is reported through :mod:`logging` instead).
    """

    def __init__(self, path: str | os.PathLike[str] | None):
        self.path = None if path is None else os.fspath(path)

    def line(self, hook: str, node: str | None, message: str, *, now: float | None = None) -> str:
        when = time.time() if now is None else now
        # milliseconds: hook and reaper reaction times are read from this log
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when * 1000) % 1000:03d}Z"
        text = f"{stamp} {hook} {node or '-'} {' '.join(message.split())}\n"
        if self.path is not None:
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, text.encode("utf-8", "replace"))
                finally:
                    os.close(fd)
            except OSError as err:
                import logging  # only on this rare path: hooks must start fast

                logging.getLogger(__name__).warning("cannot write hook log %s: %s", self.path, err)
        return text

    def read(self) -> list[str]:
        """Every line written so far (for tests and ``condor-rlrep hook`` users)."""
        if self.path is None or not os.path.exists(self.path):
            return []
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            return handle.read().splitlines()
