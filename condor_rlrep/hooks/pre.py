"""The PRE hook: decide a node's replica count and write its submit file.

Order (docs/live.md §4):

1. the user's own PRE script (after ``--``) runs first, in the node's
   directory; if it fails, its exit code is the hook's (DAGMan then does
   exactly what it would have done: retry, fail, or PRE_SKIP);
2. s(W) of this DAG run (:mod:`condor_rlrep.rundir.runstate`), φ′ or φ″ of
   the node from the cached plan (:mod:`condor_rlrep.rundir.plan`), the
   agent's decision ``a`` (a pending row in the store);
3. the node's submit file = the user's description with ``queue a`` and
   ``My.Rlrep*`` tags, checked with ``htcondor2.Submit``, written atomically;
   the decision is kept for POST in ``state/<node>.json``.

A description that queues several procs itself (or uses itemdata) runs
unchanged as one "replica", without asking the agent. Any error in steps 2–3
fails open (:mod:`.failopen`), closing a decision already made
(:mod:`.closing`). Exit 0 otherwise.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from condor_rlrep.hooks.argv import HookArgs, parse_hook_argv
from condor_rlrep.hooks.chain import exit_status, run_user_script
from condor_rlrep.hooks.closing import close_previous_attempt, close_unrun
from condor_rlrep.hooks.failopen import describe, fail_open_pre
from condor_rlrep.hooks.hooklog import HookLog
from condor_rlrep.hooks.hookstore import open_hook_store

__all__ = ["run_pre", "MAX_REPLICAS_BY_TOLERANCE"]

MAX_REPLICAS_BY_TOLERANCE = 100
"""``TOLERANCE node 99%`` tolerates ⌊0.99·a⌋ = a − 1 failures only for a ≤ 100."""


def _node_name(args: HookArgs) -> str | None:
    node = args.text("node")
    job = args.text("job")
    if node is not None and job is not None and job != node:
        args.problems.append(f"$JOB is {job!r} but the hook was written for node {node!r}")
    return node or job


def run_pre(argv: Sequence[str], *, now: float | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run the PRE hook with DAGMan's argv (without the program name); the exit status."""
    args = parse_hook_argv(argv)
    context = args.options.get("ctx")
    node = _node_name(args)
    hooklog = HookLog.of_run(context)
    if args.user_argv:
        code = run_user_script(args.user_argv, os.getcwd())
        if code != 0:
            hooklog.line("PRE", node, f"user PRE {args.user_argv[0]} exited {code}: passing it to DAGMan")
            return exit_status(code)
    submit, out = args.options.get("submit"), _submit_path(context, node)
    decided: dict[str, Any] = {}
    try:
        if context is None or node is None:
            raise ValueError("hook argv lacks --ctx or --node/$JOB")
        message = _pre(args, context, node, now if now is not None else time.time(), environ, decided)
    except Exception as err:  # fail open on anything: the node must run as without us
        why = describe(err)
        if args.problems:
            why += " [" + "; ".join(args.problems) + "]"
        _forget_state(context, node)
        if decided:
            why += "; " + close_unrun(context, decided["settings"], decided["decision_id"], decided["estimate"], why)
        _journal(context, node, {"retry": args.integer("retry"), "dagid": args.text("dagid"), "fail_open": why,
                                 "decision_id": decided.get("decision_id")})
        return fail_open_pre(submit, out, node, hooklog, why)
    if args.problems:
        message += " [" + "; ".join(args.problems) + "]"
    hooklog.line("PRE", node, message)
    return 0


def _submit_path(context: str | None, node: str | None) -> str | None:
    """The node's submit file: always ``<ctx>/nodes/<stem>.sub``, never a
    path from argv (nothing in a DAG can make PRE write elsewhere)."""
    if not context or node is None:
        return None
    from condor_rlrep.rundir.layout import node_submit_path

    return node_submit_path(context, node)


def _forget_state(context: str | None, node: str | None) -> None:
    if context is None or node is None:
        return
    from condor_rlrep.rundir.layout import node_state_path

    try:
        os.unlink(node_state_path(context, node))
    except OSError:
        pass


def _pre(args: HookArgs, context: str, node: str, now: float, environ: Mapping[str, str] | None,
         decided: dict[str, Any]) -> str:
    """The hook's work; ``decided`` receives the agent's decision as soon as
    there is one (so that a failure after it can close it)."""
    from condor_rlrep.atomic import source_mode, write_atomic
    from condor_rlrep.condor.submit import find_queue
    from condor_rlrep.rundir.layout import HookSettings, node_state_path
    from condor_rlrep.rundir.runstate import workflow_start, write_node_state

    settings = HookSettings.load(context)
    submit, out = args.require("submit"), _submit_path(context, node)
    retry = args.integer("retry")
    dagid = args.digits("dagid")
    with open(submit, encoding="utf-8") as handle:
        text = handle.read()
    mode = source_mode(submit)  # the node's file is no more readable than the user's
    run = workflow_start(context, str(settings.dag), dagid, now, resume_at=lambda: _earliest_start(context, settings, node))
    from condor_rlrep.hooks.logmark import log_mark

    # the node's cluster is submitted after PRE: POST reads the log from here on, if it is still this file
    log_offset, log_id = log_mark(settings.node_log_path())
    state: dict[str, Any] = {
        "node": node, "retry": retry, "dagid": dagid, "run_id": run.run_id, "workflow_start": run.start,
        "pre_time": now, "submit_time": now, "decision_id": None, "replicas": 1, "log_offset": log_offset,
        "log_id": log_id,
    }
    orphan = close_previous_attempt(context, settings, node, dagid, retry)
    statement = find_queue(text)
    if statement.kind != "single":
        write_node_state(node_state_path(context, node), {**state, "mode": "passthrough"})
        _journal(context, node, {**state, "mode": "passthrough", "chosen": "passthrough"})
        write_atomic(out, text, mode=mode)
        what = f"queue {statement.arguments}" if statement.line_index is not None else "no queue statement"
        return f"retry={retry} passthrough ({what}): the user's job runs unchanged"

    from condor_rlrep.rundir.plan import load_plan

    plan = load_plan(context, settings)
    entry = plan.node(node)
    estimate = entry[0]
    # One start for the run: a node the plan starts with the workflow (its
    # earliest start is 0) is, on its first attempt in the run's first DAGMan,
    # submitted at s(W) — not a few ms later on the clock of whichever PRE
    # ran second, which would move it across a φ′ bin boundary.
    at_start = len(entry) > 3 and entry[3] == 0.0 and not retry and (not run.dagids or run.dagids[0] == dagid)
    decided_at = run.start if at_start else now
    phi = plan.criticality(node, phi=float(settings.phi), start=run.start, submit_time=decided_at,
                           mode=str(settings.criticality))
    cap = min(int(settings.max_replicas), MAX_REPLICAS_BY_TOLERANCE)
    policy = settings.policy_spec()
    fixed = policy.fixed_replicas
    decision_id = None
    explored = False
    model_spec = settings.model_spec()
    model_detail: dict[str, Any] | None = None
    if fixed is not None:  # asked for: exactly K (instrument checked K <= max_replicas)
        replicas = max(1, min(fixed, MAX_REPLICAS_BY_TOLERANCE))
        chosen = "fixed"
    elif model_spec is not None:  # model:R: the survival model in the store (condor_rlrep.survival.live)
        from condor_rlrep.survival import live as model_path

        with open_hook_store(context, settings) as store:
            replicas, model_detail = model_path.decide(store, model_spec, phi=phi, estimate=estimate,
                                                       decided_at=decided_at, cap=cap)
        chosen = f"model: {model_detail['reason']}"
    elif phi <= 0.0:
        # No slack left: a replica runs as long as the task, so none can meet
        # the task's deadline s_t + max(0, 1+φ′)·e_t and extra ones only
        # waste. One replica is forced, not chosen: the agent is not asked and
        # learns nothing from it (no replica count could change its outcome).
        replicas, chosen = 1, "forced"
    else:
        # Noted before deciding: a PRE killed between the store's commit and
        # the state below leaves this, and the node's next PRE closes
        # whatever this attempt decided (no decision pending for ever).
        write_node_state(node_state_path(context, node), {**state, "mode": "deciding"})
        with open_hook_store(context, settings) as store:
            decision = store.decide(
                phi_prime=phi, timestamp=decided_at, now=now, max_replicas=cap,
                context={"dag": settings.dag, "node": node, "run": run.run_id, "retry": retry},
            )
        decided.update(decision_id=decision.decision_id, estimate=decision.estimate, settings=settings)
        decision_id, replicas, explored = decision.decision_id, decision.replicas, decision.explored
        chosen = "explore" if explored else "greedy"
    decided_state = {**state, "mode": "replicas", "decision_id": decision_id, "replicas": replicas, "phi_prime": phi,
                     "decided_at": decided_at, "estimate": estimate, "criticality": settings.criticality,
                     "dag_key": plan.key, "files": []}
    if model_detail is not None:
        decided_state["model"] = model_detail
    if decision_id is not None:
        # at once: a PRE killed from here on leaves a state naming the
        # decision, which the node's next PRE closes (no decision pending for ever)
        write_node_state(node_state_path(context, node), decided_state)
    from condor_rlrep.hooks.nodesubmit import node_description

    extra: list[str] = []
    notes: list[str] = []
    if model_detail is not None:  # POST learns each run's KeyboardIdle from the job's log
        from condor_rlrep.condor.joblog import SUBMIT_LINES, job_log
        from condor_rlrep.rundir.layout import node_file_stem

        own_log = os.path.join(context, "logs", node_file_stem(node) + ".log")
        lines, log_path, log_note = job_log(text, own_log, _node_macros(context, node, retry, dagid), os.getcwd())
        extra = [*SUBMIT_LINES, *lines]
        try:
            log_size = os.stat(log_path).st_size if log_path else 0
        except OSError:
            log_size = 0
        model_detail.update(job_log=log_path, job_log_offset=log_size)
        notes.append(log_note)
    described = node_description(text, node=node, replicas=replicas, decision_id=decision_id, run_id=run.run_id,
                                 macros=_node_macros(context, node, retry, dagid) if replicas > 1 else {},
                                 cwd=os.getcwd(), prefer_idle=policy.prefers_idle, extra_lines=extra,
                                 idle_attribute=str(settings.idle_attribute))
    body, files, notes = described.body, described.files, [*described.notes, *notes]
    if chosen == "forced":
        notes.insert(0, "phi'<=0: no replica count can meet the deadline; not asked, not learnt")
    node_state = {**decided_state, "files": files, "chosen": chosen}
    write_node_state(node_state_path(context, node), node_state)
    _journal(context, node, node_state)
    write_atomic(out, body, mode=mode)
    message = (
        f"retry={retry} a={replicas} ({chosen}) phi'={phi:.4g} e={estimate:g}s "
        f"s(W)={run.start:.3f} decision={decision_id} run={run.run_id}"
    )
    if notes:
        message += " [" + "; ".join(notes) + "]"
    if orphan:
        message += f"; {orphan}"
    return message


def _earliest_start(context: str, settings: Any, node: str) -> float:
    """The node's earliest start in the plan (seconds after s(W)): where a
    rescue that starts with it resumes the schedule."""
    from condor_rlrep.rundir.plan import load_plan

    entry = load_plan(context, settings).node(node)
    return float(entry[3]) if len(entry) > 3 else 0.0


def _journal(context: str | None, node: str | None, record: dict[str, Any]) -> None:
    """The decision, for ``status``/``report`` (:mod:`condor_rlrep.rundir.journal`)."""
    from condor_rlrep.rundir.journal import append

    append(context, "PRE", node, record)


def _node_macros(context: str, node: str, retry: int | None, dagid: str | None) -> dict[str, str]:
    """What DAGMan defines when it submits the node: ``JOB``, ``RETRY``,
    ``DAGManJobId`` and the node's VARS (instrument wrote them out)."""
    import json

    from condor_rlrep.rundir.layout import node_vars_path

    macros = {"JOB": node, "RETRY": str(retry or 0)}
    if dagid is not None:
        macros["DAGManJobId"] = dagid
    try:
        with open(node_vars_path(context, node), encoding="utf-8") as handle:
            values = json.load(handle)
    except FileNotFoundError:
        return macros
    if not isinstance(values, dict):
        raise ValueError(f"{node_vars_path(context, node)}: not a JSON object")
    macros.update({str(k): str(v) for k, v in values.items()})
    return macros
