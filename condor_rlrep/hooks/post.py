"""The POST hook: judge the node from its event log, record the outcome,
and give DAGMan the exit code it would have seen without replicas.

1. *Verdict* (never from ``$RETURN`` when the log has the answer): the node's
   cluster (``$CLUSTERID``, else the node's last cluster in the log) is
   rebuilt from DAGMan's node log with the real ``htcondor2.JobEventLog``.
   Replicated node: success iff some replica terminated with exit 0; else the
   first failing replica's code (DAGMan's ``$RETURN`` rule). A node run
   unchanged (multi-proc description, PRE failed open): DAGMan's own rule,
   success iff no proc failed or was removed. No usable log: the fail-open
   rule of :mod:`.failopen`. One replica under a fixed policy (nothing to
   record): DAGMan's ``$RETURN``, the single proc's own result.
2. *Bookkeeping*: :func:`condor_rlrep.outcome.evaluate` on the rebuilt
   invocations (the simulator's function), ``record_outcome`` in the store
   (idempotent: a rerun POST counts once); under ``model:R`` the runs go into
   the store's survival model instead (idempotent per node attempt). If the
   store cannot take them, the outcome or the runs are spooled to
   ``<ctx>/spool/`` and flushed into the same store by a later POST (or the
   reaper): nothing recorded is lost. Bookkeeping errors never change the verdict.
3. The user's own POST (after ``--``) runs last and its exit code decides. On
   a replicated node that succeeded, the argument positions that held
   ``$RETURN``/``$SUCCESS`` (``--user-return-at``/``--user-success-at``) are
   given ``0``/``True``, the values a single successful job would have
   produced, instead of the ``-1002`` a removed surplus replica leaves there.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from condor_rlrep.hooks.argv import HookArgs, parse_hook_argv
from condor_rlrep.hooks.chain import exit_status, run_user_script
from condor_rlrep.hooks.failopen import describe, fallback_post_code
from condor_rlrep.hooks.hooklog import HookLog

__all__ = ["run_post", "flush_spool", "close_orphaned", "close_undecided"]

MODEL_ENTRY = "model"
"""``kind`` of a spooled model update (an outcome's entry has no kind)."""


def run_post(argv: Sequence[str], *, environ: Mapping[str, str] | None = None) -> int:
    """Run the POST hook with DAGMan's argv (without the program name); the exit status."""
    args = parse_hook_argv(argv)
    context = args.options.get("ctx")
    node = args.text("node") or args.text("job")
    hooklog = HookLog(os.path.join(context, "hooks.log") if context else None)
    return_code = args.integer("return")
    success_flag = args.text("success")
    notes: list[str] = []

    settings = state = history = None
    try:
        if context is None or node is None:
            raise ValueError("hook argv lacks --ctx or --node/$JOB")
        from condor_rlrep.rundir.layout import HookSettings

        settings = HookSettings.load(context)
        state = _current_state(context, node, args, notes)
        if _single_unrecorded(state) and return_code is not None:
            # One replica under a fixed policy: one proc, whose result
            # DAGMan's $RETURN is exactly, and nothing to record or promote.
            # The log (and htcondor2, most of a POST's cost) is not needed.
            code, why = exit_status(return_code), f"one replica, nothing to record: $RETURN {return_code}"
            state = None
        else:
            if state is not None:
                _note_dag_change(context, settings, state, notes)
            history = _history(context, settings, node, args, notes, int((state or {}).get("log_offset", 0) or 0))
            code, why = _verdict(history, state, return_code, success_flag)
    except Exception as err:
        log_success = history.succeeded if history is not None else None
        code, source = fallback_post_code(log_success, return_code, success_flag)
        why = f"FAIL-OPEN {describe(err)}; exit {code} from {source}"

    recorded = ""
    if settings is not None and state is not None and history is not None and context is not None:
        try:
            recorded = _bookkeeping(context, settings, state, history, environ)
        except Exception as err:
            recorded = f"outcome NOT recorded: {describe(err)}"

    replicated = bool(state and state.get("mode") == "replicas" and state.get("replicas", 1) > 1)
    if replicated and history is not None and state is not None and state.get("files"):
        try:
            recorded += ("; " if recorded else "") + _promote(state, history)
        except Exception as err:
            recorded += ("; " if recorded else "") + f"replica files NOT promoted: {describe(err)}"
    message = f"exit {code} ({why})"
    if recorded:
        message += f"; {recorded}"
    if notes or args.problems:
        message += " [" + "; ".join(notes + args.problems) + "]"
    if args.user_argv:
        user_argv = list(args.user_argv)
        if code == 0 and replicated:
            _normalise(user_argv, args.options.get("user-return-at"), "0")
            _normalise(user_argv, args.options.get("user-success-at"), "True")
        user_code = run_user_script(user_argv, os.getcwd())
        message += f"; user POST {user_argv[0]} exited {user_code} and decides"
        code = exit_status(user_code)
    hooklog.line("POST", node, message)
    _journal(context, "POST", node, args, state, history, {"exit": code, "why": why})
    return code


def _journal(context: str | None, hook: str, node: str | None, args: HookArgs | None, state: dict[str, Any] | None,
             history: Any, extra: dict[str, Any]) -> None:
    """The verdict and the replicas, for ``status``/``report``
    (:mod:`condor_rlrep.rundir.journal`); never raises."""
    from condor_rlrep.rundir.journal import append, history_record

    try:
        record: dict[str, Any] = dict(extra)
        if args is not None:
            record.update(retry=args.integer("retry"), dagid=args.text("dagid"))
        if state is not None:
            record.update(run_id=state.get("run_id"), decision_id=state.get("decision_id"),
                          pre_time=state.get("pre_time"))
        if history is not None:
            record.update(history_record(history))
    except Exception:  # noqa: BLE001
        return
    append(context, hook, node, record)


def _single_unrecorded(state: dict[str, Any] | None) -> bool:
    return bool(state and state.get("mode") == "replicas" and int(state.get("replicas", 1)) == 1
                and state.get("decision_id") is None and not state.get("model"))


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


def _current_state(context: str, node: str, args: HookArgs, notes: list[str]) -> dict[str, Any] | None:
    """PRE's state for this attempt, or None (then the node is judged as unchanged)."""
    from condor_rlrep.rundir.layout import node_state_path
    from condor_rlrep.rundir.runstate import read_node_state

    try:
        state = read_node_state(node_state_path(context, node))
    except FileNotFoundError:
        fixed = _fixed_state(context, node, notes)
        if fixed is None:
            notes.append("no PRE state for this node (PRE failed open or did not run)")
        return fixed
    except (OSError, ValueError) as err:
        notes.append(f"PRE state unreadable ({describe(err)})")
        return None
    retry = args.integer("retry")
    if retry is not None and state.get("retry") is not None and state.get("retry") != retry:
        notes.append(f"PRE state is for attempt {state.get('retry')}, this is attempt {retry}: ignored")
        return None
    return state


def _fixed_state(context: str, node: str, notes: list[str]) -> dict[str, Any] | None:
    """The state instrument wrote for a fixed-policy node that runs without
    PRE (its replicas and their files), or None."""
    from condor_rlrep.rundir.layout import node_fixed_state_path
    from condor_rlrep.rundir.runstate import read_node_state

    try:
        return read_node_state(node_fixed_state_path(context, node))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as err:
        notes.append(f"instrument's state of this node unreadable ({describe(err)})")
        return None


def _note_dag_change(context: str, settings: Any, state: dict[str, Any], notes: list[str]) -> None:
    """Say so when the DAG was edited between PRE and POST: the outcome still
    belongs to the decision PRE made, and the verdict comes from the log."""
    key = state.get("dag_key")
    if not key:
        return
    from condor_rlrep.rundir.plan import plan_inputs, dag_digest

    try:
        current = dag_digest(plan_inputs(settings), os.path.join(context, "cache", "digest.json"))
    except OSError as err:
        notes.append(f"DAG unreadable since PRE ({describe(err)}); outcome kept for PRE's decision")
        return
    if current != key:
        notes.append("DAG file changed between PRE and POST; outcome recorded against PRE's decision")


def _history(context: str, settings: Any, node: str, args: HookArgs, notes: list[str], offset: int) -> Any:
    """The node's cluster rebuilt from the node log (read from PRE's offset
    when known, the whole log when the cluster is not found there)."""
    from condor_rlrep.condor.eventlog import EventLogError, read_events

    path = settings.node_log_path()
    cluster = args.integer("cluster")
    if offset > 0:
        history = _cluster_history(read_events(path, offset=offset), node, cluster, path, None)
        if history is not None:
            return history
    history = _cluster_history(read_events(path), node, cluster, path, notes)
    if history is None:
        raise EventLogError(f"no cluster of node {node} in the node log and no $CLUSTERID", path=path)
    if history.event_count == 0:
        raise EventLogError(f"no events of cluster {history.cluster} (node {node}) in the node log", path=path)
    return history


def _cluster_history(events: list[Any], node: str, cluster: int | None, path: str, notes: list[str] | None) -> Any:
    from condor_rlrep.condor.eventlog import EventLogError, cluster_nodes, rebuild_cluster

    owners = cluster_nodes(events)
    if cluster is None or cluster <= 0:
        mine = [c for c, name in owners.items() if name == node]
        if not mine:
            return None
        cluster = mine[-1]
        if notes is not None:
            notes.append(f"cluster {cluster} taken from the log")
    elif notes is not None and owners.get(cluster, node) != node:
        notes.append(f"cluster {cluster} belongs to node {owners[cluster]} in the log")
    history = rebuild_cluster(events, cluster)
    if history.event_count == 0:
        return None if notes is None else history
    if not history.finished_procs:
        if notes is None:
            return None  # try the whole log before calling it truncated
        raise EventLogError(f"no terminate/abort event of cluster {cluster} in the node log (truncated?)", path=path)
    return history


def _verdict(history: Any, state: dict[str, Any] | None, return_code: int | None, success_flag: str | None) -> tuple[int, str]:
    replicated = state is not None and state.get("mode") == "replicas"
    if replicated:
        if history.succeeded:
            return 0, f"replica {history.winner} of cluster {history.cluster} succeeded"
        unfinished = sorted(set(history.procs) - set(history.finished_procs))
        if unfinished and (return_code is not None or success_flag is not None):
            # DAGMan runs POST once every proc left the queue: the log lacks an end (truncated)
            code, source = fallback_post_code(None, return_code, success_flag)
            return code, f"no end of proc(s) {unfinished} in the node log (truncated?): from {source}"
        if history.first_failure_code is not None:
            return exit_status(history.first_failure_code), f"no replica succeeded; first failure {history.first_failure_code}"
        return fallback_post_code(False, return_code, success_flag)
    if state is None:
        # Unknown attempt: the fail-open rule (a success in the log, else $RETURN).
        code, source = fallback_post_code(history.succeeded, return_code, success_flag)
        return code, f"from {source}"
    if history.first_failure_code is None and history.succeeded:
        return 0, f"user's job (cluster {history.cluster}) succeeded"
    if history.first_failure_code is not None:
        return exit_status(history.first_failure_code), f"user's job failed with {history.first_failure_code}"
    return fallback_post_code(False, return_code, success_flag)


def _bookkeeping(context: str, settings: Any, state: dict[str, Any], history: Any, environ: Mapping[str, str] | None) -> str:
    if state.get("mode") != "replicas":
        return ""
    from condor_rlrep.outcome import evaluate

    decision_id = state.get("decision_id")
    # s_t is when the pool saw the cluster (its submit event), so that PRE,
    # DAGMan's submit cycle and the hooks are not scored against the task;
    # PRE's clock only when the log has no submit event for it.
    submit_time = float(history.submit_time if history.submit_time is not None else state["submit_time"])
    removed = sum(1 for inv in history.invocations if inv.ended_by == "removed")
    if decision_id is None and "phi_prime" not in state:
        # no PRE ran (instrument wrote the node's description): no φ′ to judge the task by, and nothing to record
        return (f"s_t={submit_time:.0f} replicas={int(state['replicas'])} evictions={history.evictions} "
                f"removed={removed} winner={history.winner} (fixed policy, no PRE: nothing to record)")
    outcome = evaluate(
        history.invocations,
        submit_time=submit_time,
        phi_prime=float(state["phi_prime"]),
        estimate=float(state["estimate"]),
        replicas=int(state["replicas"]),
        power=settings.power_table(),
    )
    summary = (
        f"s_t={submit_time:.0f} replicas={int(state['replicas'])} evictions={history.evictions} removed={removed} "
        f"success={outcome.success} completed={outcome.completed} reward={outcome.reward:.4g} "
        f"sigma={outcome.sigma:.4g} good={outcome.good_energy_j:.4g}J bad={outcome.bad_energy_j:.4g}J"
    )
    if decision_id is None and state.get("model"):
        return f"{summary}; {_record_model(context, settings, state, history)}"
    if decision_id is None:
        return summary + " (fixed policy: nothing to record)"
    from dataclasses import asdict

    from condor_rlrep.store.location import HOOK_CONNECT_TIMEOUT, open_store
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.hooks.pre import DEFAULT_STORE_TIMEOUT

    store_path = str(settings.store or "")
    try:
        timeout = float(getattr(settings, "store_timeout", DEFAULT_STORE_TIMEOUT))
        with open_store(settings.store_path(), busy_timeout=timeout, connect_timeout=HOOK_CONNECT_TIMEOUT,
                        broker=broker_socket(context)) as store:
            failure_reward = store.config.failure_reward
            if failure_reward != outcome.reward and not outcome.success:
                outcome = evaluate(
                    history.invocations, submit_time=submit_time,
                    phi_prime=float(state["phi_prime"]), estimate=float(state["estimate"]),
                    replicas=int(state["replicas"]), power=settings.power_table(), failure_reward=failure_reward,
                )
            identity = decision_identity(settings, state)
            held = store.decision(int(decision_id)).context
            if any(held.get(key) != value for key, value in identity.items()):
                # the store was replaced since PRE (ids restart): that id is another decision
                return (f"{summary}; outcome NOT recorded: decision {decision_id} of {store_path} is not this "
                        f"node's (it is {held.get('node')!r} of run {held.get('run')!r}; store replaced since PRE?)")
            fresh = store.record_outcome(int(decision_id), outcome)
            flushed, kept = flush_spool(context, store, store_path)
    except Exception as err:
        _spool(context, int(decision_id), store_path, decision_identity(settings, state), asdict(outcome))
        return f"{summary}; decision {decision_id} spooled ({describe(err)})"
    note = "recorded" if fresh else "already recorded"
    if flushed:
        note += f", {flushed} spooled outcome(s)/model update(s) flushed"
    if kept:
        note += f"; {'; '.join(kept[:3])}"
    return f"{summary}; decision {decision_id} {note}"


def _record_model(context: str, settings: Any, state: dict[str, Any], history: Any) -> str:
    """model:R: the attempt's runs into the store's survival model, or into
    the spool when the store cannot take them (never raises)."""
    from condor_rlrep.condor.joblog import keyboard_idle_from
    from condor_rlrep.survival import live as model_path

    try:
        key = model_path.record_key(str(settings.dag), state.get("run_id"), str(state.get("node")),
                                    state.get("retry"), history.cluster)
        model = state["model"]
        idle, note = None, ""
        if model.get("job_log"):
            try:
                idle = keyboard_idle_from(str(model["job_log"]), int(model.get("job_log_offset") or 0),
                                                     history.cluster)
            except Exception as err:  # the runs still count, their idle bucket unknown
                note = f" (job log unreadable: {describe(err)})"
        runs = model_path.runs_of(history.invocations, {**history.keyboard_idle, **(idle or {})})
    except Exception as err:
        return f"model NOT updated: {describe(err)}"
    if not runs:
        return "model: no run to learn from" + note
    from condor_rlrep.store.location import HOOK_CONNECT_TIMEOUT, open_store
    from condor_rlrep.errors import StaleExposureError
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.hooks.pre import DEFAULT_STORE_TIMEOUT

    store_spec = str(settings.store or "")
    try:
        timeout = float(getattr(settings, "store_timeout", DEFAULT_STORE_TIMEOUT))
        with open_store(settings.store_path(), busy_timeout=timeout, connect_timeout=HOOK_CONNECT_TIMEOUT,
                        broker=broker_socket(context)) as store:
            done = model_path.record_runs(store, key, runs) + note
            flushed, kept = flush_spool(context, store, store_spec)
    except StaleExposureError as err:
        # the store will refuse these runs whenever they come: a spool entry would only wait forever
        return f"model NOT updated: {describe(err)}"
    except Exception as err:
        try:
            name = _spool_model(context, store_spec, key, runs, describe(err))
        except Exception as spool_err:
            return f"model NOT updated: {describe(err)}; NOT spooled either: {describe(spool_err)}"
        return f"model update spooled in spool/{name} ({describe(err)}){note}"
    if flushed:
        done += f"; {flushed} spooled update(s) flushed"
    if kept:
        done += f"; {'; '.join(kept[:3])}"
    return done


def _spool_model(context: str, store_spec: str, key: str, runs: list[dict[str, Any]], why: str) -> str:
    """Keep a model update the store could not take; the entry's file name.

    The entry holds the runs (start, end, how each ended, its machine's
    ``KeyboardIdle``), not their cells: a cell's hour of the week depends
    on the store's time zone, which a POST that cannot reach the store
    cannot read. The flush bins them with the config of the store it
    writes to, exactly as a direct record would have, so that every cell
    of a store is binned one way (a store's config changes only with a
    reset, which empties the model too). The entry belongs to ``store_spec``
    only; ``key`` makes a second flush of it a no-op in that store.
    """
    import hashlib

    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.rundir.runstate import PRIVATE

    directory = os.path.join(context, "spool")
    os.makedirs(directory, exist_ok=True)
    # one file per node attempt: a POST rerun while the store is still away rewrites the same entry
    name = f"model-{hashlib.sha256(key.encode()).hexdigest()[:32]}.json"
    document = {"kind": MODEL_ENTRY, "store": store_spec, "key": key, "runs": runs, "spooled_at": time.time(),
                "why": why}
    write_atomic(os.path.join(directory, name), json.dumps(document, sort_keys=True), mode=PRIVATE, fixed_tmp=True)
    return name


def decision_identity(settings: Any, state: dict[str, Any]) -> dict[str, Any]:
    """What PRE told the store about the decision (its ``context``): a spooled
    outcome is flushed only into a store whose decision of that id says the
    same, so that a store replaced since (ids restart) is never given it."""
    return {"dag": settings.dag, "node": state.get("node"), "run": state.get("run_id"), "retry": state.get("retry")}


def _spool(context: str, decision_id: int, store_path: str, identity: dict[str, Any], outcome: dict[str, Any]) -> None:
    from condor_rlrep.atomic import write_atomic
    from condor_rlrep.rundir.runstate import PRIVATE

    directory = os.path.join(context, "spool")
    os.makedirs(directory, exist_ok=True)
    document = {"decision_id": decision_id, "store": store_path, "identity": identity, "outcome": outcome,
                "spooled_at": time.time()}
    write_atomic(os.path.join(directory, f"{decision_id}.json"), json.dumps(document, sort_keys=True),
                 mode=PRIVATE, fixed_tmp=True)


def flush_spool(context: str, store: Any, store_spec: str) -> tuple[int, list[str]]:
    """Record spooled outcomes and model updates that belong to ``store``
    (opened from ``store_spec``); returns how many were flushed and why
    others stayed. Never raises.

    An entry belongs to the store it was spooled for (same spec). An
    outcome belongs, moreover, to the decision that store holds under its
    id (same DAG, node, run and attempt); a model update to no decision (its
    key names the node attempt, and makes a repeat a no-op). An entry the
    store already holds (identically) is just removed; one it refuses, or
    that belongs elsewhere, or that cannot be read, stays in the spool for
    a human to look at — it never closes an unrelated decision.
    """
    directory = os.path.join(context, "spool")
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(".json") and not n.startswith("."))
    except FileNotFoundError:
        return 0, []
    except OSError as err:
        return 0, [f"spool unreadable ({describe(err)})"]
    done = 0
    kept: list[str] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
            if not isinstance(document, dict):
                raise ValueError("not a JSON object")
            if document.get("kind") == MODEL_ENTRY:
                left = _flush_model(store, store_spec, path, document)
            else:  # an outcome (entries written before model updates were spooled have no kind)
                left = _flush_outcome(store, store_spec, path, document)
        except Exception as err:
            kept.append(f"spool/{name} not flushed ({describe(err)})")
            continue
        if left is not None:
            kept.append(left)
            continue
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue  # a concurrent POST flushed it too (the store counted it once) and removed it first
        except OSError as err:
            kept.append(f"spool/{name} recorded but not removed ({describe(err)}); a later flush is a no-op")
            continue
        done += 1
    return done, kept


def _flush_outcome(store: Any, store_spec: str, path: str, document: dict[str, Any]) -> str | None:
    """Record one spooled outcome; None when done, else why it stays."""
    name = os.path.basename(path)
    decision_id, outcome = int(document["decision_id"]), document["outcome"]
    identity = document.get("identity")
    if str(document.get("store")) != str(store_spec) or not isinstance(identity, dict):
        return f"spool/{name} is for store {document.get('store')!r}: left there"
    record = store.decision(decision_id)
    if any(record.context.get(key) != value for key, value in identity.items()):
        return f"spool/{name}: decision {decision_id} of this store is another node's or run's: left there"
    store.record(decision_id, float(outcome["reward"]), outcome)
    return None


def _flush_model(store: Any, store_spec: str, path: str, document: dict[str, Any]) -> str | None:
    """Record one spooled model update; None when done (or already counted), else why it stays."""
    from condor_rlrep.errors import InputError
    from condor_rlrep.survival.live import check_runs, record_runs

    if str(document.get("store")) != str(store_spec):
        return f"spool/{os.path.basename(path)} is for store {document.get('store')!r}: left there"
    key = document.get("key")
    if not isinstance(key, str) or not key:
        raise InputError(f"key: must be a non-empty string; got {key!r}", path=path)
    record_runs(store, key, check_runs(document.get("runs"), path))
    return None


def close_undecided(settings: Any, node: str, state: dict[str, Any]) -> str | None:
    """Close what a PRE killed while deciding may have decided: a pending
    decision of this DAG, node, run and attempt (the store is scanned: this
    only happens after a killed PRE). Its replicas never ran, so its reward
    is its estimate and nothing is learnt."""
    if not settings.store:
        return None
    from condor_rlrep.store.location import HOOK_CONNECT_TIMEOUT, open_store

    identity = {"dag": settings.dag, "node": node, "run": state.get("run_id"), "retry": state.get("retry")}
    closed = []
    with open_store(settings.store_path(), busy_timeout=float(getattr(settings, "store_timeout", 10.0)),
                    connect_timeout=HOOK_CONNECT_TIMEOUT) as store:
        for record in store.decisions():
            if record.pending and all(record.context.get(k) == v for k, v in identity.items()):
                store.record(record.decision_id, record.estimate,
                             {"closed": f"not run: PRE of attempt {state.get('retry')} was killed after deciding"})
                closed.append(str(record.decision_id))
    if not closed:
        return None
    return f"decision(s) {', '.join(closed)} of attempt {state.get('retry')} closed unrun (its PRE was killed)"


def close_orphaned(context: str, settings: Any, node: str, state: dict[str, Any], *,
                   why: str = "removed with the DAG; no POST ran", label: str = "removed") -> str | None:
    """Close a decision that DAGMan left pending: the DAG was removed
    (``condor_rm`` of the DAGMan job), so DAGMan removed the node's jobs and
    ran no POST. Returns what was done, or None when there was nothing to close.

    The outcome is judged from the node log like any other (the removed
    replicas' run time is charged as bad energy; the task did not complete),
    but the reward recorded is the agent's own estimate at decision time, so
    the estimates stay as they were: the user cut the task short, the
    replica count did not fail. When the node log no longer holds the
    cluster (DAGMan starts a new one for the rescue), nothing can be charged.
    """
    decision_id = state.get("decision_id")
    if state.get("mode") != "replicas" or decision_id is None or not settings.store:
        return None
    from dataclasses import asdict

    from condor_rlrep.store.location import HOOK_CONNECT_TIMEOUT, open_store
    from condor_rlrep.rundir.layout import broker_socket
    from condor_rlrep.condor.eventlog import ClusterHistory, cluster_nodes, read_events, rebuild_cluster
    from condor_rlrep.outcome import evaluate

    path = settings.node_log_path()
    offset = int(state.get("log_offset", 0) or 0)
    try:
        size = os.path.getsize(path)
    except OSError:
        size = -1
    events = read_events(path, offset=offset) if size >= offset else []
    # the node's last cluster after PRE's offset; none if DAGMan was removed before submitting it
    mine = [c for c, name in cluster_nodes(events).items() if name == node]
    history = rebuild_cluster(events, mine[-1]) if mine else ClusterHistory(cluster=0)
    submit_time = float(history.submit_time if history.submit_time is not None else state["submit_time"])
    outcome = evaluate(history.invocations, submit_time=submit_time, phi_prime=float(state["phi_prime"]),
                       estimate=float(state["estimate"]), replicas=int(state["replicas"]),
                       power=settings.power_table())
    timeout = float(getattr(settings, "store_timeout", 10.0))
    with open_store(settings.store_path(), busy_timeout=timeout, connect_timeout=HOOK_CONNECT_TIMEOUT,
                    broker=broker_socket(context)) as store:
        record = store.decision(int(decision_id))
        if not record.pending:
            return None
        document = {**asdict(outcome), "reward": record.estimate, "closed": why}
        store.record(int(decision_id), record.estimate, document)
    _journal(context, "CLOSE", node, None, state, history if mine else None,
             {"retry": state.get("retry"), "dagid": state.get("dagid"), "why": "removed with the DAG; no POST ran",
              "bad_energy_j": outcome.bad_energy_j})
    where = f"cluster {history.cluster}" if mine else "no cluster in the node log"
    return (f"decision {decision_id} of DAGMan {state.get('dagid')} closed as {label} ({where}; "
            f"bad={outcome.bad_energy_j:.4g}J charged; reward = its estimate {record.estimate:.4g})")
