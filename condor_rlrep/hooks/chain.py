"""Run the user's own PRE/POST script the way DAGMan would have run it.

DAGMan ``execve``s the first token with no PATH lookup and no shell, in the
node's directory, with no stdin; a failed exec counts as exit status 1
(docs/dagman.md §2.2). Output goes to our own stdout/stderr, which DAGMan keeps
when the SCRIPT line has ``DEBUG``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

__all__ = ["run_user_script", "exit_status"]


def run_user_script(argv: Sequence[str], cwd: str | None = None) -> int:
    """Exit status of the user's script (``-N`` when killed by signal N)."""
    import subprocess  # lazy: only nodes with their own scripts pay for it

    if not argv:
        return 0
    directory = cwd or os.getcwd()
    executable = argv[0]
    if not os.path.isabs(executable):
        # execve semantics: relative to the node directory, never via PATH
        executable = os.path.join(directory, executable)
    try:
        done = subprocess.run([executable, *argv[1:]], cwd=directory, stdin=subprocess.DEVNULL, check=False)
    except Exception:  # noqa: BLE001 - a failed exec counts as exit status 1, as in DAGMan
        return 1
    return done.returncode


def exit_status(code: int) -> int:
    """A node return value as a process exit status DAGMan reads the same way:
    0–255 unchanged, anything else (negative DAGMan codes such as -1002,
    ``-signal``) a plain failure, 1."""
    return code if 0 <= code <= 255 else 1
