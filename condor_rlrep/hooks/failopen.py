"""What the hooks do when anything inside them goes wrong: behave as if
condor-rlrep were not there.

* PRE: the node's submit file becomes the user's description, byte for byte
  (one replica, no tags); if the user's description does not exist, our
  submit file is removed too, so DAGMan's submit fails exactly as it would
  have. PRE then exits 0 (the user's own PRE, if any, already succeeded).
* POST: exit with what DAGMan would have concluded without us: 0 if the
  node log shows a successful replica, else what ``$SUCCESS`` says (with
  ``$RETURN`` as the failure's code), else ``$RETURN`` (as an exit status),
  else 1.

Every fallback writes one line to the hook log saying what was wrong.
"""

from __future__ import annotations

import os

from condor_rlrep.hooks.chain import exit_status
from condor_rlrep.hooks.hooklog import HookLog

__all__ = ["describe", "fail_open_pre", "fallback_post_code"]


def describe(err: BaseException) -> str:
    """One line naming the problem (library errors already name file and thing)."""
    from condor_rlrep.errors import RlrepError

    if isinstance(err, RlrepError):
        return str(err)
    if isinstance(err, OSError) and err.filename is not None:
        return f"{err.strerror or type(err).__name__}: {err.filename}"
    if isinstance(err, KeyError) and err.args:
        return str(err.args[0])
    return f"{type(err).__name__}: {err}"


def source_mode(path: str, default: int = 0o600) -> int:
    """Permission bits for a file made from ``path``: never wider than its own."""
    try:
        return os.stat(path).st_mode & 0o666
    except OSError:
        return default


def fail_open_pre(submit: str | None, out: str | None, node: str | None, hooklog: HookLog, why: str) -> int:
    """Put the user's unmodified description in place and log ``why``."""
    if out is None:
        hooklog.line("PRE", node, f"FAIL-OPEN {why}; no --ctx/--node in argv, DAGMan submits the node's file as is")
        return 0
    try:
        if submit is None:
            raise FileNotFoundError(2, "no --submit in argv", None)
        with open(submit, "rb") as handle:
            data = handle.read()
        action = "running the user's job unchanged (1 replica)"
        try:
            from condor_rlrep.atomic import write_atomic

            write_atomic(out, data, mode=source_mode(submit))
        except OSError as err:
            action = _link_original(submit, out, data, err)
    except FileNotFoundError:
        action = (
            f"user submit description {submit} is missing: the node's submit will fail "
            "as it would without condor-rlrep"
        )
        try:
            os.unlink(out)
        except FileNotFoundError:
            pass
        except OSError as err:
            action += f" (but the stale {out} cannot be removed: {describe(err)})"
    except OSError as err:
        action = f"could not read the user's description ({describe(err)}); DAGMan submits {out} as it stands"
    hooklog.line("PRE", node, f"FAIL-OPEN {why}; {action}")
    return 0


def _link_original(submit: str, out: str, data: bytes, err: OSError) -> str:
    """The copy failed (disk full, quota): if ``out`` already holds the
    user's description (instrument wrote it), nothing is needed; else point
    ``out`` at the user's file by a link, which needs no data blocks."""
    try:
        with open(out, "rb") as handle:
            if handle.read() == data:
                return f"running the user's job unchanged (1 replica; {out} already holds it, copy failed: {describe(err)})"
    except OSError:
        pass
    tmp = f"{out}.link-{os.getpid()}"
    for make in (os.link, os.symlink):
        try:
            make(os.path.abspath(submit), tmp)
            os.replace(tmp, out)
            return f"running the user's job unchanged (1 replica; {out} linked to it, copy failed: {describe(err)})"
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return (f"could not put the user's description in place ({describe(err)}); DAGMan submits {out} "
            "as it stands (instrument's copy of it, or this node's last replica description)")


def fallback_post_code(log_success: bool | None, return_code: int | None, success_flag: str | None) -> tuple[int, str]:
    """The node's exit status without condor-rlrep, and where it came from.

    DAGMan's ``$SUCCESS`` comes before ``$RETURN``: with ``TOLERANCE 99%``
    (written only where instrument passes ``$SUCCESS``) a surplus replica
    removed after the winner sets ``$RETURN`` to -1002 while ``$SUCCESS`` is
    True, and for one job both say the same (docs/dagman.md §4). ``$SUCCESS``
    False: the job's code, as a node without POST would have returned it.
    """
    if log_success:
        return 0, "a replica succeeded in the node log"
    flag = success_flag.lower() if success_flag is not None else None
    if flag == "true":
        return 0, "$SUCCESS True"
    if flag == "false":
        if return_code:
            return exit_status(return_code), f"$SUCCESS False, $RETURN {return_code}"
        return 1, "$SUCCESS False"
    if return_code is not None:
        return exit_status(return_code), f"$RETURN {return_code}"
    return 1, "no log information, no $SUCCESS and no $RETURN: node failed"
