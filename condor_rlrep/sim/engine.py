"""Deterministic discrete-event core of the multi-use cluster simulator.

Model (docs/simulator.md §3, the replication paper §2 and §5):

* one HTC slot per machine; a job runs only on a machine with no user logged
  in; a login evicts the running job (work lost, the job is requeued at the
  head of the queue: it keeps its place, as HTCondor's queue date does);
* the nightly reboot (default 03:00 local time) kills every running job,
  which is requeued;
* a negotiation cycle every ``negotiation_interval`` seconds matches queued
  jobs to free machines; ``0`` matches at once whenever a job or a machine
  becomes available;
* machine choice: uniformly at random among free machines, or the most
  energy-efficient (lowest active watts) first, random among equals;
* every invocation is charged ``run time × active watts`` of its machine.

Shape of the loop (after simpy's heap of ``(time, priority, seq, event)``
with a counter tie-break, made leaner): everything known in advance — logins,
logouts, job and workflow arrivals, reboots, negotiation ticks — is a sorted
stream ordered by ``(time, kind, index)``, merged window by window (a few
tens of thousands of events at a time, so that a year never exists as one
array); only job completions and "owner idle long enough" events, which
depend on the run, live in a ``heapq`` of ``(time, seq, machine)``
(``~machine`` for the latter). Completions sort before stream events at
equal times. A completion whose ``seq`` no longer matches its machine's
current run was cancelled by an eviction and is skipped (a stale pop).
Randomness comes from one injected numpy Generator, drawn in batches.
Machine and job state are plain Python lists indexed by integers (lists
index faster than numpy arrays or ``array`` in CPython); the free machines
are swap-remove arrays, so a uniform pick, an insertion and a removal are
O(1). The busiest paths — a completion, a login that evicts, a logout that
frees a machine — are written out inside :meth:`Engine.run`; the methods
below serve the rarer paths and the workflow layer.

Why one module of this size: it is one hot loop and the state it works on.
:meth:`Engine.run` binds the machine and job columns to locals and inlines
the busiest transitions, and the methods beside it are the same
transitions for the rarer paths (the inlined copies are deliberate: they
save a method call per event, in a loop that handles millions a year).
Split across modules, the two copies of each transition would drift apart
unseen; kept together, each written-out block names the method it copies.

Workflow logic lives in :mod:`condor_rlrep.sim.workflows` and
:mod:`condor_rlrep.sim.runner`; the engine calls
its :class:`Listener` only for jobs that belong to a workflow task.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
import logging
import math
from array import array
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from condor_rlrep.sim.clock import LocalClock
from condor_rlrep.sim.trace import Trace

__all__ = [
    "EngineConfig",
    "MACHINE_CHOICES",
    "Engine",
    "Listener",
    "EngineStats",
    "KIND_LOGIN",
    "KIND_LOGOUT",
    "KIND_REBOOT",
    "KIND_JOB",
    "KIND_WORKFLOW",
    "KIND_NEGOTIATE",
]

log = logging.getLogger(__name__)

# Stream event kinds; the value is also the order of events at equal times.
# A login sorts before a logout so that back-to-back sessions on one machine
# do not open a zero-length window for a job.
KIND_LOGIN = 0
KIND_LOGOUT = 1
KIND_REBOOT = 2
KIND_JOB = 3
KIND_WORKFLOW = 4
KIND_NEGOTIATE = 5
_KIND_SHIFT = 40
_INDEX_MASK = (1 << _KIND_SHIFT) - 1

# Job states
QUEUED, RUNNING, DONE, CANCELLED = 0, 1, 2, 3

# Why an invocation ended (names match outcome.Invocation.ended_by)
SUCCESS, EVICTED, REMOVED, RUNNING_AT_END = "success", "evicted", "removed", "running"

_RANDOM_BATCH = 1 << 16
_NAN = float("nan")
MACHINE_CHOICES = ("random", "efficient", "slot-order")

_JOB_BLOCK = 1 << 14
_CHUNK = 1 << 16


@dataclass(frozen=True)
class EngineConfig:
    negotiation_interval: float = 0.0
    """Seconds between negotiation cycles; 0 matches immediately."""
    machine_choice: Literal["random", "efficient", "slot-order"] = "random"
    """Which free machine a job the workflow layer does not place runs on:
    ``random``; ``efficient``, random among the lowest-watt ones;
    ``slot-order``, the free machine of lowest index, as HTCondor's default
    ``NEGOTIATOR_POST_JOB_RANK`` prefers the lowest ``SlotID`` among slots a
    job ranks equally (a replay's slot k is machine k − 1)."""
    reboot_hour: float | None = 3.0
    """Local hour of the nightly reboot that kills all running jobs; None: none."""
    until: float | None = None
    """Simulated seconds (default: the trace length)."""
    owner_idle: float = 0.0
    """Seconds a machine must be left alone after its last user logs out
    before it takes HTC jobs again (HTCondor's desktop policy waits 15 min
    of keyboard idleness, ``StartIdleTime``); 0: at once."""
    slot_turnaround: float = 0.0
    """Seconds a machine freed by :meth:`Engine.cancel` (a removed replica)
    waits before it can be matched again: live, the startd first shuts the
    removed job down (its starter and processes gone, seconds) before the
    claim can run the next job, where a completed job's slot is reused at
    once by the schedd's claim (docs/simulator.md §3); 0: at once."""

    def __post_init__(self) -> None:
        if not self.owner_idle >= 0:
            raise ValueError(f"owner idle time must be >= 0 s, got {self.owner_idle!r}")
        if not self.negotiation_interval >= 0:
            raise ValueError(f"negotiation interval must be >= 0 s, got {self.negotiation_interval!r}")
        if not (math.isfinite(self.slot_turnaround) and self.slot_turnaround >= 0):
            raise ValueError(f"slot turnaround must be a finite number of seconds >= 0, got {self.slot_turnaround!r}")
        if self.machine_choice not in MACHINE_CHOICES:
            raise ValueError(f"machine choice must be one of {', '.join(MACHINE_CHOICES)}, got {self.machine_choice!r}")
        if self.reboot_hour is not None and not 0 <= self.reboot_hour < 24:
            raise ValueError(f"reboot hour must lie in [0, 24), got {self.reboot_hour!r}")
        if self.until is not None and not self.until > 0:
            raise ValueError(f"simulated time must be > 0 s, got {self.until!r}")


class Listener(Protocol):
    """What the workflow layer hears from the engine."""

    def workflow_start(self, index: int, now: float) -> None:
        """Trace job ``index`` was replaced by a workflow; it arrives now."""

    def invocation_end(self, job: int, owner: int, machine: int, start: float, end: float, reason: str) -> None:
        """An invocation of a workflow job ended (success/evicted/removed/running)."""

    def job_done(self, job: int, owner: int, now: float) -> None:
        """A workflow job finished successfully (after its invocation_end)."""


@dataclass
class EngineStats:
    events: int = 0
    """Model events handled: logins, logouts, job and workflow arrivals,
    reboots, negotiation cycles, job completions, owner-idle and slot-turnaround expiries
    (not: superseded completions, task decisions, replica removals)."""
    evictions_background: int = 0
    evictions_workflow: int = 0
    reboot_kills_background: int = 0
    reboot_kills_workflow: int = 0
    background_energy_j: float = 0.0
    workflow_energy_j: float = 0.0
    """Sum over every workflow-job invocation (for the eq. 3 cross-check)."""
    background_finished: int = 0
    end_time: float = 0.0
    stale_pops: int = 0
    """Completions popped after their run had been evicted or removed (and
    owner-idle expiries superseded by a new login): heap work, not events."""


class Engine:
    """One simulation run over one trace. Create, attach a listener, :meth:`run`."""

    def __init__(
        self,
        trace: Trace,
        config: EngineConfig,
        rng: np.random.Generator,
        *,
        replaced: np.ndarray | None = None,
        listener: Listener | None = None,
        clock: LocalClock | None = None,
    ):
        self.trace = trace
        self.config = config
        self.rng = rng
        self.until = float(config.until if config.until is not None else trace.length)
        self.clock = clock if clock is not None else LocalClock(trace.start, max(self.until, trace.length))
        self.listener = listener
        M = trace.machine_count
        J = trace.job_count
        if M == 0:
            raise ValueError("the trace has no machines")
        self.replaced = np.zeros(J, dtype=bool) if replaced is None else np.asarray(replaced, dtype=bool)
        if self.replaced.shape != (J,):
            raise ValueError("replaced mask must have one entry per trace job")
        self.watts: list[float] = [float(w) for w in trace.active_watts]
        # Machine state
        self.logged: list[int] = [0] * M
        self.run_job: list[int] = [-1] * M
        self.run_seq: list[int] = [-1] * M
        self.run_start: list[float] = [0.0] * M
        self.ready_seq: list[int] = [-1] * M  # pending "idle long enough" event
        # Free machines: one swap-remove list per power class (a single class
        # for random choice), pos[m] its index in its class list or -1.
        if config.machine_choice == "efficient":
            classes, inverse = np.unique(np.asarray(trace.active_watts, dtype=np.float64), return_inverse=True)
            self.cls: list[int] = [int(c) for c in inverse]
            n_classes = len(classes)
        elif config.machine_choice == "slot-order":
            # a class per machine in index order: the lowest non-empty class
            # is the lowest free machine (its list holds only it)
            self.cls = list(range(M))
            n_classes = M
        else:
            self.cls = [0] * M
            n_classes = 1
        self.free_lists: list[list[int]] = [[] for _ in range(n_classes)]
        self._only_list: list[int] | None = self.free_lists[0] if n_classes == 1 else None
        """The free list when there is one class; the loop's fast path."""
        self.pos: list[int] = [-1] * M
        self.low = 0  # lowest class that may be non-empty
        self._nfree = 0  # kept with several classes only; one class: len(_only_list)
        self.freed: list[int] | None = None
        """When a list (a listener that keeps its own order of the free
        machines sets one): every machine that becomes free is appended,
        so the listener learns of additions without a call per event."""
        for m in range(M):
            self._add_free(m)
        # Job state; trace jobs keep their index, workflow jobs are appended.
        # The hottest columns in lists; the others in compact arrays (no
        # object per value, so a year's million jobs leave no long-lived
        # small objects scattered among the ones the run churns through).
        self.jdur = array("d", np.ascontiguousarray(trace.job_duration, dtype=np.float64).tobytes())
        self.jsubmit = array("d", np.ascontiguousarray(trace.job_submit, dtype=np.float64).tobytes())
        self.jowner = array("i", [-1]) * J
        self.jstate: list[int] = [CANCELLED if r else QUEUED for r in self.replaced.tolist()]
        self.jfinish = array("d", [_NAN]) * J
        self.jevict: list[int] = [0] * J
        self.jmachine = array("i", [-1]) * J  # machine of the current/last run
        self.njobs = J
        """Jobs so far; the j* columns are grown in blocks and may be longer."""
        self.queue: deque[int] = deque()
        self.heap: list[tuple[float, int, int]] = []
        self.seq = 0
        self._timers: dict[int, Callable[[float], None]] = {}
        """Callbacks of :meth:`call_at` by their heap ``seq``; empty unless
        the workflow layer delays something (DAGMan's latency)."""
        self.stats = EngineStats()
        self._rand: list[float] = []
        self._rand_i = _RANDOM_BATCH
        self.background_energy_j = 0.0
        self.workflow_energy_j = 0.0
        self._immediate = config.negotiation_interval == 0
        self._reboots = (
            self.clock.daily(config.reboot_hour, self.until) if config.reboot_hour is not None else np.zeros(0)
        )
        self._reboot_times: list[float] = self._reboots.tolist()
        self.now = 0.0

    # -- random numbers, drawn in batches (one Generator, deterministic) ----
    def _u(self) -> float:
        i = self._rand_i
        if i >= _RANDOM_BATCH:
            self._rand = self.rng.random(_RANDOM_BATCH).tolist()
            i = 0
        self._rand_i = i + 1
        return self._rand[i]

    # -- free-machine sets ---------------------------------------------------
    @property
    def nfree(self) -> int:
        """Machines free now."""
        only = self._only_list
        return len(only) if only is not None else self._nfree

    def _add_free(self, m: int) -> None:
        lst = self._only_list
        if lst is None:
            c = self.cls[m]
            lst = self.free_lists[c]
            if c < self.low:
                self.low = c
            self._nfree += 1
        self.pos[m] = len(lst)
        lst.append(m)
        if self.freed is not None:
            self.freed.append(m)

    def _remove_free(self, m: int) -> None:
        pos = self.pos
        lst = self._only_list
        if lst is None:
            lst = self.free_lists[self.cls[m]]
            self._nfree -= 1
        p = pos[m]
        last = lst.pop()
        if last != m:
            lst[p] = last
            pos[last] = p
        pos[m] = -1

    def _run_anywhere(self, j: int, now: float) -> None:
        """Start job ``j`` on a free machine: uniformly at random within the
        lowest class that has one (the only class under random choice; a
        single machine under slot order). Pick, removal from the free set and :meth:`_start` are
        fused: this is the busiest path outside the loop."""
        lst = self._only_list
        if lst is None:
            lists = self.free_lists
            c = self.low
            while not lists[c]:
                c += 1
            self.low = c
            lst = lists[c]
            self._nfree -= 1
        i = self._rand_i
        if i >= _RANDOM_BATCH:
            self._rand = self.rng.random(_RANDOM_BATCH).tolist()
            i = 0
        self._rand_i = i + 1
        p = int(self._rand[i] * len(lst))
        m = lst[p]
        last = lst.pop()
        pos = self.pos
        if last != m:
            lst[p] = last
            pos[last] = p
        pos[m] = -1
        self.run_job[m] = j
        seq = self.seq
        self.seq = seq + 1
        self.run_seq[m] = seq
        self.run_start[m] = now
        self.jstate[j] = RUNNING
        self.jmachine[j] = m
        heapq.heappush(self.heap, (now + self.jdur[j], seq, m))

    def free_machines(self) -> list[int]:
        """Machines free now, in no particular order (for the oracle)."""
        out: list[int] = []
        for lst in self.free_lists:
            out.extend(lst)
        return out

    def running_machines(self) -> list[int]:
        """Machines running a job now, in machine order."""
        run_job = self.run_job
        return [m for m in range(len(run_job)) if run_job[m] >= 0]

    # -- jobs ----------------------------------------------------------------
    def _start(self, j: int, m: int, now: float) -> None:
        self.run_job[m] = j
        seq = self.seq
        self.seq = seq + 1
        self.run_seq[m] = seq
        self.run_start[m] = now
        self.jstate[j] = RUNNING
        self.jmachine[j] = m
        heapq.heappush(self.heap, (now + self.jdur[j], seq, m))

    def _end_run(self, m: int, now: float, reason: str) -> int:
        """Close the invocation on ``m``; the machine is left neither busy nor free."""
        j = self.run_job[m]
        start = self.run_start[m]
        energy = (now - start) * self.watts[m]
        owner = self.jowner[j]
        self.run_job[m] = -1
        self.run_seq[m] = -1
        if owner < 0:
            self.background_energy_j += energy
        else:
            self.workflow_energy_j += energy
            if self.listener is not None:
                self.listener.invocation_end(j, owner, m, start, now, reason)
        return j

    def _queue_empty(self) -> bool:
        """No live job waits (cancelled entries at the head are dropped)."""
        queue = self.queue
        jstate = self.jstate
        while queue and jstate[queue[0]] != QUEUED:
            queue.popleft()
        return not queue

    def _free_now(self) -> bool:
        only = self._only_list
        return bool(only) if only is not None else self._nfree > 0

    def _match_one(self, j: int, now: float) -> None:
        """A job became runnable: run it now if matching is immediate and a
        machine is free, else queue it at the back."""
        if self._immediate and self._free_now() and (not self.queue or self._queue_empty()):
            self._run_anywhere(j, now)
        else:
            self.queue.append(j)

    def _requeue(self, j: int, now: float) -> None:
        self.jstate[j] = QUEUED
        if self._immediate and self._free_now() and (not self.queue or self._queue_empty()):
            self._run_anywhere(j, now)
        else:
            self.queue.appendleft(j)

    def _drain(self, now: float) -> None:
        """Match queued jobs to free machines until one side runs out."""
        queue = self.queue
        jstate = self.jstate
        while queue and self._free_now():
            j = queue.popleft()
            if jstate[j] == QUEUED:
                self._run_anywhere(j, now)

    def _machine_released(self, m: int, now: float) -> None:
        """``m`` has no user and no job now."""
        if self._immediate and self.queue:
            queue = self.queue
            jstate = self.jstate
            while queue:
                j = queue.popleft()
                if jstate[j] == QUEUED:
                    self._start(j, m, now)
                    return
        self._add_free(m)

    # -- API for the workflow layer --------------------------------------------
    def call_at(self, when: float, callback: Callable[[float], None]) -> None:
        """Call ``callback(when)`` at simulated time ``when`` (among the
        heap's entries due then in the order they were made; before stream
        events at the same time).

        Rides the heap as an owner-idle-like entry ``(when, seq, ~0)``: its
        ``seq`` matches no run and no pending idle expiry, so the loop's
        completion path never sees it and only the rare superseded-entry
        branch looks it up — nothing is added to the busy paths, and a run
        that never calls this pays one falsy test per superseded entry."""
        seq = self.seq
        self.seq = seq + 1
        self._timers[seq] = callback
        heapq.heappush(self.heap, (when, seq, -1))

    def submit(self, duration: float, owner: int, now: float, machine: int | None = None) -> int:
        """Submit a workflow job of ``duration`` seconds for task ``owner``.

        ``machine`` (a currently free machine) places it there at once, for
        the oracle; otherwise it is matched like any job.
        """
        j = self._new_job(duration, owner, now)
        if machine is not None:
            if self.pos[machine] < 0:
                raise ValueError(f"machine {machine} is not free")
            self._remove_free(machine)
            self._start(j, machine, now)
        else:
            self._match_one(j, now)
        return j

    def submit_many(self, duration: float, owner: int, now: float, count: int) -> range:
        """Submit ``count`` replicas (jobs) of one task; their ids, in order.

        Replicas land on distinct machines: a machine runs one job at a time.
        """
        first = self.njobs
        end = first + count
        if end > len(self.jdur):
            self._grow(end)
        self.njobs = end
        jdur = self.jdur
        jsubmit = self.jsubmit
        jowner = self.jowner
        jstate = self.jstate
        jmachine = self.jmachine
        run_job = self.run_job
        run_seq = self.run_seq
        run_start = self.run_start
        pos = self.pos
        heap = self.heap
        heappush = heapq.heappush
        queue = self.queue
        only = self._only_list
        immediate = self._immediate
        for j in range(first, end):
            jdur[j] = duration
            jsubmit[j] = now
            jowner[j] = owner
            # _match_one, and _run_anywhere for one class, written out
            if not immediate or (queue and not self._queue_empty()):
                queue.append(j)
            elif only is None:
                if self._nfree:
                    self._run_anywhere(j, now)
                else:
                    queue.append(j)
            elif only:
                i = self._rand_i
                if i >= _RANDOM_BATCH:
                    self._rand = self.rng.random(_RANDOM_BATCH).tolist()
                    i = 0
                self._rand_i = i + 1
                p = int(self._rand[i] * len(only))
                m = only[p]
                last = only.pop()
                if last != m:
                    only[p] = last
                    pos[last] = p
                pos[m] = -1
                run_job[m] = j
                seq = self.seq
                self.seq = seq + 1
                run_seq[m] = seq
                run_start[m] = now
                jstate[j] = RUNNING
                jmachine[j] = m
                heappush(heap, (now + duration, seq, m))
            else:
                queue.append(j)
        return range(first, end)

    def hold_many(self, duration: float, owner: int, now: float, count: int) -> range:
        """Submit ``count`` replicas of task ``owner`` on hold: they take
        ids now (after any replicas submitted just before, so a task's jobs
        stay consecutive) but wait outside the queue, drawing no energy,
        until :meth:`release`. A held job that is :meth:`cancel`-led never runs."""
        first = self.njobs
        for _ in range(count):
            self._new_job(duration, owner, now)
        return range(first, self.njobs)

    def release(self, j: int, now: float, machine: int | None = None) -> None:
        """Let held job ``j`` be matched like a job submitted now (it goes to
        the back of the queue if it cannot run at once), or start it on
        ``machine`` (a free one). Release each held job once."""
        if self.jstate[j] != QUEUED or self.jmachine[j] >= 0:
            return
        if machine is not None:
            if self.pos[machine] < 0:
                raise ValueError(f"machine {machine} is not free")
            self._remove_free(machine)
            self._start(j, machine, now)
        else:
            self._match_one(j, now)

    def _new_job(self, duration: float, owner: int, now: float) -> int:
        j = self.njobs
        if j == len(self.jdur):
            self._grow(j + 1)
        self.njobs = j + 1
        self.jdur[j] = duration
        self.jsubmit[j] = now
        self.jowner[j] = owner
        return j

    def _grow(self, needed: int) -> None:
        """Grow every job column by blocks of defaults (a queued job)."""
        block = _JOB_BLOCK * max(1, -(-(needed - len(self.jdur)) // _JOB_BLOCK))
        self.jdur.extend(array("d", bytes(8 * block)))
        self.jsubmit.extend(array("d", bytes(8 * block)))
        self.jowner.extend(array("i", [-1]) * block)
        self.jstate.extend([QUEUED] * block)
        self.jfinish.extend(array("d", [_NAN]) * block)
        self.jevict.extend([0] * block)
        self.jmachine.extend(array("i", [-1]) * block)

    def cancel(self, j: int, now: float) -> None:
        """Remove a job: kill its running invocation, or drop it from the queue."""
        state = self.jstate[j]
        if state == RUNNING:
            m = self.jmachine[j]
            self.jstate[j] = CANCELLED
            self._end_run(m, now, REMOVED)
            turnaround = self.config.slot_turnaround
            if turnaround > 0:
                # back after the turnaround, as an owner-idle expiry (a login
                # meanwhile supersedes it: the logout frees the machine)
                seq = self.seq
                self.seq = seq + 1
                self.ready_seq[m] = seq
                heapq.heappush(self.heap, (now + turnaround, seq, ~m))
            else:
                self._machine_released(m, now)
        elif state == QUEUED:
            self.jstate[j] = CANCELLED  # skipped lazily when popped

    @property
    def jfirst(self) -> np.ndarray:
        """Per job (after :meth:`run`): 1 if its first invocation completed,
        0 if it ended otherwise (evicted, killed by the reboot, removed, still
        running at the end), -1 if it never ran. Derived from the final
        state: the first run succeeded exactly when the job is done and was
        never evicted."""
        n = self.njobs
        state = np.asarray(self.jstate[:n], dtype=np.int8)
        ran = np.frombuffer(self.jmachine, dtype=np.int32, count=n) >= 0
        clean = np.asarray(self.jevict[:n], dtype=np.int64) == 0
        return np.where(ran, np.where((state == DONE) & clean, 1, 0), -1)

    def track_logins(self) -> None:
        """Keep each machine's next login start up to date (for the oracle);
        call before :meth:`run`."""
        tr = self.trace
        L = tr.login_count
        order = np.lexsort((np.arange(L), tr.login_start, tr.login_machine))
        lm = tr.login_machine[order]
        ls = tr.login_start[order].astype(np.float64)
        same = np.zeros(L, dtype=bool)
        same[:-1] = lm[:-1] == lm[1:]
        nxt_sorted = np.full(L, np.inf)
        nxt_sorted[:-1] = np.where(same[:-1], ls[1:], np.inf)
        self._next_after = np.empty(L, dtype=np.float64)
        self._next_after[order] = nxt_sorted
        first = np.full(tr.machine_count, np.inf)
        group_start = np.ones(L, dtype=bool)
        group_start[1:] = lm[1:] != lm[:-1]
        first[lm[group_start]] = ls[group_start]
        self.next_login_start = first
        """Start of the next login on each machine not yet begun (inf: none)."""

    def next_login(self, machines: np.ndarray) -> np.ndarray:
        """Start of the next login on each of ``machines`` (needs :meth:`track_logins`)."""
        return self.next_login_start[machines]

    def next_reboot(self, now: float) -> float:
        times = self._reboot_times  # a list: a bisect per task, no numpy call
        k = bisect_right(times, now)
        return times[k] if k < len(times) else math.inf

    # -- the stream of known events --------------------------------------------
    def _sources(self) -> tuple[list[tuple[np.ndarray, np.ndarray | None, int]], int]:
        """Each kind of known event as (times sorted, trace index or None
        for the position itself, kind), and how many events they hold (all
        before ``until``)."""
        tr = self.trace
        until = self.until
        ls = np.asarray(tr.login_start, dtype=np.float64)
        le = np.asarray(tr.login_end, dtype=np.float64)
        n_logins = int(np.searchsorted(ls, until, side="left"))  # login starts are sorted
        logout_order = np.argsort(le, kind="stable")  # equal ends keep index order
        logout_order = logout_order[: int(np.searchsorted(le[logout_order], until, side="left"))]
        submit = np.asarray(tr.job_submit, dtype=np.float64)
        in_span = submit < until
        background = np.flatnonzero(in_span & ~self.replaced)
        workflows = np.flatnonzero(in_span & self.replaced)
        small = np.int32 if max(len(le), len(submit)) < 2**31 else np.int64
        sources = [
            (ls[:n_logins], None, KIND_LOGIN),
            (le[logout_order], logout_order.astype(small), KIND_LOGOUT),
            (self._reboots, None, KIND_REBOOT),
            (submit[background], background.astype(small), KIND_JOB),
            (submit[workflows], workflows.astype(small), KIND_WORKFLOW),
        ]
        interval = self.config.negotiation_interval
        if interval > 0:
            sources.append((np.arange(interval, until, interval), None, KIND_NEGOTIATE))
        return sources, sum(len(t) for t, _, _ in sources)

    def _windows(self, sources: list[tuple[np.ndarray, np.ndarray | None, int]], total: int):
        """The merged stream, one time window at a time: (times, kinds,
        indices, machines of logins and logouts) sorted by (time, kind,
        index), each about ``_CHUNK`` events.
        Windows split time, so equal times never straddle two of them."""
        until = self.until
        login_machine = np.asarray(self.trace.login_machine, dtype=np.int64)
        count = max(1, -(-total // _CHUNK))
        edges = [until * k / count for k in range(1, count)] + [math.inf]
        lo = [0] * len(sources)
        for edge in edges:
            parts_t = []
            parts_c = []
            for s, (times, index, kind) in enumerate(sources):
                a = lo[s]
                b = int(np.searchsorted(times, edge, side="left")) if edge != math.inf else len(times)
                if b > a:
                    parts_t.append(times[a:b])
                    ids = np.arange(a, b, dtype=np.int64) if index is None else index[a:b].astype(np.int64)
                    parts_c.append((np.int64(kind) << _KIND_SHIFT) | ids)
                lo[s] = b
            if not parts_t:
                continue
            times = np.concatenate(parts_t)
            codes = np.concatenate(parts_c)
            order = np.lexsort((codes, times))
            codes = codes[order]
            kinds = codes >> _KIND_SHIFT
            index = codes & _INDEX_MASK
            # the machine of each login and logout (0 for other kinds)
            machine = login_machine[np.where(kinds <= KIND_LOGOUT, index, 0)] if len(login_machine) else kinds
            yield times[order].tolist(), kinds.tolist(), index.tolist(), machine.tolist()

    # -- the loop --------------------------------------------------------------
    def run(self, progress: Callable[[float], None] | None = None) -> EngineStats:
        """Run to the end of the trace (or ``until``); ``progress(fraction)``
        is called now and then."""
        sources, n_stream = self._sources()
        until = self.until
        heap = self.heap
        heappop = heapq.heappop
        heappush = heapq.heappush
        logged = self.logged
        run_job = self.run_job
        run_seq = self.run_seq
        run_start = self.run_start
        watts = self.watts
        pos = self.pos
        jdur = self.jdur
        jowner = self.jowner
        jstate = self.jstate
        jfinish = self.jfinish
        jevict = self.jevict
        jmachine = self.jmachine
        queue = self.queue
        listener = self.listener
        invocation_end = listener.invocation_end if listener is not None else None
        job_done = listener.job_done if listener is not None else None
        workflow_start = listener.workflow_start if listener is not None else None
        stats = self.stats
        next_login = getattr(self, "next_login_start", None)
        next_after = self._next_after.tolist() if next_login is not None else None
        ready_seq = self.ready_seq
        timers = self._timers
        idle = self.config.owner_idle
        immediate = self._immediate
        only = self._only_list  # None: several power classes (efficient choice)
        freed = self.freed  # None unless a listener keeps its own order of free machines
        released = self._machine_released
        run_anywhere = self._run_anywhere
        queue_empty = self._queue_empty
        completions = stale = finished = idle_events = 0
        evicted_bg = evicted_wf = 0
        bg_energy = self.background_energy_j  # synced around the calls that add to it
        for chunk_t, chunk_k, chunk_j, chunk_m in self._windows(sources, n_stream):
            for ts, kind, idx, lm in zip(chunk_t, chunk_k, chunk_j, chunk_m):
                # Completions due before (or at) this stream event go first.
                while heap and heap[0][0] <= ts:
                    t, seq, m = heappop(heap)
                    if run_seq[m] != seq:
                        # Superseded, or an owner-idle expiry (~machine: a
                        # seq never equals a run's, so it lands here too).
                        if m < 0:
                            m = ~m
                            if ready_seq[m] == seq:
                                ready_seq[m] = -1
                                idle_events += 1
                                released(m, t)
                                continue
                            if timers and seq in timers:  # call_at
                                timers.pop(seq)(t)
                                continue
                        stale += 1
                        continue
                    completions += 1
                    j = run_job[m]
                    jstate[j] = DONE
                    jfinish[j] = t
                    run_job[m] = -1
                    run_seq[m] = -1
                    owner = jowner[j]
                    if owner < 0:
                        finished += 1
                        bg_energy += (t - run_start[m]) * watts[m]
                    else:
                        start = run_start[m]
                        self.workflow_energy_j += (t - start) * watts[m]
                        if invocation_end is not None:
                            invocation_end(j, owner, m, start, t, SUCCESS)
                    # _machine_released, written out
                    if immediate and queue:
                        while queue:
                            nj = queue.popleft()
                            if jstate[nj] == QUEUED:
                                run_job[m] = nj
                                seq = self.seq
                                self.seq = seq + 1
                                run_seq[m] = seq
                                run_start[m] = t
                                jstate[nj] = RUNNING
                                jmachine[nj] = m
                                heappush(heap, (t + jdur[nj], seq, m))
                                break
                        else:
                            released(m, t)
                    elif only is not None:
                        pos[m] = len(only)
                        only.append(m)
                        if freed is not None:
                            freed.append(m)
                    else:
                        released(m, t)
                    if owner >= 0 and job_done is not None:
                        job_done(j, owner, t)
                if kind == KIND_LOGIN:
                    m = lm
                    if next_login is not None:
                        next_login[m] = next_after[idx]
                    c = logged[m]
                    logged[m] = c + 1
                    if c == 0:
                        ready_seq[m] = -1  # back before the idle time was up
                        j = run_job[m]
                        if j >= 0:
                            # _end_run(EVICTED), written out
                            start = run_start[m]
                            run_job[m] = -1
                            run_seq[m] = -1
                            jevict[j] += 1
                            owner = jowner[j]
                            if owner < 0:
                                bg_energy += (ts - start) * watts[m]
                                evicted_bg += 1
                            else:
                                self.workflow_energy_j += (ts - start) * watts[m]
                                evicted_wf += 1
                                if invocation_end is not None:
                                    invocation_end(j, owner, m, start, ts, EVICTED)
                            # _requeue: back to the head of the queue, or at once elsewhere
                            jstate[j] = QUEUED
                            if immediate and (only if only is not None else self._nfree) and (
                                not queue or queue_empty()
                            ):
                                run_anywhere(j, ts)
                            else:
                                queue.appendleft(j)
                        elif pos[m] >= 0:
                            if only is not None:
                                p = pos[m]
                                last = only.pop()
                                if last != m:
                                    only[p] = last
                                    pos[last] = p
                                pos[m] = -1
                            else:
                                self._remove_free(m)
                elif kind == KIND_LOGOUT:
                    m = lm
                    c = logged[m] - 1
                    logged[m] = c
                    if c == 0:
                        if idle > 0:
                            seq = self.seq
                            self.seq = seq + 1
                            ready_seq[m] = seq
                            heappush(heap, (ts + idle, seq, ~m))
                        elif immediate and queue:
                            released(m, ts)
                        elif only is not None:
                            pos[m] = len(only)
                            only.append(m)
                            if freed is not None:
                                freed.append(m)
                        else:
                            released(m, ts)
                elif kind == KIND_JOB:
                    # _match_one and (one class) _run_anywhere, written out
                    if not immediate or (queue and not queue_empty()):
                        queue.append(idx)
                    elif only is None:
                        if self._nfree:
                            run_anywhere(idx, ts)
                        else:
                            queue.append(idx)
                    elif only:
                        i = self._rand_i
                        if i >= _RANDOM_BATCH:
                            self._rand = self.rng.random(_RANDOM_BATCH).tolist()
                            i = 0
                        self._rand_i = i + 1
                        p = int(self._rand[i] * len(only))
                        m = only[p]
                        last = only.pop()
                        if last != m:
                            only[p] = last
                            pos[last] = p
                        pos[m] = -1
                        run_job[m] = idx
                        seq = self.seq
                        self.seq = seq + 1
                        run_seq[m] = seq
                        run_start[m] = ts
                        jstate[idx] = RUNNING
                        jmachine[idx] = m
                        heappush(heap, (ts + jdur[idx], seq, m))
                    else:
                        queue.append(idx)
                elif kind == KIND_WORKFLOW:
                    if workflow_start is not None:
                        workflow_start(idx, ts)
                elif kind == KIND_REBOOT:
                    self.background_energy_j = bg_energy
                    self._reboot(ts)
                    bg_energy = self.background_energy_j
                else:
                    self._drain(ts)
            if progress is not None:
                progress(min(1.0, (chunk_t[-1] if chunk_t else until) / until))
        self.background_energy_j = bg_energy
        stats.evictions_background += evicted_bg
        stats.evictions_workflow += evicted_wf
        # Completions after the last stream event, up to the end of the run.
        while heap and heap[0][0] <= until:
            t, seq, m = heappop(heap)
            if m < 0:
                m = ~m
                if ready_seq[m] == seq:
                    ready_seq[m] = -1
                    idle_events += 1
                    self._machine_released(m, t)
                elif seq in timers:  # call_at
                    timers.pop(seq)(t)
                else:
                    stale += 1
                continue
            if run_seq[m] != seq:
                stale += 1
                continue
            completions += 1
            j = run_job[m]
            jstate[j] = DONE
            jfinish[j] = t
            self._end_run(m, t, SUCCESS)
            if jowner[j] < 0:
                finished += 1
            self._machine_released(m, t)
            if jowner[j] >= 0 and listener is not None:
                listener.job_done(j, jowner[j], t)
        stats.background_finished = finished
        # Charge what is still running up to the end.
        self.now = until
        for m in self.running_machines():
            self._end_run(m, until, RUNNING_AT_END)
        stats.background_energy_j = self.background_energy_j
        stats.workflow_energy_j = self.workflow_energy_j
        stats.events = n_stream + completions + idle_events
        stats.stale_pops = stale
        stats.end_time = until
        if progress is not None:
            progress(1.0)
        return stats

    def _reboot(self, now: float) -> None:
        jowner = self.jowner
        killed = self.running_machines()
        requeue: list[int] = []
        for m in killed:
            j = self._end_run(m, now, EVICTED)
            self.jevict[j] += 1
            if jowner[j] < 0:
                self.stats.reboot_kills_background += 1
            else:
                self.stats.reboot_kills_workflow += 1
            requeue.append(j)
            if self.logged[m] == 0:
                self._add_free(m)
        # Killed jobs go back to the head of the queue in their old order.
        for j in reversed(requeue):
            self.jstate[j] = QUEUED
            self.queue.appendleft(j)
        if self._immediate:
            self._drain(now)
