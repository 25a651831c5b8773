"""What the hooks do when anything inside them goes wrong: behave as if
condor-rlrep were not there.

* PRE: the node's submit file becomes the user's description, byte for byte
  (one replica, no tags); if the user's description does not exist, our
  submit file is removed too, so DAGMan's submit fails exactly as it would
  have. PRE then exits 0 (the user's own PRE, if any, already succeeded).
* POST: exit with what DAGMan would have concluded without us: 0 if the
  node log shows a successful replica or ``$RETURN`` is 0, else ``$RETURN``
  (as an exit status), else ``$SUCCESS``, else 1.

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


def fail_open_pre(submit: str | None, out: str | None, node: str | None, hooklog: HookLog, why: str) -> int:
    """Put the user's unmodified description in place and log ``why``."""
    if out is None:
        hooklog.line("PRE", node, f"FAIL-OPEN {why}; no --out in argv, DAGMan submits the node's file as is")
        return 0
    try:
        if submit is None:
            raise FileNotFoundError(2, "no --submit in argv", None)
        with open(submit, "rb") as handle:
            data = handle.read()
        from condor_rlrep.atomic import write_atomic

        write_atomic(out, data)
        action = "running the user's job unchanged (1 replica)"
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
        action = f"could not copy the user's description ({describe(err)}); DAGMan submits {out} as is"
    hooklog.line("PRE", node, f"FAIL-OPEN {why}; {action}")
    return 0


def fallback_post_code(log_success: bool | None, return_code: int | None, success_flag: str | None) -> tuple[int, str]:
    """The node's exit status without condor-rlrep, and where it came from."""
    if log_success:
        return 0, "a replica succeeded in the node log"
    if return_code is not None:
        return exit_status(return_code), f"$RETURN {return_code}"
    if success_flag is not None and success_flag.lower() in ("true", "false"):
        return (0 if success_flag.lower() == "true" else 1), f"$SUCCESS {success_flag}"
    return 1, "no log information and no $RETURN: node failed"
