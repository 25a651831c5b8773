"""Follow a DAG's node log with one ``htcondor2.JobEventLog``, incrementally.

The node log of a 10,000-node DAG is ~100 MB and the real reader needs
several seconds for it, so :class:`NodeLog` keeps what it has read — per
cluster, each event reduced to ``(type, proc, time, value)`` — and on
:meth:`NodeLog.update` reads only what was appended since (the reader's
offset is part of its pickled state). A ``--watch`` loop calls ``update``;
``status`` calls pickle the whole object to a per-user cache
(:mod:`.checkpoint`), so the next call resumes too.

Histories are rebuilt by the project's
:func:`condor_rlrep.condor.eventlog.rebuild_cluster` from light stand-ins of
the events (:class:`_Event`), so the rules for evictions, removals and
invocations stay in one place. NOOP nodes (DAGMan's fake cluster 0, proc
2147483647, one subproc per node) are kept apart, by node name.

DAGMan truncates the node log when a new DAGMan starts (not in recovery
mode): a log that shrank, or whose first event changed, starts over.
"""

from __future__ import annotations

import copyreg
import os
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.outcome import Invocation
from condor_rlrep.condor.eventlog import (
    ABORTED,
    EVICTED,
    EXECUTE,
    HELD,
    POST_SCRIPT_TERMINATED,
    SUBMIT,
    TERMINATED,
    ClusterHistory,
    EventLogError,
    event_time,
    node_name_of,
    rebuild_cluster,
)

__all__ = ["NodeLog", "ClusterEvents", "NoopNode", "LogTail", "PRESKIP"]

PRESKIP = 34
_HEAD_BYTES = 256


class _Recompacted(Exception):
    """An event for a cluster whose events the checkpoint dropped."""


class _Event:
    """What :func:`rebuild_cluster` reads of an event, from a compact record."""

    __slots__ = ("type", "cluster", "proc", "timestamp", "_value")

    def __init__(self, kind: int, cluster: int, proc: int, at: float, value: Any):
        self.type = kind
        self.cluster = cluster
        self.proc = proc
        self.timestamp = at
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

    def history(self) -> ClusterHistory:
        """The cluster rebuilt by :func:`rebuild_cluster` (cached until new events)."""
        if self._history is None:
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


@dataclass
class NoopNode:
    """A NOOP node: DAGMan writes a fake submit and terminate for it."""

    name: str
    submit_time: float | None = None
    end_time: float | None = None
    exit_code: int | None = None
    post_code: int | None = None
    post_time: float | None = None


@dataclass(frozen=True)
class LogTail:
    """What is left in the file after the last event the reader returned."""

    offset: int
    size: int
    partial: bool
    """Text after the last complete event: one being written, or a truncated log."""
    unreadable: bool
    """Complete events after a point the reader could not parse: a corrupt log."""


class NodeLog:
    """The node log at ``path``, read incrementally (see the module doc)."""

    def __init__(self, path: str):
        self.path = path
        self.clusters: dict[int, ClusterEvents] = {}
        self.noops: dict[str, NoopNode] = {}
        self.preskips: dict[str, float] = {}
        self.events_read = 0
        self.resets = 0
        self._reader: Any = None
        self._identity: tuple[int, int] | None = None
        self._head = b""
        self._noop_subprocs: dict[int, str] = {}
        self._times: dict[str, float] = {}

    # -- reading ---------------------------------------------------------------

    def exists(self) -> bool:
        return os.path.isfile(self.path)

    def update(self) -> int:
        """Read the events appended since the last call; returns how many.

        Raises :class:`~condor_rlrep.condor.eventlog.EventLogError` when the
        reader fails on the file (an event it cannot parse).
        """
        import htcondor2

        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._reader is not None:
                self._reset()
            return 0
        except OSError as err:
            raise EventLogError(f"cannot read node log: {err.strerror or err}", path=self.path) from err
        head = self._read_head()
        identity = (st.st_dev, st.st_ino)
        if self._reader is not None and (identity != self._identity or st.st_size < self.offset
                                         or not head.startswith(self._head[: len(head)])):
            self._reset()
        if self._reader is None:
            self._reader = htcondor2.JobEventLog(self.path)
            self._identity = identity
        self._head = head
        count = 0
        try:
            for event in self._reader.events(stop_after=0):
                self._add(event)
                count += 1
        except _Recompacted:
            self._reset()
            return self.update()
        except Exception as err:  # the bindings raise a bare HTCondorException (ULOG_RD_ERROR)
            raise EventLogError(f"cannot parse the event at byte {self.offset}: {err}", path=self.path) from err
        self.events_read += count
        return count

    def _read_head(self) -> bytes:
        try:
            with open(self.path, "rb") as handle:
                return handle.read(_HEAD_BYTES)
        except OSError:
            return b""

    def _reset(self) -> None:
        self.clusters.clear()
        self.noops.clear()
        self.preskips.clear()
        self._noop_subprocs.clear()
        self._reader = None
        self._head = b""
        self.resets += 1

    @property
    def offset(self) -> int:
        """Bytes of the file the reader has consumed."""
        if self._reader is None:
            return 0
        return int(self._reader.__getstate__()[1])

    def tail(self) -> LogTail:
        """Whether the file ends with complete events the reader returned."""
        offset = self.offset
        try:
            with open(self.path, "rb") as handle:
                handle.seek(offset)
                rest = handle.read()
        except OSError:
            return LogTail(offset, offset, False, False)
        complete = rest.startswith(b"...\n") or b"\n...\n" in rest
        return LogTail(offset, offset + len(rest), bool(rest.strip()) and not complete, complete)

    def _add(self, event: Any) -> None:
        kind = int(event.type)
        cluster = int(event.cluster)
        if cluster <= 0:
            self._add_noop(kind, event)
            return
        entry = self.clusters.get(cluster)
        if entry is None:
            entry = self.clusters[cluster] = ClusterEvents(cluster)
        elif entry.events is None:  # compacted in the checkpoint, yet it goes on: read the log afresh
            raise _Recompacted
        entry._history = None
        proc = event.proc
        at = self._time(event)
        value: Any = None
        if kind == SUBMIT:
            # every proc of a cluster carries the same node name: read it once
            value = entry.node if entry.node is not None else node_name_of(event)
            entry.node = value
        elif kind == EXECUTE:
            value = event.get("SlotName")
            if value is None:
                sinful = event.get("ExecuteHost")
                value = None if sinful is None else _slot_from_sinful(str(sinful))
            else:
                value = str(value)
        elif kind == TERMINATED:
            if event.get("TerminatedNormally"):
                value = int(event.get("ReturnValue", 1))
            else:
                value = -int(event.get("TerminatedBySignal", 0) or 0) or -1
        elif kind == EVICTED:
            code = event.get("ReasonCode")
            value = None if code is None else int(code)
        elif kind == ABORTED:
            reason = event.get("Reason")
            if reason:
                entry.abort_reasons[proc] = str(reason)[:200]
        elif kind == HELD:
            value = None
        elif kind == POST_SCRIPT_TERMINATED:
            entry.post_code = _post_code(event)
            entry.post_time = at
            if entry.node is None:
                entry.node = node_name_of(event)
            return  # rebuild_cluster needs only the node name of a 016, kept above
        elif kind == PRESKIP:
            name = node_name_of(event)
            if name:
                self.preskips[name] = at
            return
        entry.events.append((kind, proc, at, value))

    def _time(self, event: Any) -> float:
        """:func:`event_time`, memoised on the text: events share their seconds."""
        text = event.get("EventTime")
        at = self._times.get(text)
        if at is None:
            at = event_time(event)
            if text is not None:
                if len(self._times) > 100_000:
                    self._times.clear()
                self._times[text] = at
        return at

    def _add_noop(self, kind: int, event: Any) -> None:
        subproc = int(event.get("Subproc", 0) or 0)
        at = self._time(event)
        name = node_name_of(event) if kind in (SUBMIT, POST_SCRIPT_TERMINATED, PRESKIP) else None
        if name is None:
            name = self._noop_subprocs.get(subproc)
        if name is None:
            return
        if kind == PRESKIP:
            self.preskips[name] = at
            return
        self._noop_subprocs[subproc] = name
        node = self.noops.get(name)
        if node is None:
            node = self.noops[name] = NoopNode(name)
        if kind == SUBMIT:
            node.submit_time = at
        elif kind == TERMINATED:
            node.end_time = at
            node.exit_code = int(event.get("ReturnValue", 0) or 0) if event.get("TerminatedNormally") else -1
        elif kind == POST_SCRIPT_TERMINATED:
            node.post_code = _post_code(event)
            node.post_time = at

    # -- queries ---------------------------------------------------------------

    def clusters_of(self) -> dict[str, list[ClusterEvents]]:
        """Node → its clusters in the log, in submission order."""
        out: dict[str, list[ClusterEvents]] = {}
        for cluster in sorted(self.clusters):
            entry = self.clusters[cluster]
            if entry.node is not None:
                out.setdefault(entry.node, []).append(entry)
        return out

    def last_event_time(self) -> float | None:
        times = [c.post_time or c.last_time for c in self.clusters.values() if (c.post_time or c.last_time)]
        times += [n.post_time or n.end_time or n.submit_time for n in self.noops.values()
                  if (n.post_time or n.end_time or n.submit_time)]
        return max(times) if times else None

    # -- pickling (the status checkpoint) --------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_times"] = {}
        # rebuilt histories go along: rebuilding 10,000 of them is most of a warm status
        # A cluster whose POST ended (016) gets no more events: its rebuilt
        # history is all a reader needs, and its events stay behind.
        state["clusters"] = {
            c: (e.node, None if e.post_code is not None and e._history is not None else e.events, e.post_code,
                e.post_time, e.abort_reasons, e._history)
            for c, e in self.clusters.items()
        }
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        clusters = state.pop("clusters")
        self.__dict__.update(state)
        self.clusters = {c: ClusterEvents(c, node, events, post_code, post_time, reasons, history)
                         for c, (node, events, post_code, post_time, reasons, history) in clusters.items()}


def _reduce_invocation(inv: Invocation) -> tuple[Any, ...]:
    return (Invocation, (inv.replica, inv.host, inv.start, inv.end, inv.ended_by, inv.exit_code))


# The checkpoint holds every invocation of every cluster: pickled by its
# dataclass default (``__getstate__`` through ``fields()`` for a slotted
# class), 210,000 of them cost a warm status about a second; as constructor
# arguments, a fraction of it.
copyreg.pickle(Invocation, _reduce_invocation)


def _post_code(event: Any) -> int:
    if event.get("TerminatedNormally", True):
        return int(event.get("ReturnValue", 0) or 0)
    return -int(event.get("TerminatedBySignal", 0) or 0) or -1


def _slot_from_sinful(sinful: str) -> str | None:
    from condor_rlrep.condor.eventlog import _ALIAS, _SINFUL_HOST

    match = _ALIAS.search(sinful) or _SINFUL_HOST.search(sinful)
    return match.group(1) if match else None
