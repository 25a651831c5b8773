"""What the node log says of each job cluster and NOOP node, in the form
``status`` keeps and ``report`` rebuilds.

A cluster's events are reduced to compact records ``(type, proc, time,
value)`` (:class:`ClusterEvents`), kept column-wise (:class:`CompactEvents`:
typed arrays, no Python object per event — a big log has 240,000): the
incremental reader (:mod:`.nodelog`) appends them, the status checkpoint
saves them, and a cluster's
:class:`~condor_rlrep.condor.eventlog.ClusterHistory` is rebuilt from them
by the project's :func:`~condor_rlrep.condor.eventlog.replay_cluster` (what
:func:`~condor_rlrep.condor.eventlog.rebuild_cluster` runs on the events
themselves), so the rules for evictions, removals and invocations stay in
one place. Once a cluster's
POST has ended the checkpoint keeps only its :class:`ClusterSummary` (what
``status`` shows); its history is then gone (:class:`CompactedError`).
NOOP nodes (DAGMan's fake cluster 0) are :class:`NoopNode`, by node name.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.condor.eventlog import (
    ABORTED,
    EVICTED,
    EXECUTABLE_ERROR,
    EXECUTE,
    HELD,
    POST_SCRIPT_TERMINATED,
    RECONNECT_FAILED,
    REASONED_REMOVAL_EVICT_CODE,
    REMOVAL_EVICT_CODE,
    SHADOW_EXCEPTION,
    SUBMIT,
    TERMINATED,
    ClusterHistory,
    replay_cluster,
)

__all__ = ["ClusterEvents", "CompactEvents", "ClusterSummary", "NoopNode", "CompactedError", "proc_states", "summarize", "opt_float"]


class CompactedError(LookupError):
    """The full history of a cluster the status checkpoint kept only as a summary."""


_RELEASED = 13


def proc_states(events: Any) -> dict[int, str]:
    """Proc → ``idle``, ``running``, ``held``, ``success``, ``failure``,
    ``removing`` or ``removed`` after the compact events of one cluster (in
    log order): a :class:`CompactEvents` or ``(type, proc, time, value)`` records."""
    state: dict[int, str] = {}
    for kind, proc, _at, value in events:  # the commonest kinds of a long cluster first
        if kind == EXECUTE:
            state[proc] = "running"
        elif kind == EVICTED:
            state[proc] = "removing" if value == REMOVAL_EVICT_CODE else "idle"
        elif kind == SUBMIT or kind == _RELEASED:
            state[proc] = "idle"
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


class CompactEvents:
    """One cluster's compact records ``(type, proc, time, value)`` in log
    order, column-wise: type, proc and time in typed arrays, the value
    (node name, slot, exit code, eviction reason, or None) in a list.
    Iterating gives the records as tuples."""

    __slots__ = ("kinds", "procs", "times", "values")

    def __init__(self, records: Any = ()) -> None:
        self.kinds = array("h")
        self.procs = array("l")
        self.times = array("d")
        self.values: list[Any] = []
        for kind, proc, at, value in records:
            self.append(kind, proc, at, value)

    def append(self, kind: int, proc: int, at: float, value: Any) -> None:
        self.kinds.append(kind)
        self.procs.append(proc)
        self.times.append(at)
        self.values.append(value)

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[tuple[int, int, float, Any]]:
        return zip(self.kinds, self.procs, self.times, self.values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CompactEvents) and list(self) == list(other)

    def last_time(self) -> float | None:
        return self.times[-1] if self.times else None

    def replay_records(self) -> Iterator[tuple[int, int, float, Any, Any]]:
        """The records :func:`~condor_rlrep.condor.eventlog.replay_cluster`
        reads: an execute's host from its slot, as ``host_of_execute`` takes it
        from ``SlotName`` (the reader kept the slot, or the sinful string's
        alias or address when there was none)."""
        hosts = _HOSTS
        for kind, proc, at, value in zip(self.kinds, self.procs, self.times, self.values):
            if kind == EXECUTE:
                host = hosts.get(value) if value else None
                if host is None and value:
                    slot = str(value)
                    host = hosts[value] = sys.intern(slot.rsplit("@", 1)[1]) if "@" in slot else slot
                yield kind, proc, at, value, host
            elif kind == SUBMIT:
                yield kind, proc, at, (str(value) if value else None), None
            else:
                yield kind, proc, at, value, None

    def to_state(self) -> list[Any]:
        """Plain data for the checkpoint: the four columns as lists."""
        return [list(self.kinds), list(self.procs), list(self.times), list(self.values)]

    @classmethod
    def from_state(cls, state: Any) -> "CompactEvents":
        """What :meth:`to_state` gave; ValueError for anything else (a
        checkpoint of the older one-list-per-event layout included)."""
        kinds, procs, times, values = state
        if not (len(kinds) == len(procs) == len(times) == len(values)):
            raise ValueError("compact events: columns of different lengths")
        out = cls()
        out.kinds.extend(int(k) for k in kinds)
        out.procs.extend(int(p) for p in procs)
        out.times.extend(float(t) for t in times)
        out.values.extend(values)
        return out


_HOSTS: dict[Any, str] = {}
"""Slot → its host, shared: a big log names the same few slots 100,000 times."""


@dataclass
class ClusterEvents:
    """One cluster of the node log: its node, compact events and POST result."""

    cluster: int
    node: str | None = None
    events: CompactEvents | None = field(default_factory=CompactEvents)
    """None: dropped from the checkpoint once POST ended (the history holds what they said)."""
    post_code: int | None = None
    """Return value of the node's POST script (016 event); None: no POST seen."""
    post_time: float | None = None
    abort_reasons: dict[int, str] = field(default_factory=dict)
    _history: ClusterHistory | None = field(default=None, repr=False)
    _summary: ClusterSummary | None = field(default=None, repr=False)
    keep_history: bool = field(default=True, repr=False, compare=False)
    """Whether :meth:`summary` keeps the history it rebuilds (for a later
    :meth:`history`); ``status``, which shows summaries only, keeps none of
    5,000 histories (their invocations and slots) in memory."""

    @property
    def compacted(self) -> bool:
        """Kept by the checkpoint only as its summary (no events, no history)."""
        return self.events is None

    def summary(self) -> ClusterSummary:
        """What ``status`` shows of the cluster (cached until new events)."""
        if self._summary is None:
            if self._history is None and not self.keep_history and self.events is not None:
                self._summary = self._lean_summary(self.events)
            else:
                self._summary = summarize(self.history(), proc_states(self.events or []))
        return self._summary

    def _lean_summary(self, events: CompactEvents) -> ClusterSummary:
        """:func:`summarize` of the history :meth:`_replay` would rebuild,
        with its :func:`proc_states`, in one pass over the kept records and
        with no run kept: a long cluster is mostly evictions and executes,
        and a summary needs only each proc's open run, the latest end and the
        earliest win. The rules are :func:`~condor_rlrep.condor.eventlog.replay_runs`'
        (a removal's or a hold's relabelling of the eviction before it only
        takes that eviction back from the count) and :func:`proc_states`';
        ``test_the_lean_summary_is_the_summary_of_the_replayed_history`` holds
        them equal on any records. The node is the replay's first, as
        :meth:`CompactEvents.replay_records` gives it (a SUBMIT's ``str``)."""
        states: dict[int, str] = {}
        started: dict[int, float] = {}  # proc → start of its open run
        provisional: dict[int, Any] = {}  # proc → code of the eviction that ended its last run (an abort or hold may relabel it)
        procs: set[int] = set()
        finished: set[int] = set()  # terminated or aborted
        pop_started, unmark = started.pop, provisional.pop
        node: Any = None
        submit_time: float | None = None
        last_end: float | None = None
        win: tuple[float, int] | None = None  # (end, proc) of the earliest success
        evictions = 0
        for kind, proc, at, value in zip(events.kinds, events.procs, events.times, events.values):
            if kind == EVICTED:
                start = pop_started(proc, None)
                if value == REMOVAL_EVICT_CODE:
                    states[proc] = "removing"
                    unmark(proc, None)
                else:
                    states[proc] = "idle"
                    evictions += 1
                    if start is not None:
                        provisional[proc] = value
            elif kind == EXECUTE:
                states[proc] = "running"
                procs.add(proc)
                unmark(proc, None)
                start = pop_started(proc, None)  # a lost end event: the earlier run ends here
                started[proc] = at
            elif kind == SUBMIT:
                states[proc] = "idle"
                procs.add(proc)
                if submit_time is None or at < submit_time:
                    submit_time = at
                if node is None and value:
                    node = str(value)
                continue
            elif kind == TERMINATED:
                states[proc] = "success" if value == 0 else "failure"
                procs.add(proc)
                finished.add(proc)
                start = pop_started(proc, None)
                end = at if start is None or at > start else start  # with no execute seen: no length
                if last_end is None or end > last_end:
                    last_end = end
                if value == 0 and (win is None or (end, proc) < win):
                    win = (end, proc)
                continue
            elif kind == ABORTED or kind == HELD:
                states[proc] = "removed" if kind == ABORTED else "held"
                if proc in provisional:
                    # a hold's eviction, or a removal's own (code 1009): not an eviction
                    if unmark(proc) == REASONED_REMOVAL_EVICT_CODE or kind == HELD:
                        evictions -= 1
                if kind == ABORTED:
                    finished.add(proc)
                start = pop_started(proc, None)
            elif kind == _RELEASED:
                states[proc] = "idle"
                continue
            elif kind == SHADOW_EXCEPTION or kind == EXECUTABLE_ERROR or kind == RECONNECT_FAILED:
                start = pop_started(proc, None)
            else:
                if kind == POST_SCRIPT_TERMINATED and node is None and value is not None:
                    node = value
                continue
            if start is not None:
                end = at if at > start else start
                if last_end is None or end > last_end:
                    last_end = end
        return ClusterSummary(self.cluster, self.node if node is None else node, submit_time, len(procs),
                              None if win is None else win[1], evictions, tuple(states.items()), last_end,
                              len(procs - finished))

    def history(self) -> ClusterHistory:
        """The cluster rebuilt by :func:`rebuild_cluster` (cached until new events).

        Raises :class:`CompactedError` for a cluster resumed from the status
        checkpoint as a summary only."""
        if self._history is None:
            if self.events is None:
                raise CompactedError(f"cluster {self.cluster}: only its summary was kept")
            self._history = self._replay()
        return self._history

    def _replay(self) -> ClusterHistory:
        history = replay_cluster(self.events.replay_records(), self.cluster)  # type: ignore[union-attr]
        if history.node is None:
            history.node = self.node
        return history

    @property
    def last_time(self) -> float | None:
        if self.events is None:
            return self.post_time
        return self.events.last_time()

    def to_state(self) -> tuple[Any, ...]:
        """Plain data for the checkpoint: a cluster whose POST ended as its summary only."""
        finished = self.post_code is not None
        return (self.cluster, self.node, None if finished else (self.events or CompactEvents()).to_state(),
                self.post_code, self.post_time, [[p, r] for p, r in self.abort_reasons.items()],
                self.summary().to_state() if finished else None)

    @classmethod
    def from_state(cls, state: Any) -> "ClusterEvents":
        cluster, node, events, post_code, post_time, reasons, summary = state
        entry = cls(int(cluster), None if node is None else str(node),
                    None if events is None else CompactEvents.from_state(events),
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
