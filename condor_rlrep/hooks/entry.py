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
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        from condor_rlrep.hooks.pre import run_pre

        code = run_pre(args)
    except BaseException as err:  # noqa: BLE001 - last resort: the user's job runs as it stands
        _last_resort("PRE", args, err, "exit 0: DAGMan submits the node's file as it stands")
        code = 0
    _exit_now(code)


def post_main(argv: Sequence[str] | None = None) -> None:
    _short_lived()
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        from condor_rlrep.hooks.post import run_post

        code = run_post(args)
    except BaseException as err:  # noqa: BLE001 - never let a bug in us decide the node
        code, source = _fallback_from_argv(args)
        _last_resort("POST", args, err, f"exit {code} from {source}")
    _exit_now(code)


def reaper_main(argv: Sequence[str] | None = None) -> None:
    from condor_rlrep.hooks.reaper import run_reaper

    sys.exit(run_reaper(sys.argv[1:] if argv is None else list(argv)))


def _fallback_from_argv(args: Sequence[str]) -> tuple[int, str]:
    """The node's exit code without us, from DAGMan's ``$SUCCESS``/``$RETURN``."""
    try:
        from condor_rlrep.hooks.argv import parse_hook_argv
        from condor_rlrep.hooks.failopen import fallback_post_code

        parsed = parse_hook_argv(args)
        return fallback_post_code(None, parsed.integer("return"), parsed.text("success"))
    except BaseException:  # noqa: BLE001
        return 1, "nothing (argv unusable)"


def _last_resort(hook: str, args: Sequence[str], err: BaseException, action: str) -> None:
    try:
        from condor_rlrep.hooks.argv import parse_hook_argv
        from condor_rlrep.hooks.hooklog import HookLog

        parsed = parse_hook_argv(args)
        context = parsed.options.get("ctx")
        HookLog.of_run(context).line(
            hook, parsed.options.get("node"), f"FAIL-OPEN internal error {type(err).__name__}: {err}; {action}")
    except BaseException:  # noqa: BLE001
        try:
            os.write(2, f"condor-rlrep {hook}: internal error {err!r}; {action}\n".encode("utf-8", "replace"))
        except BaseException:  # noqa: BLE001
            pass
