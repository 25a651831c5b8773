"""What the node log says of each job cluster and NOOP node, in the form
``status`` keeps and ``report`` rebuilds.

A cluster's events are reduced to compact records ``(type, proc, time,
value)`` (:class:`ClusterEvents`): the incremental reader
(:mod:`.nodelog`) appends them, the status checkpoint saves them, and a
cluster's :class:`~condor_rlrep.condor.eventlog.ClusterHistory` is rebuilt
from them by the project's :func:`~condor_rlrep.condor.eventlog.rebuild_cluster`
through light stand-ins of the events (:class:`_Event`), so the rules for
evictions, removals and invocations stay in one place. Once a cluster's
POST has ended the checkpoint keeps only its :class:`ClusterSummary` (what
``status`` shows); its history is then gone (:class:`CompactedError`).
NOOP nodes (DAGMan's fake cluster 0) are :class:`NoopNode`, by node name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.condor.eventlog import (
    ABORTED,
    EVICTED,
    EXECUTE,
    HELD,
    REMOVAL_EVICT_CODE,
    SUBMIT,
    TERMINATED,
    ClusterHistory,
    rebuild_cluster,
)

__all__ = ["ClusterEvents", "ClusterSummary", "NoopNode", "CompactedError", "proc_states", "summarize", "opt_float"]


class CompactedError(LookupError):
    """The full history of a cluster the status checkpoint kept only as a summary."""


_RELEASED = 13


def proc_states(events: list[tuple[int, int, float, Any]]) -> dict[int, str]:
    """Proc → ``idle``, ``running``, ``held``, ``success``, ``failure``,
    ``removing`` or ``removed`` after the compact events of one cluster (in log order)."""
    state: dict[int, str] = {}
    for kind, proc, _at, value in events:
        if kind == SUBMIT or kind == _RELEASED:
            state[proc] = "idle"
        elif kind == EXECUTE:
            state[proc] = "running"
        elif kind == EVICTED:
            state[proc] = "removing" if value == REMOVAL_EVICT_CODE else "idle"
        elif kind == HELD:
            state[proc] = "held"
        elif kind == TERMINATED:
            state[proc] = "success" if value == 0 else "failure"
        elif kind == ABORTED:
            state[proc] = "removed"
    return state


@dataclass(frozen=True)
class ClusterSummary:
    """What ``status`` shows of one cluster: enough to keep in place of its history."""

    cluster: int
    node: str | None
    submit_time: float | None
    procs: int
    """Procs the cluster had (``len(history.procs)``)."""
    winner: int | None
    evictions: int
    states: tuple[tuple[int, str], ...]
    """(proc, state) in first-seen order: :func:`proc_states` of its events
    (a cluster of the node log), else how each proc's last invocation ended."""
    last_end: float | None
    """The latest end of an invocation that is not still running."""
    unfinished: int
    """Procs that have not left the queue (neither terminated nor aborted)."""

    def to_state(self) -> tuple[Any, ...]:
        return (self.cluster, self.node, self.submit_time, self.procs, self.winner, self.evictions,
                [list(item) for item in self.states], self.last_end, self.unfinished)

    @classmethod
    def from_state(cls, state: Any) -> "ClusterSummary":
        cluster, node, submit, procs, winner, evictions, states, last_end, unfinished = state
        return cls(int(cluster), None if node is None else str(node), opt_float(submit), int(procs),
                   None if winner is None else int(winner), int(evictions),
                   tuple((int(p), str(s)) for p, s in states), opt_float(last_end), int(unfinished))


def summarize(history: ClusterHistory, states: dict[int, str] | None = None) -> ClusterSummary:
    """The summary of ``history``; ``states``: its procs' :func:`proc_states`
    (default: how each proc's last invocation ended)."""
    if states is None:
        states = {}
        for inv in history.invocations:
            states[inv.replica] = inv.ended_by
        for proc in sorted(history.aborted):
            states[proc] = "removed"  # also one that never ran (removed while idle or held)
    ends = [inv.end for inv in history.invocations if inv.ended_by != "running"]
    return ClusterSummary(history.cluster, history.node, history.submit_time, len(history.procs), history.winner,
                          history.evictions, tuple(states.items()), max(ends) if ends else None,
                          len(history.procs - history.finished_procs))


def opt_float(value: Any) -> float | None:
    """A checkpoint's number, or None."""
    return None if value is None else float(value)


class _Event:
    """What :func:`rebuild_cluster` reads of an event, from a compact record."""

    __slots__ = ("type", "cluster", "proc", "timestamp", "epoch", "_value")

    def __init__(self, kind: int, cluster: int, proc: int, at: float, value: Any):
        self.type = kind
        self.cluster = cluster
        self.proc = proc
        self.timestamp = at
        self.epoch = at
        """What :func:`event_time` returns for it, without reading keys."""
        self._value = value

    def get(self, key: str, default: Any = None) -> Any:
        kind, value = self.type, self._value
        if kind == SUBMIT and key == "DAGNodeName":
            return value
        if kind == EXECUTE and key == "SlotName":
            return value
        if kind == TERMINATED:
            if key == "TerminatedNormally":
                return value >= 0
            if key == "ReturnValue":
                return value
            if key == "TerminatedBySignal":
                return -value if value < 0 else None
        if kind == EVICTED and key == "ReasonCode":
            return value
        return default  # EventTime absent: event_time() takes .timestamp, already converted


@dataclass
class ClusterEvents:
    """One cluster of the node log: its node, compact events and POST result."""

    cluster: int
    node: str | None = None
    events: list[tuple[int, int, float, Any]] | None = field(default_factory=list)
    """None: dropped from the checkpoint once POST ended (the history holds what they said)."""
    post_code: int | None = None
    """Return value of the node's POST script (016 event); None: no POST seen."""
    post_time: float | None = None
    abort_reasons: dict[int, str] = field(default_factory=dict)
    _history: ClusterHistory | None = field(default=None, repr=False)
    _summary: ClusterSummary | None = field(default=None, repr=False)

    @property
    def compacted(self) -> bool:
        """Kept by the checkpoint only as its summary (no events, no history)."""
        return self.events is None

    def summary(self) -> ClusterSummary:
        """What ``status`` shows of the cluster (cached until new events)."""
        if self._summary is None:
            self._summary = summarize(self.history(), proc_states(self.events or []))
        return self._summary

    def history(self) -> ClusterHistory:
        """The cluster rebuilt by :func:`rebuild_cluster` (cached until new events).

        Raises :class:`CompactedError` for a cluster resumed from the status
        checkpoint as a summary only."""
        if self._history is None:
            if self.events is None:
                raise CompactedError(f"cluster {self.cluster}: only its summary was kept")
            cluster = self.cluster
            self._history = rebuild_cluster(
                [_Event(kind, cluster, proc, at, value) for kind, proc, at, value in self.events], cluster
            )
            if self._history.node is None:
                self._history.node = self.node
        return self._history

    @property
    def last_time(self) -> float | None:
        if self.events is None:
            return self.post_time
        return self.events[-1][2] if self.events else None

    def to_state(self) -> tuple[Any, ...]:
        """Plain data for the checkpoint: a cluster whose POST ended as its summary only."""
        finished = self.post_code is not None
        return (self.cluster, self.node, None if finished else [list(e) for e in self.events or ()],
                self.post_code, self.post_time, [[p, r] for p, r in self.abort_reasons.items()],
                self.summary().to_state() if finished else None)

    @classmethod
    def from_state(cls, state: Any) -> "ClusterEvents":
        cluster, node, events, post_code, post_time, reasons, summary = state
        entry = cls(int(cluster), None if node is None else str(node),
                    None if events is None else [(int(k), int(p), float(t), v) for k, p, t, v in events],
                    None if post_code is None else int(post_code), opt_float(post_time),
                    {int(p): str(r) for p, r in reasons})
        if events is None:
            if summary is None:
                raise ValueError(f"cluster {cluster}: neither events nor a summary")
            entry._summary = ClusterSummary.from_state(summary)
        return entry


@dataclass
class NoopNode:
    """A NOOP node: DAGMan writes a fake submit and terminate for it."""

    name: str
    submit_time: float | None = None
    end_time: float | None = None
    exit_code: int | None = None
    post_code: int | None = None
    post_time: float | None = None
