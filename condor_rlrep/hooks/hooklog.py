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

__all__ = ["HookLog", "HOOK_LOG"]

HOOK_LOG = "hooks.log"


class HookLog:
    """Appends lines ``<UTC time> <HOOK> <node> <message>`` to ``path``.

    Writing never raises: a hook must not fail because its log cannot be
    written; the line then goes to stderr with the reason.
    """

    def __init__(self, path: str | os.PathLike[str] | None):
        self.path = None if path is None else os.fspath(path)

    @classmethod
    def of_run(cls, context: str | None) -> HookLog:
        """The run's log, ``<ctx>/hooks.log``; with no context (a hook argv
        without ``--ctx``) its lines go to stderr."""
        return cls(os.path.join(context, HOOK_LOG) if context else None)

    def line(self, hook: str, node: str | None, message: str, *, now: float | None = None) -> str:
        when = time.time() if now is None else now
        # milliseconds: hook and reaper reaction times are read from this log
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(when)) + f".{int(when * 1000) % 1000:03d}Z"
        text = f"{stamp} {hook} {node or '-'} {' '.join(message.split())}\n"
        problem = "no hook log (no --ctx)" if self.path is None else None
        if self.path is not None:
            try:
                from condor_rlrep.fileguard import append_bytes

                # 0600: the log names the user's files and decisions (a state file);
                # never through a planted symlink or into a FIFO
                append_bytes(self.path, text.encode("utf-8", "replace"), 0o600)
            except OSError as err:
                problem = f"cannot write hook log {self.path}: {err.strerror or err}"
        if problem is not None:
            # the line must reach someone: DAGMan keeps a script's stderr with DEBUG
            try:
                os.write(2, f"condor-rlrep: {problem}: {text}".encode("utf-8", "replace"))
            except OSError:
                pass
        return text

    def read(self) -> list[str]:
        """Every line written so far (for tests and ``condor-rlrep hook`` users)."""
        if self.path is None or not os.path.exists(self.path):
            return []
        from condor_rlrep.fileguard import read_text

        return read_text(self.path, errors="replace").splitlines()
