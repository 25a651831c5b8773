"""Closing decisions that no POST will record.

A decision left pending in the store would stay pending for ever. Four
ways a decision loses its POST, each closed by the hook that sees it first:

* PRE fails after the agent chose (:func:`close_unrun`): the replicas never
  run;
* PRE is killed while deciding, between the store's commit and the node
  state naming the decision (:func:`close_undecided`, from the node's next
  PRE, which finds the state ``deciding``);
* the DAG is removed (``condor_rm`` of DAGMan): DAGMan removes the node's
  jobs and runs no POST (:func:`close_orphaned`, from the reaper as it is
  stopped, or from the rescue's PRE);
* a hook of an earlier attempt was killed before the outcome was recorded
  (:func:`close_orphaned`, from the next attempt's PRE).

A decision closed so records the agent's own estimate at decision time as
its reward, so that nothing is learnt from it: the replica count did not
fail, the run was cut short. What the removed replicas ran is still charged
(bad energy) where the node log holds them.
"""

from __future__ import annotations

import os
from typing import Any

from condor_rlrep.hooks.failopen import describe
from condor_rlrep.hooks.hookstore import open_hook_store

__all__ = ["close_unrun", "close_previous_attempt", "close_undecided", "close_orphaned"]


def close_unrun(context: str | None, settings: Any, decision_id: int, estimate: float, why: str) -> str:
    """Close a decision whose replicas will not run (PRE failed after the
    agent chose): its reward is the agent's own estimate, so nothing is
    learnt from it, and no decision is left pending for ever."""
    try:
        with open_hook_store(context, settings) as store:
            store.record(decision_id, estimate, {"closed": f"not run: PRE failed open ({why})"})
    except Exception as err:
        return f"decision {decision_id} left pending ({describe(err)})"
    return f"decision {decision_id} closed unrun (reward = its estimate)"


def close_previous_attempt(context: str, settings: Any, node: str, dagid: str | None, retry: int | None) -> str | None:
    """A decision of this node's previous attempt that is still pending is
    closed before PRE replaces the node's state: an earlier DAGMan was
    removed mid-run (this is its rescue), or a hook of that attempt was
    killed before its outcome was recorded. Problems are reported, never fatal."""
    from condor_rlrep.rundir.layout import node_state_path
    from condor_rlrep.rundir.runstate import read_node_state

    try:
        old = read_node_state(node_state_path(context, node))
    except (OSError, ValueError):
        return None
    if old.get("dagid") == dagid and old.get("retry") == retry:
        return None  # this very attempt (DEFER): not an orphan
    if old.get("mode") == "deciding":
        try:
            return close_undecided(settings, node, old)
        except Exception as err:
            return f"could not close what attempt {old.get('retry')} decided before PRE was killed: {describe(err)}"
    if old.get("decision_id") is None:
        return None
    try:
        if old.get("dagid") == dagid:  # same DAGMan, an earlier attempt: its POST never recorded it
            return close_orphaned(context, settings, node, old, label=f"unrecorded (attempt {old.get('retry')})",
                                  why="no POST recorded it (a hook of the attempt was killed)")
        return close_orphaned(context, settings, node, old)
    except Exception as err:
        return f"could not close decision {old.get('decision_id')} left pending by DAGMan {old.get('dagid')}: {describe(err)}"


def close_undecided(settings: Any, node: str, state: dict[str, Any]) -> str | None:
    """Close what a PRE killed while deciding may have decided: a pending
    decision of this DAG, node, run and attempt (the store is scanned: this
    only happens after a killed PRE). Its replicas never ran, so its reward
    is its estimate and nothing is learnt."""
    if not settings.store:
        return None
    identity = {"dag": settings.dag, "node": node, "run": state.get("run_id"), "retry": state.get("retry")}
    closed = []
    # the broker serves no scan of the decisions: straight to the store
    with open_hook_store(None, settings, broker=False) as store:
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

    from condor_rlrep.condor.eventlog import ClusterHistory, clusters_of_node, read_events, rebuild_cluster
    from condor_rlrep.outcome import evaluate
    from condor_rlrep.rundir.journal import append_verdict

    path = settings.node_log_path()
    offset = int(state.get("log_offset", 0) or 0)
    try:
        size = os.path.getsize(path)
    except OSError:
        size = -1
    events = read_events(path, offset=offset) if size >= offset else []
    # the node's last cluster after PRE's offset; none if DAGMan was removed before submitting it
    mine = clusters_of_node(events, node)
    history = rebuild_cluster(events, mine[-1]) if mine else ClusterHistory(cluster=0)
    submit_time = float(history.submit_time if history.submit_time is not None else state["submit_time"])
    outcome = evaluate(history.invocations, submit_time=submit_time, phi_prime=float(state["phi_prime"]),
                       estimate=float(state["estimate"]), replicas=int(state["replicas"]),
                       power=settings.power_table())
    with open_hook_store(context, settings) as store:
        record = store.decision(int(decision_id))
        if not record.pending:
            return None
        document = {**asdict(outcome), "reward": record.estimate, "closed": why}
        store.record(int(decision_id), record.estimate, document)
    append_verdict(context, "CLOSE", node,
                   {"retry": state.get("retry"), "dagid": state.get("dagid"), "why": "removed with the DAG; no POST ran",
                    "bad_energy_j": outcome.bad_energy_j},
                   state, history if mine else None)
    where = f"cluster {history.cluster}" if mine else "no cluster in the node log"
    return (f"decision {decision_id} of DAGMan {state.get('dagid')} closed as {label} ({where}; "
            f"bad={outcome.bad_energy_j:.4g}J charged; reward = its estimate {record.estimate:.4g})")
