"""Follow a DAG's node log with one ``htcondor2.JobEventLog``, incrementally.

The node log of a 10,000-node DAG is ~100 MB and the real reader needs
several seconds for it, so :class:`NodeLog` keeps what it has read — per
cluster, each event reduced to ``(type, proc, time, value)`` — and on
:meth:`NodeLog.update` reads only what was appended since. A ``--watch``
loop calls ``update``; ``status`` saves :meth:`NodeLog.to_state` (plain
data) in its checkpoint (:mod:`.load`) and the next call resumes from
:meth:`NodeLog.from_state` at the saved byte offset. The checkpoint keeps a
cluster whose POST has ended (016: DAGMan sends it no more events) only as
its :class:`~.clusters.ClusterSummary` — what ``status`` shows — not its
events; such a cluster has no history (``report`` reads the log afresh),
and an event for it after all makes the reader start over. What is kept of
each cluster and NOOP node, and how a cluster's history is rebuilt from
it, lives in :mod:`.clusters`.

DAGMan truncates the node log when a new DAGMan starts (not in recovery
mode): a log that shrank, or whose first event changed, starts over.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from condor_rlrep.condor.eventlog import (
    ABORTED,
    EVICTED,
    EXECUTE,
    POST_SCRIPT_TERMINATED,
    SUBMIT,
    TERMINATED,
    EventLogError,
    event_time,
    node_name_in_notes,
    node_name_of,
    time_of_text,
)
from condor_rlrep.runreport.clusters import ClusterEvents, NoopNode, opt_float

__all__ = ["NodeLog", "LogTail", "PRESKIP"]

PRESKIP = 34
_HEAD_BYTES = 256


class _Recompacted(Exception):
    """An event for a cluster whose events the checkpoint dropped."""


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
        self._resume_at = 0
        """Byte offset to start a reader at (resumed from a checkpoint, no reader yet)."""
        self._identity: tuple[int, int] | None = None
        self._head = b""
        self._noop_subprocs: dict[int, str] = {}
        self._times: dict[str, float] = {}
        self._strings: dict[str, str] = {}

    # -- reading ---------------------------------------------------------------

    def exists(self) -> bool:
        return os.path.isfile(self.path)

    def update(self) -> int:
        """Read the events appended since the last call; returns how many.

        Raises :class:`~condor_rlrep.condor.eventlog.EventLogError` when the
        reader fails on the file (an event it cannot parse). Resumed from a
        checkpoint and the file unchanged, the bindings are not even imported.
        """
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
        started = self._reader is not None or self._resume_at > 0
        if started and (identity != self._identity or st.st_size < self.offset
                        or not head.startswith(self._head[: len(head)])):
            self._reset()
        if self._reader is None:
            if self._resume_at > 0 and st.st_size == self._resume_at:
                return 0  # resumed and nothing appended
            self._reader = _open_reader(self.path, self._resume_at)
            self._resume_at = 0
            self._identity = identity
        self._head = head
        count = 0
        try:
            count = self._read_all()
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
        self._resume_at = 0
        self._head = b""
        self.resets += 1

    @property
    def offset(self) -> int:
        """Bytes of the file the reader has consumed."""
        if self._reader is None:
            return self._resume_at
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

    def _read_all(self) -> int:
        """Add every event the reader has now; returns how many.

        With the bindings as today (:func:`_fast_next`) each event is taken
        as the ``(text, ClassAd)`` pair their iterator wraps in a
        ``JobEvent`` — skipping that object and its ``__next__`` frame — and
        its keys read through ``classad2``'s C getter; the few events whose
        node name or POST result is needed become a real ``JobEvent``
        (:func:`_as_event`). Without those private functions, the public
        iterator and ``event[key]``: same values, same order."""
        reader = self._reader.events(stop_after=0)  # the public call sets the no-wait deadline
        count = 0
        fast = _fast_next(reader)
        if fast is None:
            add = self._adder(_item_of_event, _event_itself)
            for event in reader:
                add(event, None, event)
                count += 1
            return count
        next_raw, handle, deadline, getter = fast
        add = self._adder(getter, _as_event)
        try:
            while True:
                text, data = next_raw(reader, handle, deadline)
                add(data._handle, text, data)
                count += 1
        except StopIteration:  # what ``__next__`` passes on at the end of the log
            pass
        return count

    def _adder(self, get: Any, as_event: Any) -> Any:
        """The function that adds one event, ``add(handle, text, data)``:
        ``get(handle, key, True)`` reads its keys (``event[key]``, KeyError
        when absent) and ``as_event(text, data)`` makes the event (see
        :meth:`_read_all`). A closure over what every event touches, and the
        last cluster's entry and column appends kept while its events follow
        one another (a cluster's events come in runs): nothing reads an
        entry's history or summary while the reader adds events, so an entry
        forgets them once, when first met here."""
        clusters, times, strings, preskips = self.clusters, self._times, self._strings, self.preskips
        time_of, add_noop = self._time_of, self._add_noop
        last: list[Any] = [None, None, None, None, None, None]  # cluster, entry, and its four column appends

        def add(handle: Any, text: Any, data: Any) -> None:
            try:
                kind = int(get(handle, "EventTypeNumber", True))
                cluster = int(get(handle, "Cluster", True))
            except KeyError:
                event = as_event(text, data)
                kind, cluster = int(event.type), int(event.cluster)
            if cluster <= 0:
                add_noop(kind, as_event(text, data))
                return
            if cluster == last[0]:
                entry = last[1]
            else:
                entry = clusters.get(cluster)
                if entry is None:
                    entry = clusters[cluster] = ClusterEvents(cluster)
                elif entry.events is None:  # compacted in the checkpoint, yet it goes on: read the log afresh
                    raise _Recompacted
                entry._history = entry._summary = None
                events = entry.events
                last[:] = cluster, entry, events.kinds.append, events.procs.append, events.times.append, \
                    events.values.append
            try:
                proc = get(handle, "Proc", True)
            except KeyError:
                proc = -1
            try:
                stamp = get(handle, "EventTime", True)
            except KeyError:
                stamp = None
            at = times.get(stamp)
            if at is None:
                at = time_of(stamp, as_event, text, data)
            value: Any = None
            if kind == EXECUTE:
                try:
                    value = str(get(handle, "SlotName", True))
                    # one string per slot, not per execute (100,000 of them in a big log)
                    value = strings.setdefault(value, value)
                except KeyError:
                    sinful = _get(get, handle, "ExecuteHost")
                    value = None if sinful is None else _slot_from_sinful(str(sinful))
            elif kind == EVICTED:  # the commonest event of a big log after executes: no helper call
                try:
                    value = int(get(handle, "ReasonCode", True))
                except KeyError:
                    value = None
            elif kind == SUBMIT:
                # every proc of a cluster carries the same node name: read it once
                # (node_name_of, from the attributes themselves)
                value = entry.node
                if value is None:
                    name = _get(get, handle, "DAGNodeName")
                    value = str(name) if name else node_name_in_notes(_get(get, handle, "LogNotes"))
                entry.node = value
            elif kind == TERMINATED:
                if _get(get, handle, "TerminatedNormally"):
                    value = int(_get(get, handle, "ReturnValue", 1))
                else:
                    value = -int(_get(get, handle, "TerminatedBySignal", 0) or 0) or -1
            elif kind == ABORTED:
                reason = _get(get, handle, "Reason")
                if reason:
                    entry.abort_reasons[proc] = str(reason)[:200]
            elif kind == POST_SCRIPT_TERMINATED:
                entry.post_code = _post_code(get, handle)
                entry.post_time = at
                if entry.node is None:
                    entry.node = node_name_of(as_event(text, data))
                return  # rebuild_cluster needs only the node name of a 016, kept above
            elif kind == PRESKIP:
                name = node_name_of(as_event(text, data))
                if name:
                    preskips[name] = at
                return
            last[2](kind)  # CompactEvents.append, inlined
            last[3](proc)
            last[4](at)
            last[5](value)

        return add

    def _time_of(self, stamp: Any, as_event: Any, text: Any, data: Any) -> float:
        """:func:`event_time` of the event ``as_event(text, data)`` whose
        ``EventTime`` is ``stamp``, memoised on the stamp (events share their
        seconds); the event is made only when the stamp alone does not tell
        (:func:`time_of_text`)."""
        at = self._times.get(stamp)
        if at is None:
            at = time_of_text(stamp)
            if at is None:
                at = event_time(as_event(text, data))
            if stamp is not None:
                if len(self._times) > _TIMES_KEPT:
                    self._times.clear()
                self._times[stamp] = at
        return at

    def _add_noop(self, kind: int, event: Any) -> None:
        subproc = int(event.get("Subproc", 0) or 0)
        at = self._time_of(event.get("EventTime"), _event_itself, None, event)
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
            node.post_code = _post_code(_item_of_event, event)
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

    # -- the status checkpoint ---------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Plain data (for :mod:`marshal`): where the reader stands and what it
        has read, finished clusters as summaries (see the module doc)."""
        return {
            "path": self.path, "offset": self.offset, "identity": list(self._identity or ()), "head": self._head,
            "events_read": self.events_read, "resets": self.resets,
            "clusters": [entry.to_state() for entry in self.clusters.values()],
            "noops": [[n.name, n.submit_time, n.end_time, n.exit_code, n.post_code, n.post_time]
                      for n in self.noops.values()],
            "preskips": dict(self.preskips), "noop_subprocs": [[k, v] for k, v in self._noop_subprocs.items()],
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "NodeLog":
        """The reader :meth:`to_state` saved; raises (KeyError, TypeError,
        ValueError) on anything that is not such a state."""
        log = cls(str(state["path"]))
        identity = tuple(int(v) for v in state["identity"])
        if len(identity) != 2 or not isinstance(state["head"], bytes):
            raise ValueError("not a node-log state")
        log._identity, log._head = (identity[0], identity[1]), state["head"]
        log._resume_at = int(state["offset"])
        log.events_read, log.resets = int(state["events_read"]), int(state["resets"])
        for item in state["clusters"]:
            entry = ClusterEvents.from_state(item)
            log.clusters[entry.cluster] = entry
        for name, submit, end, code, post_code, post_time in state["noops"]:
            log.noops[str(name)] = NoopNode(str(name), opt_float(submit), opt_float(end),
                                            None if code is None else int(code),
                                            None if post_code is None else int(post_code), opt_float(post_time))
        log.preskips = {str(k): float(v) for k, v in state["preskips"].items()}
        log._noop_subprocs = {int(k): str(v) for k, v in state["noop_subprocs"]}
        return log


def _open_reader(path: str, offset: int) -> Any:
    """An ``htcondor2.JobEventLog`` of ``path`` that starts at byte ``offset``
    (an event boundary it returned before): the bindings' own resume, as
    their unpickling does it."""
    import htcondor2  # here: a warm status whose log is unchanged never needs it

    if offset <= 0:
        return htcondor2.JobEventLog(path)
    reader = htcondor2.JobEventLog.__new__(htcondor2.JobEventLog)
    reader.__setstate__(({"_deadline": 0, "_filename": path}, offset))
    return reader


def _private_api() -> tuple[Any, Any, Any] | None:
    """The bindings' private functions behind ``JobEventLog.__next__`` and
    ``ClassAd.__getitem__``, and the public ``JobEvent`` class; None when a
    release lacks any of them (then :meth:`NodeLog._read_all` takes the
    public iterator)."""
    global _PRIVATE
    if _PRIVATE is False:
        try:
            from classad2.classad2_impl import _classad_get_item
            from htcondor2 import JobEvent
            from htcondor2.htcondor2_impl import _job_event_log_next
        except ImportError:
            _PRIVATE = None
        else:
            _PRIVATE = (_job_event_log_next, _classad_get_item, JobEvent)
    return _PRIVATE


_PRIVATE: Any = False
"""False: not looked up yet; None: absent; else :func:`_private_api`'s triple."""

_TIMES_KEPT = 100_000


def _fast_next(reader: Any) -> tuple[Any, Any, Any, Any] | None:
    """``(next_raw, handle, deadline, getter)``: ``next_raw(reader, handle,
    deadline)`` is what ``reader.__next__`` calls (the next ``(text,
    ClassAd)``, StopIteration at the end), ``getter(handle, key, True)`` what
    ``ClassAd[key]`` calls. None when the private API or the reader's
    attributes are not as today."""
    api = _private_api()
    if api is None:
        return None
    try:
        return api[0], reader._handle, reader._deadline, api[1]
    except AttributeError:
        return None


def _as_event(text: str, data: Any) -> Any:
    """The ``JobEvent`` of the bindings' ``(text, ClassAd)`` pair, built as
    ``JobEventLog.__next__`` builds it."""
    return _PRIVATE[2](data, text)


def _event_itself(_text: Any, event: Any) -> Any:
    """The public path's ``as_event``: the event is already one."""
    return event


def _item_of_event(event: Any, key: str, _raise: bool) -> Any:
    """The public path's getter, same shape as the C one: ``event[key]``."""
    return event[key]


def _get(get: Any, handle: Any, key: str, default: Any = None) -> Any:
    try:
        return get(handle, key, True)
    except KeyError:
        return default


def _post_code(get: Any, handle: Any) -> int:
    """The POST script's result of a 016 event whose keys ``get(handle, key, True)`` reads."""
    if _get(get, handle, "TerminatedNormally", True):
        return int(_get(get, handle, "ReturnValue", 0) or 0)
    return -int(_get(get, handle, "TerminatedBySignal", 0) or 0) or -1


def _slot_from_sinful(sinful: str) -> str | None:
    from condor_rlrep.condor.eventlog import _ALIAS, _SINFUL_HOST

    match = _ALIAS.search(sinful) or _SINFUL_HOST.search(sinful)
    return match.group(1) if match else None
