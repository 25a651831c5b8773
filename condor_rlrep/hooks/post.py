"""The POST hook: judge the node from its event log, record the outcome,
and give DAGMan the exit code it would have seen without replicas.

1. *Verdict* (:mod:`.verdict`; never from ``$RETURN`` when the log has the
   answer): the node's cluster rebuilt from DAGMan's node log; a replicated
   node succeeds iff some replica terminated with exit 0. No job ran
   (``$RETURN`` -1001, the submission failed): the node fails, as without
   condor-rlrep, whatever ``$SUCCESS`` says. A log that cannot be read: the
   fail-open rule of :mod:`.failopen`. One replica under a fixed policy
   (nothing to record): DAGMan's ``$RETURN``, the single proc's own result.
2. *Promotion*: on a replicated node the kept replica's files take the
   user's names (:func:`condor_rlrep.condor.replica_files.promote_winner`).
3. The user's own POST (after ``--``) runs and its exit code decides. On
   a replicated node that succeeded, the argument positions that held
   ``$RETURN``/``$SUCCESS`` (``--user-return-at``/``--user-success-at``) are
   given ``0``/``True``, the values a single successful job would have
   produced, instead of the ``-1002`` a removed surplus replica leaves there.
4. *Bookkeeping* (:mod:`.record`), last, so that the reward follows the
   node's final verdict (docs/model.md §8): the outcome recorded in the
   store, or the runs in its survival model under ``model:R``; spooled
   (:mod:`.spool`) when the store cannot take them. Bookkeeping errors never
   change the verdict.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from condor_rlrep.hooks.argv import parse_hook_argv
from condor_rlrep.hooks.chain import exit_status, run_user_script
from condor_rlrep.hooks.failopen import describe, fallback_post_code
from condor_rlrep.hooks.hooklog import HookLog
from condor_rlrep.hooks.verdict import attempt_state, node_history, note_dag_change, single_unrecorded, verdict

__all__ = ["run_post"]

SUBMIT_FAILED = -1001
"""DAGMan's ``$RETURN`` when the node's submission failed: no job ran."""


class _NoJobRan(Exception):
    """The node's submission failed: its verdict is a failure, not a fail-open guess."""


def run_post(argv: Sequence[str], *, environ: Mapping[str, str] | None = None) -> int:
    """Run the POST hook with DAGMan's argv (without the program name); the exit status."""
    args = parse_hook_argv(argv)
    context = args.options.get("ctx")
    node = args.text("node") or args.text("job")
    hooklog = HookLog.of_run(context)
    return_code = args.integer("return")
    success_flag = args.text("success")
    notes: list[str] = []

    settings = state = history = None
    try:
        if return_code == SUBMIT_FAILED:
            # No job ran, so there is no log to read and no success to find
            # in it: "no job ran" is not "the log cannot be read". Without
            # condor-rlrep (no POST) DAGMan fails the node, whatever $SUCCESS
            # says (25.14 passes True here).
            raise _NoJobRan(f"no job ran: DAGMan's submission of the node failed ($RETURN {return_code})")
        if context is None or node is None:
            raise ValueError("hook argv lacks --ctx or --node/$JOB")
        from condor_rlrep.rundir.layout import HookSettings

        settings = HookSettings.load(context)
        state = attempt_state(context, node, args, notes)
        if single_unrecorded(state) and return_code is not None:
            # One replica under a fixed policy: one proc, whose result
            # DAGMan's $RETURN is exactly, and nothing to record or promote.
            # The log (and htcondor2, most of a POST's cost) is not needed.
            code, why = exit_status(return_code), f"one replica, nothing to record: $RETURN {return_code}"
            state = None
        else:
            if state is not None:
                note_dag_change(context, settings, state, notes)
            history = node_history(settings, node, args, notes, int((state or {}).get("log_offset", 0) or 0),
                                   (state or {}).get("log_id"))
            code, why = verdict(history, state, return_code, success_flag)
    except _NoJobRan as err:
        code, why = 1, str(err)
    except Exception as err:
        log_success = history.succeeded if history is not None else None
        code, source = fallback_post_code(log_success, return_code, success_flag)
        why = f"FAIL-OPEN {describe(err)}; exit {code} from {source}"

    promoted = ""
    replicated = bool(state and state.get("mode") == "replicas" and state.get("replicas", 1) > 1)
    if replicated and history is not None and state is not None and state.get("files"):
        try:
            promoted = _promote(state, history)
        except Exception as err:
            promoted = f"replica files NOT promoted: {describe(err)}"
    user = ""
    own_code = code
    accepted: bool | None = None
    if args.user_argv:
        user_argv = list(args.user_argv)
        if code == 0 and replicated:
            _normalise(user_argv, args.options.get("user-return-at"), "0")
            _normalise(user_argv, args.options.get("user-success-at"), "True")
        user_code = run_user_script(user_argv, os.getcwd())
        user = f"user POST {user_argv[0]} exited {user_code} and decides"
        code = exit_status(user_code)
        accepted = code == 0  # the node's verdict, which the reward follows (docs/model.md §8)
    recorded = ""
    if settings is not None and state is not None and history is not None and context is not None:
        try:
            from condor_rlrep.hooks.record import record_attempt

            recorded = record_attempt(context, settings, state, history, accepted=accepted)
        except Exception as err:
            recorded = f"outcome NOT recorded: {describe(err)}"
    message = "; ".join(part for part in (f"exit {own_code} ({why})", recorded, promoted) if part)
    if notes or args.problems:
        message += " [" + "; ".join(notes + args.problems) + "]"
    if user:
        message += f"; {user}"
    hooklog.line("POST", node, message)
    from condor_rlrep.rundir.journal import append_verdict

    append_verdict(context, "POST", node, {"exit": code, "why": why, "retry": args.integer("retry"),
                                           "dagid": args.text("dagid"), "accepted": accepted}, state, history)
    return code


def _promote(state: dict[str, Any], history: Any) -> str:
    """The kept replica's files take the user's names; the others' are deleted.
    Kept: the winner; with no winner the first replica that failed (its
    error output is what a single job would have left), else the lowest."""
    from condor_rlrep.condor.replica_files import promote_winner

    keep = history.winner
    if keep is None:
        failed = [inv.replica for inv in history.invocations if inv.ended_by == "failure"]
        keep = failed[0] if failed else (min(history.procs) if history.procs else None)
    procs = set(history.procs) | set(range(int(state.get("replicas", 1))))
    promoted, removed, problems = promote_winner(list(state["files"]), history.cluster, keep, procs)
    text = f"files of replica {keep} promoted ({promoted}), {removed} other replica file(s) removed"
    if problems:
        text += " (" + "; ".join(problems[:3]) + ")"
    return text


def _normalise(argv: list[str], positions: str | None, value: str) -> None:
    if not positions:
        return
    for item in positions.split(","):
        if item.isdigit() and int(item) < len(argv):
            argv[int(item)] = value
