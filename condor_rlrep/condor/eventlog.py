"""Read a DAG's node event log and rebuild what each replica did.

The node log (``<dag>.nodes.log``) holds the events of every node of a DAG.
Nodes are found through their SUBMIT events, whose notes name the node either
as ``DAG Node: A`` (older DAGMan, NOOP nodes) or as a ClassAd line
``[ DAGNodeName = "A"; JobBatchName = … ]`` (HTCondor 25.x), and through the
``DAGNodeName`` of POST_SCRIPT_TERMINATED (016) events.

Each replica is one proc of the node's cluster. Its *invocations* (one per
execute event) end by termination, eviction by the machine (owner, vacate,
preemption, reconnect failure: the proc goes back to idle), a hold (user,
admin or policy: ``condor_hold`` logs an evicted event and then the held
event; the run is recorded as ``held``, not as an eviction) or removal (``condor_rm``, written by
25.x as an evicted event with code 1023 and then an aborted event). Run times
come from event timestamps (execute → end), as the terminate event carries no
wall time in older logs. These invocations feed
:func:`condor_rlrep.outcome.evaluate` (eq. 3 of the replication paper).

Events are read with ``htcondor2.JobEventLog(path).events(stop_after=0)``,
which never blocks and does not return a half-written last event.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from condor_rlrep.errors import InputError
from condor_rlrep.outcome import Invocation

__all__ = [
    "EventLogError",
    "REMOVAL_EVICT_CODE",
    "read_events",
    "node_name_of",
    "node_name_in_notes",
    "cluster_nodes",
    "clusters_of_node",
    "host_of_execute",
    "event_time",
    "time_of_text",
    "ClusterHistory",
    "rebuild_cluster",
]


REMOVAL_EVICT_CODE = 1023
"""``ReasonCode`` of the evicted event HTCondor writes when ``condor_rm``
stops a running job (an owner eviction or a vacate has another code)."""

REASONED_REMOVAL_EVICT_CODE = 1009
"""``ReasonCode`` ("Claim deactivated") of the evicted event a removal with
a reason (``Schedd.act(Remove, …, reason=…)``) writes before its abort: only
such an eviction is the removal's own. An owner's eviction (1011) or a lost
shadow (1008) of a replica later removed while idle, with no evicted event
of its own, stays an eviction."""

# Event type numbers (htcondor2.JobEventType values), kept as ints so that the
# module does not import htcondor2 just to compare them.
SUBMIT, EXECUTE, EXECUTABLE_ERROR, EVICTED, TERMINATED = 0, 1, 2, 4, 5
SHADOW_EXCEPTION, ABORTED, HELD, POST_SCRIPT_TERMINATED = 7, 9, 12, 16
RECONNECT_FAILED, JOB_AD_INFORMATION = 24, 28

KEYBOARD_IDLE_ATTR = "MachineAttrKeyboardIdle0"
"""The machine's ``KeyboardIdle`` at the match, in the job ad when the
description says ``job_machine_attrs = KeyboardIdle``; written to the log by
``job_ad_information_attrs`` in the job-ad-information event (028) that
follows each execute event (measured on HTCondor 25.14)."""

_DAG_NODE_NOTE = re.compile(r"DAG Node:\s*(\S+)")
_DAG_NODE_AD = re.compile(r'DAGNodeName\s*=\s*"((?:[^"\\]|\\.)*)"', re.IGNORECASE)
_ESCAPED = re.compile(r"\\(.)")
_ALIAS = re.compile(r"[?&]alias=([^&>]+)")
_SINFUL_HOST = re.compile(r"<([^:>?]+)")


class EventLogError(InputError):
    """A node log that cannot be read at all (missing, a directory, no access)."""


def read_events(path: str | os.PathLike[str], *, offset: int = 0) -> list[Any]:
    """Every complete event of the log at ``path``, in file order.

    A half-written last event is not returned (the reader waits for its
    ``...`` line); unparseable text yields no events rather than an error.

    ``offset`` > 0: only events that begin at or after that byte (the first
    event boundary from there on), so a POST hook reads its own cluster's
    events without parsing the whole log of a 10,000-node DAG (seconds) — its
    cluster was submitted after PRE noted the log's size. The real reader is
    started at that boundary in place (the offset its pickled form restores):
    nothing is copied, so a full or read-only disk and a hook killed
    mid-read leave no scratch file and change no answer.
    """
    import htcondor2  # lazy: hooks pay for it only when they read a log

    text_path = os.fspath(path)
    if not os.path.isfile(text_path):
        raise EventLogError("node log not found or not a regular file", path=text_path)
    try:
        if offset > 0:
            boundary = _event_boundary(text_path, offset)
            if boundary is None:
                return []
            if boundary > 0:
                reader = htcondor2.JobEventLog.__new__(htcondor2.JobEventLog)
                # the bindings' own resume-at-offset (JobEventLog.__setstate__)
                reader.__setstate__(({"_deadline": 0, "_filename": text_path}, boundary))
                return list(reader.events(stop_after=0))
        return list(htcondor2.JobEventLog(text_path).events(stop_after=0))
    except OSError as err:
        raise EventLogError(f"cannot read node log: {err.strerror or err}", path=text_path) from err
    except Exception as err:  # the bindings raise a bare HTCondorException
        raise EventLogError(f"cannot read node log: {err}", path=text_path) from err


def _event_boundary(path: str, offset: int) -> int | None:
    """Byte position of the first event starting at/after ``offset`` (0: read
    it all, the log was replaced since; None: no complete event there yet)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if offset > size:
            return 0
        start = max(0, offset - 5)
        handle.seek(start)
        data = handle.read()
    boundary = data.find(b"\n...\n")
    if boundary < 0:
        return None
    return start + boundary + 5


def node_name_of(event: Any) -> str | None:
    """The DAG node a SUBMIT or POST_SCRIPT_TERMINATED event belongs to."""
    name = event.get("DAGNodeName")
    if name:
        return str(name)
    return node_name_in_notes(event.get("LogNotes"))


def node_name_in_notes(notes: Any) -> str | None:
    """:func:`node_name_of` of an event without a ``DAGNodeName`` whose
    ``LogNotes`` is ``notes`` (a reader that holds the attributes already
    needs no event object for it)."""
    if not notes:
        return None
    notes = str(notes)
    match = _DAG_NODE_AD.search(notes)
    if match:
        return _ESCAPED.sub(r"\1", match.group(1))
    match = _DAG_NODE_NOTE.search(notes)
    return match.group(1) if match else None


def cluster_nodes(events: Iterable[Any]) -> dict[int, str]:
    """Map cluster id → DAG node name, from SUBMIT notes and 016 events.

    NOOP nodes (DAGMan's fake cluster 0, proc 2147483647) are left out.
    """
    mapping: dict[int, str] = {}
    for event in events:
        kind = int(event.type)
        if kind not in (SUBMIT, POST_SCRIPT_TERMINATED) or event.cluster <= 0:
            continue
        name = node_name_of(event)
        if name is not None:
            mapping.setdefault(event.cluster, name)
    return mapping


def clusters_of_node(events: Iterable[Any], node: str) -> list[int]:
    """Clusters submitted for ``node``, in order of first appearance."""
    return [cluster for cluster, name in cluster_nodes(events).items() if name == node]


def host_of_execute(event: Any) -> str | None:
    """The machine an EXECUTE event ran on, for the power table.

    ``SlotName`` ``slot1_2@host`` gives ``host``; else the ``alias`` of the
    ``ExecuteHost`` sinful string; else its address.
    """
    slot = event.get("SlotName")
    if slot:
        slot = str(slot)
        # interned: a big log names the same few hosts in 100,000 executes
        return sys.intern(slot.rsplit("@", 1)[1]) if "@" in slot else slot
    sinful = event.get("ExecuteHost")
    if not sinful:
        return None
    sinful = str(sinful)
    match = _ALIAS.search(sinful)
    if match:
        return match.group(1)
    match = _SINFUL_HOST.search(sinful)
    return match.group(1) if match else (sinful.strip() or None)


def event_time(event: Any) -> float:
    """Epoch seconds of an event: its ``EventTime`` read as local time (as
    HTCondor writes it), or UTC when it ends in ``Z`` (:func:`time_of_text`).

    Same value as the bindings' ``event.timestamp`` for local times, without
    its ``strptime`` (whose first call costs a hook ~10 ms).
    """
    epoch = getattr(event, "epoch", None)
    if epoch is not None:  # a compact record that holds the converted time already
        return epoch
    at = time_of_text(event.get("EventTime"))
    return float(event.timestamp) if at is None else at


def time_of_text(iso: Any) -> float | None:
    """:func:`event_time` of an event whose ``EventTime`` is ``iso``; None
    where it takes the event's own ``timestamp`` instead (no ``EventTime``,
    or one that is not ISO): a reader that holds the attribute already
    (:mod:`condor_rlrep.runreport.nodelog`) needs no event object for it."""
    if not iso:
        return None
    text = str(iso)
    if len(text) == 19 and text[10] == "T":  # HTCondor's own form, local YYYY-MM-DDTHH:MM:SS: by its hour
        minute, second = text[14:16], text[17:19]
        if text[13] == ":" == text[16] and (minute + second).isdigit() and (minute + second).isascii() \
                and minute < "60" and second < "60":
            hour = _HOURS.get(text[:13], False)
            if hour is False:
                hour = _hour_epoch(text[:13])
            if hour is not None:
                return float(int(hour + int(minute) * 60 + int(second)))
    from datetime import datetime, timezone

    try:
        if text.endswith("Z"):
            return float(int(datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc).timestamp()))
        return float(int(datetime.fromisoformat(text).timestamp()))
    except ValueError:
        return None


def _hour_epoch(prefix: str) -> float | None:
    """``datetime.fromisoformat(prefix + ":00:00").timestamp()`` when every
    second of that local hour is that plus its offset in the hour (the same
    UTC offset at both ends: not an hour a 30-minute DST change splits);
    else None, and :func:`time_of_text` converts each second itself. Kept
    in :data:`_HOURS`: a big log's 15,000 distinct seconds fall in a few
    hours, and ``timestamp()`` of a local time is the dear part."""
    from datetime import datetime

    try:
        first = datetime.fromisoformat(prefix + ":00:00").timestamp()
        last = datetime.fromisoformat(prefix + ":59:59").timestamp()
    except ValueError:
        first = last = 0.0
    hour = first if last - first == 3599.0 and first == int(first) else None
    _HOURS[prefix] = hour
    return hour


_HOURS: dict[str, float | None] = {}
"""``YYYY-MM-DDTHH`` → :func:`_hour_epoch` (this process's time zone)."""


@dataclass
class ClusterHistory:
    """What the replicas (procs) of one cluster did, rebuilt from its events."""

    cluster: int
    node: str | None = None
    procs: set[int] = field(default_factory=set)
    submit_time: float | None = None
    invocations: list[Invocation] = field(default_factory=list)
    exit_codes: dict[int, int] = field(default_factory=dict)
    """Proc → return value of its normal termination (``-signal`` if killed)."""
    aborted: set[int] = field(default_factory=set)
    holds: int = 0
    evictions: int = 0
    """Runs the machine stopped (vacate, preemption, owner): a hold is not one."""
    first_failure_code: int | None = None
    """DAGMan's ``$RETURN`` rule: value of the first failing proc event
    (exit code, ``-signal``, ``-1002`` for an abort)."""
    event_count: int = 0
    slots: dict[tuple[int, float], str] = field(default_factory=dict)
    """(proc, invocation start) → the execute event's ``SlotName`` (``slot1_2@host``),
    for reports that place each invocation on its slot."""
    keyboard_idle: dict[tuple[int, float], float] = field(default_factory=dict)
    """(proc, invocation start) → the machine's ``KeyboardIdle`` (s) when
    that run was matched, where the log has it (:data:`KEYBOARD_IDLE_ATTR`)."""

    @property
    def succeeded(self) -> bool:
        """Some replica terminated normally with exit code 0."""
        return any(code == 0 for code in self.exit_codes.values())

    @property
    def winner(self) -> int | None:
        wins = [inv for inv in self.invocations if inv.ended_by == "success"]
        return min(wins, key=lambda inv: (inv.end, inv.replica)).replica if wins else None

    @property
    def finished_procs(self) -> set[int]:
        """Procs that left the queue (terminated or aborted)."""
        return set(self.exit_codes) | self.aborted


def rebuild_cluster(
    events: Iterable[Any],
    cluster: int,
    *,
    now: float | None = None,
    node_of: Mapping[int, str] | None = None,
) -> ClusterHistory:
    """Rebuild every invocation of every proc of ``cluster``.

    An invocation still open when the events end (truncated log, job still
    running) ends ``running`` at ``now`` (default: the cluster's last event,
    so that judging the same log twice gives the same result).
    Events of other clusters are ignored.
    """
    return replay_cluster(_records(events, cluster), cluster, now=now, node_of=node_of)


def _records(events: Iterable[Any], cluster: int) -> Iterable[tuple[int, int, float, Any, Any]]:
    """The records :func:`replay_cluster` reads, from the events of ``cluster``."""
    for event in events:
        if event.cluster != cluster:
            continue
        kind = int(event.type)
        value: Any = None
        host: Any = None
        if kind == SUBMIT or kind == POST_SCRIPT_TERMINATED:
            value = node_name_of(event)
        elif kind == EXECUTE:
            value, host = event.get("SlotName"), host_of_execute(event)
        elif kind == TERMINATED:
            if event.get("TerminatedNormally"):
                value = int(event.get("ReturnValue", 1))
            else:
                value = -int(event.get("TerminatedBySignal", 0) or 0) or -1
        elif kind == EVICTED:
            value = event.get("ReasonCode")
        elif kind == JOB_AD_INFORMATION and event.get("TriggerEventTypeNumber") == EXECUTE:
            idle = event.get(KEYBOARD_IDLE_ATTR)
            if isinstance(idle, (int, float)) and not isinstance(idle, bool) and idle >= 0:
                value = float(idle)
        yield kind, int(event.proc), event_time(event), value, host


def replay_cluster(
    records: Iterable[tuple[int, int, float, Any, Any]],
    cluster: int,
    *,
    now: float | None = None,
    node_of: Mapping[int, str] | None = None,
) -> ClusterHistory:
    """:func:`rebuild_cluster`'s rules over records of one cluster's events
    in log order, ``(type, proc, epoch seconds, value, host)``: value is the
    node name (SUBMIT, POST_SCRIPT_TERMINATED), ``SlotName`` (EXECUTE, with
    its host), the exit code, ``-signal`` for a kill (TERMINATED), the
    ``ReasonCode`` (EVICTED), a valid ``KeyboardIdle`` of an execute's
    job-ad-information event (else None). The status reader
    (:mod:`condor_rlrep.runreport.clusters`) keeps its events in this form."""
    history, runs = replay_runs(records, cluster, now=now, node_of=node_of)
    history.invocations = [Invocation(*run) for run in runs]
    return history


def replay_runs(
    records: Iterable[tuple[int, int, float, Any, Any]],
    cluster: int,
    *,
    now: float | None = None,
    node_of: Mapping[int, str] | None = None,
    detail: bool = True,
) -> tuple[ClusterHistory, list[tuple[Any, ...]]]:
    """:func:`replay_cluster` with the invocations as plain tuples
    ``(replica, host, start, end, ended_by, exit_code)`` (the fields of an
    :class:`~condor_rlrep.outcome.Invocation`, in order) beside a history
    whose ``invocations`` stay empty: a summary of a long cluster (100,000
    evictions in a big log) needs no object per run. ``detail=False`` also
    leaves ``slots`` and ``keyboard_idle`` empty."""
    history = ClusterHistory(cluster=cluster)
    open_runs: dict[int, tuple[float, str | None]] = {}
    runs: list[tuple[Any, ...]] = []
    append = runs.append

    def close(proc: int, at: float, ended_by: str, code: int | None = None, *, terminal: bool = False) -> None:
        started = open_runs.pop(proc, None)
        if started is None:
            if terminal:
                # Terminated with no execute seen (log begins mid-run): the run
                # still counts, with no measurable length.
                append((proc, None, at, at, ended_by, code))
            return
        start, host = started
        append((proc, host, start, at if at > start else start, ended_by, code))

    def fail(code: int) -> None:
        if history.first_failure_code is None:
            history.first_failure_code = code

    def relabel(index: int, ended_by: str) -> None:
        replica, host, start, end, _was, code = runs[index]
        runs[index] = (replica, host, start, end, ended_by, code)

    provisional: dict[int, tuple[int, Any]] = {}
    """Proc → (index, code) of its last invocation and of the eviction that
    ended it: a following abort may turn it into a removal, a hold into a hold."""
    last_at: float | None = None
    procs_add = history.procs.add
    slots = history.slots
    pop_open, pop_provisional = open_runs.pop, provisional.pop
    evictions = 0
    count = 0
    # the two commonest events of a long cluster (evictions and executes) come
    # first, with the end of a run (``close``) written out in place: a big
    # log's 115,000 evictions would each pay a call
    for kind, proc, at, value, host in records:
        count += 1
        if last_at is None or at > last_at:
            last_at = at
        if kind == EVICTED:
            started = pop_open(proc, None)
            if value == REMOVAL_EVICT_CODE:
                if started is not None:
                    start = started[0]
                    append((proc, started[1], start, at if at > start else start, "removed", None))
                # the removal logged its own 004 (also for a replica requeued
                # by an eviction, not running): an eviction before it stays one
                pop_provisional(proc, None)
            else:
                evictions += 1
                if started is not None:
                    start = started[0]
                    provisional[proc] = (len(runs), value)
                    append((proc, started[1], start, at if at > start else start, "evicted", None))
        elif kind == EXECUTE:
            procs_add(proc)
            pop_provisional(proc, None)
            if proc in open_runs:  # a lost end event: close the earlier run here
                close(proc, at, "evicted")
            open_runs[proc] = (at, host)
            if value and detail:
                slots[(proc, at)] = str(value)
        elif kind == SUBMIT:
            procs_add(proc)
            if history.submit_time is None or at < history.submit_time:
                history.submit_time = at
            if history.node is None:
                history.node = value
        elif kind == TERMINATED:
            procs_add(proc)
            code = value
            history.exit_codes[proc] = code
            close(proc, at, "success" if code == 0 else "failure", code, terminal=True)
            if code != 0:
                fail(code)
        elif kind == ABORTED:
            evicted = pop_provisional(proc, None)
            if evicted is not None and evicted[1] == REASONED_REMOVAL_EVICT_CODE:
                # evicted, then aborted with no run in between: the removal's
                # own eviction (Schedd.act with a reason logs code 1009, not 1023)
                relabel(evicted[0], "removed")
                evictions -= 1
            close(proc, at, "removed")
            history.aborted.add(proc)
            fail(-1002)
        elif kind in (SHADOW_EXCEPTION, EXECUTABLE_ERROR):
            close(proc, at, "failure")
        elif kind == HELD:
            # condor_hold of a running job logs 004 and then 012: that run
            # ended by the hold, which no replica count makes likelier
            history.holds += 1
            evicted = pop_provisional(proc, None)
            if evicted is not None:
                relabel(evicted[0], "held")
                evictions -= 1
            close(proc, at, "held")
        elif kind == RECONNECT_FAILED:
            close(proc, at, "evicted")
        elif kind == POST_SCRIPT_TERMINATED and history.node is None:
            history.node = value
        elif kind == JOB_AD_INFORMATION and proc in open_runs and value is not None and detail:
            history.keyboard_idle[(proc, open_runs[proc][0])] = value
    history.evictions = evictions
    history.event_count = count
    if open_runs:
        end = now if now is not None else (last_at if last_at is not None else time.time())
        for proc in sorted(open_runs):
            close(proc, end, "running")
    if history.node is None and node_of is not None:
        history.node = node_of.get(cluster)
    return history, runs
