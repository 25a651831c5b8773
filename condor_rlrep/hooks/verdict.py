"""POST's verdict on a node: what PRE decided for this attempt, what the
node log says its replicas did, and the exit code DAGMan gets from that.

* *The attempt*: PRE's node state (``state/<node>.json``) when it is this
  attempt's, else the state instrument wrote for a fixed policy's node that
  runs without PRE (``nodes/<node>.fixed.json``), else none: the node is
  then judged as if it ran unchanged.
* *The replicas*: the node's cluster (``$CLUSTERID``, else the node's last
  cluster in the log), rebuilt from DAGMan's node log with the real
  ``htcondor2.JobEventLog`` (:mod:`condor_rlrep.condor.eventlog`), read from
  PRE's offset when it has one.
* *The verdict* (never from ``$RETURN`` when the log has the answer): a
  replicated node succeeds iff some replica terminated with exit 0, else it
  fails with the first failing replica's code (DAGMan's ``$RETURN`` rule);
  a node run unchanged (multi-proc description, PRE failed open) by DAGMan's
  own rule, success iff no proc failed or was removed. Where the log cannot
  tell, the fail-open rule of :mod:`.failopen`.
"""

from __future__ import annotations

import os
from typing import Any

from condor_rlrep.hooks.argv import HookArgs
from condor_rlrep.hooks.chain import exit_status
from condor_rlrep.hooks.failopen import describe, fallback_post_code

__all__ = ["attempt_state", "single_unrecorded", "note_dag_change", "node_history", "verdict"]


def attempt_state(context: str, node: str, args: HookArgs, notes: list[str]) -> dict[str, Any] | None:
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


def single_unrecorded(state: dict[str, Any] | None) -> bool:
    """One replica and nothing to record (a fixed policy): DAGMan's
    ``$RETURN`` is the node's result, and the log need not be read."""
    return bool(state and state.get("mode") == "replicas" and int(state.get("replicas", 1)) == 1
                and state.get("decision_id") is None and not state.get("model") and state.get("chosen") != "forced")


def note_dag_change(context: str, settings: Any, state: dict[str, Any], notes: list[str]) -> None:
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


def node_history(settings: Any, node: str, args: HookArgs, notes: list[str], offset: int, mark: Any = None) -> Any:
    """The node's cluster rebuilt from the node log (read from PRE's offset
    when known, else from ``$CLUSTERID``'s first event; the whole log when
    the cluster is not found there); raises
    when the log is not the one PRE ``mark``-ed (:mod:`.logmark`)."""
    from condor_rlrep.condor.eventlog import EventLogError, read_events
    from condor_rlrep.condor.logseek import cluster_start
    from condor_rlrep.hooks.logmark import check_mark

    path = settings.node_log_path()
    check_mark(path, offset, mark)
    cluster = args.integer("cluster")
    if offset <= 0 and cluster is not None and cluster > 0:
        offset = cluster_start(path, cluster)  # no PRE (fixed:K): skip the other nodes' events
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


def verdict(history: Any, state: dict[str, Any] | None, return_code: int | None,
            success_flag: str | None) -> tuple[int, str]:
    """The node's exit status, and why."""
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
