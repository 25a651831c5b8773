"""Every attempt of every node, from the journal, the node state and the node log.

An *attempt* is one execution of a node by DAGMan: one PRE decision (or
none, when PRE failed open or the node is not ours), one cluster of
replicas, one POST verdict. The records of an attempt are spread out:

* the journal (:mod:`.journal`) has PRE's decision and POST's verdict with
  the replicas — for every attempt since the context was made, including
  those whose node log DAGMan has since truncated (a rescue, a resubmit);
* ``state/<node>.json`` has the current attempt's decision (runs
  instrumented before the journal existed have only this);
* the node log has the clusters of the current DAGMan, read by
  :class:`~.nodelog.NodeLog` (the freshest view of a running attempt).

``status`` needs of a cluster only its :class:`~.clusters.ClusterSummary`;
a cluster resumed from the status checkpoint has nothing more, and its
attempt's ``history`` is None (``report`` never resumes: it has them all).

:func:`assemble` joins them: POST records name their cluster; a cluster no
record names belongs to the node's latest attempt of the same DAGMan that
has none yet and began before it was submitted; a cluster nobody decided
(PRE failed open with no journal, a node we pass through) is an
``unmodified`` attempt of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.condor.eventlog import ClusterHistory
from condor_rlrep.outcome import Invocation, TaskOutcome
from condor_rlrep.runreport.clusters import ClusterSummary, summarize

__all__ = ["Attempt", "assemble", "mark_fixed", "history_from_journal", "SUBMIT_SLACK"]

SUBMIT_SLACK = 2.0
"""Seconds a submit event may precede PRE's clock: event times are whole seconds."""


@dataclass
class Attempt:
    node: str
    run_id: str | None = None
    dagid: str | None = None
    retry: int | None = None
    pre_time: float | None = None
    workflow_start: float | None = None
    mode: str = "unmodified"
    """``replicas`` (PRE decided), ``passthrough`` (the user's multi-proc job), ``unmodified`` (no decision)."""
    chosen: str | None = None
    """How the replica count was chosen: greedy, explore, fixed, passthrough, fail-open, unmodified."""
    decision_id: int | None = None
    replicas: int = 1
    phi_prime: float | None = None
    estimate: float | None = None
    decided_at: float | None = None
    fail_open: str | None = None
    cluster: int | None = None
    history: ClusterHistory | None = None
    history_source: str | None = None
    """``node log`` or ``journal`` (DAGMan truncated the log since)."""
    cluster_summary: ClusterSummary | None = field(default=None, repr=False)
    """Set for a cluster of the node log; see :attr:`summary`."""
    abort_reasons: dict[int, str] = field(default_factory=dict)
    post_code: int | None = None
    post_time: float | None = None
    closed: str | None = None
    """``POST`` (its verdict), ``removed with the DAG`` (the reaper or a rescue PRE closed it)."""
    accepted: bool | None = None
    """The user's POST's verdict on the node, which the reward follows (None: no user POST)."""
    sources: set[str] = field(default_factory=set)

    @property
    def decided(self) -> bool:
        return self.mode == "replicas"

    @property
    def summary(self) -> ClusterSummary | None:
        """What ``status`` shows of the attempt's cluster; None: no cluster yet."""
        if self.cluster_summary is None and self.history is not None:
            self.cluster_summary = summarize(self.history)
        return self.cluster_summary

    @property
    def submit_time(self) -> float | None:
        summary = self.summary
        return summary.submit_time if summary is not None else None

    @property
    def invocations(self) -> list[Invocation]:
        return list(self.history.invocations) if self.history is not None else []

    def end_time(self) -> float | None:
        """When the attempt ended for DAGMan: its POST, else its last replica."""
        if self.post_time is not None:
            return self.post_time
        ends = [inv.end for inv in self.invocations if inv.ended_by != "running"]
        return max(ends) if ends and self.history is not None and self.history.finished_procs >= self.history.procs else None

    def outcome(self, power: Any, failure_reward: float) -> TaskOutcome | None:
        """The project's :func:`~condor_rlrep.outcome.evaluate` of this attempt,
        as POST judged it (s_t = the submit event); None before any replica ran
        or without a decision (no φ′, no task deadline)."""
        from condor_rlrep.outcome import evaluate

        if self.history is None or not self.decided or self.phi_prime is None or self.estimate is None:
            return None
        submit = self.history.submit_time if self.history.submit_time is not None else self.decided_at
        if submit is None:
            return None
        return evaluate(self.history.invocations, submit_time=float(submit), phi_prime=float(self.phi_prime),
                        estimate=float(self.estimate), replicas=int(self.replicas), power=power,
                        failure_reward=failure_reward, accepted=self.accepted)


class _LazyHistory:
    """An attempt's history not rebuilt yet: its cluster's :class:`~.clusters.ClusterEvents`."""

    __slots__ = ("entry",)

    def __init__(self, entry: Any):
        self.entry = entry


def _get_history(attempt: Attempt) -> ClusterHistory | None:
    value = attempt.__dict__.get("_history_value")
    if type(value) is _LazyHistory:
        value = attempt.__dict__["_history_value"] = value.entry.history()
    return value


def _set_history(attempt: Attempt, value: Any) -> None:
    attempt.__dict__["_history_value"] = value


# ``history`` stays a dataclass field (constructor, repr, eq) but is read
# through this property, so a node log's cluster is rebuilt only when asked for
Attempt.history = property(_get_history, _set_history,  # type: ignore[assignment]
                           doc="What the cluster's replicas did; None: no cluster, or its events were not kept.")


def _attempt_from_decision(record: Mapping[str, Any], source: str) -> Attempt:
    chosen = record.get("chosen")
    mode = str(record.get("mode") or ("replicas" if record.get("phi_prime") is not None else "unmodified"))
    if record.get("fail_open"):
        mode, chosen = "unmodified", "fail-open"
    elif chosen is None:
        chosen = "passthrough" if mode == "passthrough" else None
    return Attempt(
        node=str(record["node"]), run_id=_text(record.get("run_id")), dagid=_text(record.get("dagid")),
        retry=_int(record.get("retry")), pre_time=_float(record.get("pre_time", record.get("at"))),
        workflow_start=_float(record.get("workflow_start")), mode=mode, chosen=chosen,
        decision_id=_int(record.get("decision_id")) if mode == "replicas" else None,
        replicas=int(record.get("replicas") or 1), phi_prime=_float(record.get("phi_prime")),
        estimate=_float(record.get("estimate")), decided_at=_float(record.get("decided_at")),
        fail_open=_text(record.get("fail_open")), sources={source},
    )


def history_from_journal(record: Mapping[str, Any]) -> ClusterHistory | None:
    """The :class:`ClusterHistory` a POST/CLOSE record carries."""
    if record.get("cluster") is None or record.get("invocations") is None:
        return None
    history = ClusterHistory(cluster=int(record["cluster"]), node=str(record["node"]))
    history.procs = {int(p) for p in record.get("procs") or ()}
    history.submit_time = _float(record.get("submit_time"))
    history.evictions = int(record.get("evictions") or 0)
    history.holds = int(record.get("holds") or 0)
    for replica, host, slot, start, end, ended_by, code in record["invocations"]:
        inv = Invocation(int(replica), host, float(start), float(end), ended_by, None if code is None else int(code))
        history.invocations.append(inv)
        history.procs.add(inv.replica)
        if slot:
            history.slots[(inv.replica, inv.start)] = str(slot)
        if ended_by in ("success", "failure") and code is not None:
            history.exit_codes[inv.replica] = int(code)
        elif ended_by == "removed":
            history.aborted.add(inv.replica)
    for proc in record.get("aborted") or ():  # removed while idle or held: no invocation shows it
        history.aborted.add(int(proc))
        history.procs.add(int(proc))
    return history


def assemble(
    journal: Iterable[Mapping[str, Any]],
    states: Mapping[str, Mapping[str, Any]],
    log_clusters: Mapping[str, list[Any]],
    *,
    current_dagid: str | None,
    current_run: str | None,
) -> dict[str, list[Attempt]]:
    """Node → its attempts in order (see the module doc).

    ``log_clusters``: node → :class:`~.clusters.ClusterEvents` of the node log.
    """
    attempts: dict[str, list[Attempt]] = {}
    by_cluster: dict[int, Attempt] = {}
    in_log = {entry.cluster for clusters in log_clusters.values() for entry in clusters}
    for record in journal:
        node = record["node"]
        hook = record.get("hook")
        if hook == "PRE":
            attempts.setdefault(node, []).append(_attempt_from_decision(record, "journal"))
        elif hook in ("POST", "CLOSE"):
            attempt = _open_attempt(attempts.get(node, ()), record)
            if attempt is None:
                attempt = _attempt_from_decision({**record, "mode": "unmodified"}, "journal")
                attempt.chosen = "unmodified"
                attempts.setdefault(node, []).append(attempt)
            attempt.closed = "POST" if hook == "POST" else "removed with the DAG"
            attempt.sources.add("journal")
            if hook == "POST":
                attempt.post_code = _int(record.get("exit"))
                attempt.post_time = _float(record.get("at"))
                accepted = record.get("accepted")
                attempt.accepted = accepted if isinstance(accepted, bool) else None
            cluster = record.get("cluster")
            if cluster in in_log:  # the node log's own account replaces the journal's below
                by_cluster[int(cluster)] = attempt
                continue
            history = history_from_journal(record)
            if history is not None:
                attempt.history, attempt.history_source, attempt.cluster = history, "journal", history.cluster
                by_cluster[history.cluster] = attempt
    for node, state in states.items():
        known = attempts.get(node, [])
        if not any(_same_decision(a, state) for a in known):
            attempts.setdefault(node, []).append(_attempt_from_decision(state, "node state"))
    for node, clusters in log_clusters.items():
        for entry in clusters:
            attempt = by_cluster.get(entry.cluster)
            if attempt is None:
                attempt = _claim(attempts.get(node, []), entry, current_dagid)
            if attempt is None:
                attempt = Attempt(node, run_id=current_run, dagid=current_dagid, chosen="unmodified")
                attempts.setdefault(node, []).append(attempt)
            attempt.cluster = entry.cluster
            # rebuilt when first read (``report``; ``status`` shows the summary only)
            attempt.history = None if entry.compacted else _LazyHistory(entry)  # type: ignore[assignment]
            attempt.history_source, attempt.cluster_summary = "node log", entry.summary()
            attempt.abort_reasons = dict(entry.abort_reasons)
            attempt.sources.add("node log")
            by_cluster[entry.cluster] = attempt
            if entry.post_code is not None:
                attempt.post_code, attempt.post_time = entry.post_code, entry.post_time
                attempt.closed = attempt.closed or "POST"
    for node, items in attempts.items():
        items.sort(key=_order)
    return attempts


def mark_fixed(attempts: Mapping[str, list[Attempt]], fixed: Mapping[str, int], without_post: set[str]) -> None:
    """Attempts of the nodes a fixed policy runs without PRE (``fixed``: node
    → K; instrument wrote their descriptions): K replicas, chosen ``fixed``.
    A node with no POST script at all ends, for DAGMan, when its job does,
    with the job's result (one replica: DAGMan's own verdict)."""
    for node, items in attempts.items():
        count = fixed.get(node)
        for attempt in items:
            if count is not None and attempt.chosen == "unmodified" and attempt.pre_time is None and not attempt.fail_open:
                attempt.mode, attempt.chosen, attempt.replicas = "replicas", "fixed", int(count)
            if node not in without_post or attempt.post_code is not None:
                continue
            history = attempt.history  # rebuilt here (see assemble): only a node that runs no POST needs it
            if history is None or not history.procs or not history.finished_procs >= history.procs:
                continue
            failure = history.first_failure_code
            attempt.post_code = 0 if history.succeeded else (failure if failure is not None and 0 < failure <= 255 else 1)
            ends = [inv.end for inv in history.invocations if inv.ended_by != "running"]
            attempt.post_time = max(ends) if ends else None
            attempt.closed = attempt.closed or "job"


def _order(attempt: Attempt) -> tuple[float, int]:
    when = attempt.pre_time if attempt.pre_time is not None else (attempt.submit_time or 0.0)
    return (when, attempt.cluster or 0)


def _open_attempt(candidates: Iterable[Attempt], record: Mapping[str, Any]) -> Attempt | None:
    dagid, retry, pre_time = _text(record.get("dagid")), _int(record.get("retry")), _float(record.get("pre_time"))
    for attempt in reversed(list(candidates)):
        if attempt.closed is not None:
            continue
        if pre_time is not None and attempt.pre_time is not None and abs(attempt.pre_time - pre_time) > 1e-3:
            continue
        if attempt.dagid == dagid and attempt.retry == retry:
            return attempt
    return None


def _same_decision(attempt: Attempt, state: Mapping[str, Any]) -> bool:
    pre_time = _float(state.get("pre_time"))
    return (attempt.dagid == _text(state.get("dagid")) and attempt.retry == _int(state.get("retry"))
            and (pre_time is None or attempt.pre_time is None or abs(attempt.pre_time - pre_time) < 1e-3))


def _claim(candidates: list[Attempt], entry: Any, current_dagid: str | None) -> Attempt | None:
    """The node's latest attempt still without a cluster that this cluster can belong to."""
    submitted = entry.summary().submit_time
    for attempt in reversed(candidates):
        if attempt.cluster is not None:
            continue
        if current_dagid is not None and attempt.dagid is not None and attempt.dagid != current_dagid:
            continue
        if submitted is not None and attempt.pre_time is not None and submitted + SUBMIT_SLACK < attempt.pre_time:
            continue
        return attempt
    return None


def _int(value: Any) -> int | None:
    try:
        return None if value is None or value == "" else int(value)
    except (TypeError, ValueError):
        return None


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)
