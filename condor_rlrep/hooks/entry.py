"""Console-script entry points DAGMan runs: ``rlrep-pre``, ``rlrep-post``,
``rlrep-reaper`` (also ``condor-rlrep hook pre|post|reaper``).

Thin: argv in, exit status out. Anything escaping the hook logic (it should
not) still leaves DAGMan with a safe answer: PRE exits 0 after failing open,
POST exits with what ``$RETURN`` says.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence

__all__ = ["pre_main", "post_main", "reaper_main"]


def _short_lived() -> None:
    # A hook lives for ~0.1 s and allocates little but imports a lot: the
    # cyclic GC would only rescan the freshly imported modules' objects.
    gc.disable()


def _exit_now(code: int) -> None:
    """Exit without tearing the interpreter down (~10 ms a hook): every file
    and the store connection are closed by then; flush what may be buffered."""
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed stream must not change the exit status
            pass
    os._exit(code if isinstance(code, int) and 0 <= code <= 255 else 1)


def pre_main(argv: Sequence[str] | None = None) -> None:
    _short_lived()
    from condor_rlrep.hooks.pre import run_pre

    _exit_now(run_pre(sys.argv[1:] if argv is None else list(argv)))


def post_main(argv: Sequence[str] | None = None) -> None:
    _short_lived()
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        from condor_rlrep.hooks.post import run_post

        code = run_post(args)
    except Exception:  # last resort: never let a bug in us decide the node
        code = _return_from_argv(args)
    _exit_now(code)


def reaper_main(argv: Sequence[str] | None = None) -> None:
    from condor_rlrep.hooks.reaper import run_reaper

    sys.exit(run_reaper(sys.argv[1:] if argv is None else list(argv)))


def _return_from_argv(args: Sequence[str]) -> int:
    for index, token in enumerate(args[:-1]):
        if token == "--":
            break
        if token == "--return":
            try:
                value = int(args[index + 1])
            except ValueError:
                return 1
            return value if 0 <= value <= 255 else 1
    return 1
