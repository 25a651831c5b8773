"""Deterministic discrete-event core of the multi-use cluster simulator.

Model (DESIGN §5, the replication paper §2 and §5):

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

Shape of the loop (STYLE.md: simpy's heap of ``(time, priority, seq, event)``
with a counter tie-break, made leaner): everything known in advance — logins,
logouts, job and workflow arrivals, reboots, negotiation ticks — is merged
once into one sorted numpy stream ordered by ``(time, kind, index)``; only
job completions and "owner idle long enough" events, which depend on the
run, live in a ``heapq`` of ``(time, seq, machine)`` (``~machine`` for the
latter). Completions sort before stream events at equal
times. A completion whose ``seq`` no longer matches its machine's current
run was cancelled by an eviction and is skipped. Randomness comes from one
injected numpy Generator, drawn in batches. Machine and job state are plain
Python lists indexed by integers; the free machines are swap-remove arrays,
so a uniform pick, an insertion and a removal are O(1).

Workflow logic lives in :mod:`condor_rlrep.sim.workflows`; the engine calls
its :class:`Listener` only for jobs that belong to a workflow task.
"""

from __future__ import annotations

import heapq
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from condor_rlrep.sim.clock import LocalClock
from condor_rlrep.sim.trace import Trace

__all__ = [
    "EngineConfig",
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
_JOB_BLOCK = 1 << 14
_CHUNK = 1 << 16


@dataclass(frozen=True)
class EngineConfig:
    negotiation_interval: float = 0.0
    """Seconds between negotiation cycles; 0 matches immediately."""
    machine_choice: Literal["random", "efficient"] = "random"
    reboot_hour: float | None = 3.0
    """Local hour of the nightly reboot that kills all running jobs; None: none."""
    until: float | None = None
    """Simulated seconds (default: the trace length)."""
    owner_idle: float = 0.0
    """Seconds a machine must be left alone after its last user logs out
    before it takes HTC jobs again (HTCondor's desktop policy waits 15 min
    of keyboard idleness, ``StartIdleTime``); 0: at once."""

    def __post_init__(self) -> None:
        if not self.owner_idle >= 0:
            raise ValueError(f"owner idle time must be >= 0 s, got {self.owner_idle!r}")
        if not self.negotiation_interval >= 0:
            raise ValueError(f"negotiation interval must be >= 0 s, got {self.negotiation_interval!r}")
        if self.machine_choice not in ("random", "efficient"):
            raise ValueError(f"machine choice must be 'random' or 'efficient', got {self.machine_choice!r}")
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
    reboots, negotiation cycles, job completions and owner-idle expiries
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
        else:
            self.cls = [0] * M
            n_classes = 1
        self.free_lists: list[list[int]] = [[] for _ in range(n_classes)]
        self._only_list: list[int] | None = self.free_lists[0] if n_classes == 1 else None
        self.pos: list[int] = [-1] * M
        self.low = 0  # lowest class that may be non-empty
        self.nfree = 0
        for m in range(M):
            self._add_free(m)
        # Job state; trace jobs keep their index, workflow jobs are appended.
        self.jdur: list[float] = trace.job_duration.astype(np.float64).tolist()
        self.jsubmit: list[float] = trace.job_submit.astype(np.float64).tolist()
        self.jowner: list[int] = [-1] * J
        self.jstate: list[int] = [CANCELLED if r else QUEUED for r in self.replaced.tolist()]
        self.jfinish: list[float] = [float("nan")] * J
        self.jevict: list[int] = [0] * J
        self.jfirst: list[int] = [-1] * J  # 1 first invocation succeeded, 0 not, -1 none yet
        self.jmachine: list[int] = [-1] * J  # machine of the current/last run
        self.njobs = J
        """Jobs so far; the j* lists are grown in blocks and may be longer."""
        self.queue: deque[int] = deque()
        self.heap: list[tuple[float, int, int]] = []
        self.seq = 0
        self.stats = EngineStats()
        self._rand: list[float] = []
        self._rand_i = _RANDOM_BATCH
        self.background_energy_j = 0.0
        self.workflow_energy_j = 0.0
        self._immediate = config.negotiation_interval == 0
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
    def _add_free(self, m: int) -> None:
        c = self.cls[m]
        lst = self.free_lists[c]
        self.pos[m] = len(lst)
        lst.append(m)
        if c < self.low:
            self.low = c
        self.nfree += 1

    def _remove_free(self, m: int) -> None:
        pos = self.pos
        lst = self.free_lists[self.cls[m]]
        p = pos[m]
        last = lst.pop()
        if last != m:
            lst[p] = last
            pos[last] = p
        pos[m] = -1
        self.nfree -= 1

    def _run_anywhere(self, j: int, now: float) -> None:
        """Start job ``j`` on a free machine: uniformly at random within the
        lowest power class that has one (the only class under random
        choice). Pick, removal from the free set and :meth:`_start` are fused:
        this is the busiest path of the simulator."""
        lst = self._only_list
        if lst is None:
            lists = self.free_lists
            c = self.low
            while not lists[c]:
                c += 1
            self.low = c
            lst = lists[c]
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
        self.nfree -= 1
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
        if self.jfirst[j] < 0:
            self.jfirst[j] = 1 if reason == SUCCESS else 0
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

    def _match_one(self, j: int, now: float) -> None:
        """A job became runnable: run it now if matching is immediate and a
        machine is free, else queue it at the back."""
        if self._immediate and self.nfree and (not self.queue or self._queue_empty()):
            self._run_anywhere(j, now)
        else:
            self.queue.append(j)

    def _requeue(self, j: int, now: float) -> None:
        self.jstate[j] = QUEUED
        if self._immediate and self.nfree and (not self.queue or self._queue_empty()):
            self._run_anywhere(j, now)
        else:
            self.queue.appendleft(j)

    def _drain(self, now: float) -> None:
        """Match queued jobs to free machines until one side runs out."""
        queue = self.queue
        jstate = self.jstate
        while queue and self.nfree:
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
        lst = self._only_list
        if lst is None:
            c = self.cls[m]
            lst = self.free_lists[c]
            if c < self.low:
                self.low = c
        self.pos[m] = len(lst)
        lst.append(m)
        self.nfree += 1

    # -- API for the workflow layer --------------------------------------------
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
        new_job = self._new_job
        match = self._match_one
        for _ in range(count):
            match(new_job(duration, owner, now), now)
        return range(first, first + count)

    def _new_job(self, duration: float, owner: int, now: float) -> int:
        j = self.njobs
        if j == len(self.jdur):
            # Grow every job list by one block of defaults (a queued job).
            block = _JOB_BLOCK
            self.jdur.extend([0.0] * block)
            self.jsubmit.extend([0.0] * block)
            self.jowner.extend([-1] * block)
            self.jstate.extend([QUEUED] * block)
            self.jfinish.extend([_NAN] * block)
            self.jevict.extend([0] * block)
            self.jfirst.extend([-1] * block)
            self.jmachine.extend([-1] * block)
        self.njobs = j + 1
        self.jdur[j] = duration
        self.jsubmit[j] = now
        self.jowner[j] = owner
        return j

    def cancel(self, j: int, now: float) -> None:
        """Remove a job: kill its running invocation, or drop it from the queue."""
        state = self.jstate[j]
        if state == RUNNING:
            m = self.jmachine[j]
            self.jstate[j] = CANCELLED
            self._end_run(m, now, REMOVED)
            self._machine_released(m, now)
        elif state == QUEUED:
            self.jstate[j] = CANCELLED  # skipped lazily when popped

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
        times = self._reboots
        k = int(np.searchsorted(times, now, side="right"))
        return float(times[k]) if k < len(times) else float("inf")

    # -- the stream of known events --------------------------------------------
    def _stream(self) -> tuple[np.ndarray, np.ndarray]:
        tr = self.trace
        until = self.until
        parts_t: list[np.ndarray] = []
        parts_c: list[np.ndarray] = []

        def add(times: np.ndarray, kind: int, index: np.ndarray | None = None) -> None:
            times = np.asarray(times, dtype=np.float64)
            idx = np.arange(len(times), dtype=np.int64) if index is None else index.astype(np.int64)
            keep = times < until
            parts_t.append(times[keep])
            parts_c.append((np.int64(kind) << _KIND_SHIFT) | idx[keep])

        add(tr.login_start, KIND_LOGIN)
        add(tr.login_end, KIND_LOGOUT)
        self._reboots = (
            self.clock.daily(self.config.reboot_hour, until)
            if self.config.reboot_hour is not None
            else np.zeros(0)
        )
        add(self._reboots, KIND_REBOOT)
        jobs = np.arange(tr.job_count, dtype=np.int64)
        add(tr.job_submit[~self.replaced], KIND_JOB, jobs[~self.replaced])
        add(tr.job_submit[self.replaced], KIND_WORKFLOW, jobs[self.replaced])
        interval = self.config.negotiation_interval
        if interval > 0:
            add(np.arange(interval, until, interval), KIND_NEGOTIATE)
        times = np.concatenate(parts_t)
        codes = np.concatenate(parts_c)
        order = np.lexsort((codes, times))
        return times[order], codes[order]

    # -- the loop --------------------------------------------------------------
    def run(self, progress: Callable[[float], None] | None = None) -> EngineStats:
        """Run to the end of the trace (or ``until``); ``progress(fraction)``
        is called now and then."""
        times, codes = self._stream()
        n = len(times)
        until = self.until
        heap = self.heap
        heappop = heapq.heappop
        logged = self.logged
        run_job = self.run_job
        run_seq = self.run_seq
        pos = self.pos
        jowner = self.jowner
        jstate = self.jstate
        jfinish = self.jfinish
        jevict = self.jevict
        login_machine = self.trace.login_machine
        listener = self.listener
        stats = self.stats
        next_after = getattr(self, "_next_after", None)
        next_login = getattr(self, "next_login_start", None)
        ready_seq = self.ready_seq
        idle = self.config.owner_idle
        events = 0
        finished = 0
        n_logins = len(login_machine)
        end_run = self._end_run
        released = self._machine_released
        for lo in range(0, n, _CHUNK):
            codes_np = codes[lo : lo + _CHUNK]
            index_np = codes_np & _INDEX_MASK
            chunk_t = times[lo : lo + _CHUNK].tolist()
            chunk_k = (codes_np >> _KIND_SHIFT).tolist()
            chunk_j = index_np.tolist()
            login_i = np.minimum(index_np, max(n_logins - 1, 0))
            chunk_m = login_machine[login_i].tolist() if n_logins else chunk_j
            chunk_n = next_after[login_i].tolist() if next_after is not None and n_logins else chunk_t
            for ts, kind, idx, m, nxt in zip(chunk_t, chunk_k, chunk_j, chunk_m, chunk_n):
                # Completions due before (or at) this stream event go first.
                while heap and heap[0][0] <= ts:
                    t, seq, mm = heappop(heap)
                    if mm < 0:  # a machine's owner has been away long enough
                        mm = ~mm
                        if ready_seq[mm] == seq:
                            ready_seq[mm] = -1
                            events += 1
                            released(mm, t)
                        continue
                    if run_seq[mm] != seq:
                        continue  # evicted or killed since it was scheduled
                    events += 1
                    j = run_job[mm]
                    jstate[j] = DONE
                    jfinish[j] = t
                    end_run(mm, t, SUCCESS)
                    owner = jowner[j]
                    released(mm, t)
                    if owner < 0:
                        finished += 1
                    elif listener is not None:
                        listener.job_done(j, owner, t)
                events += 1
                if kind == KIND_LOGIN:
                    if next_login is not None:
                        next_login[m] = nxt
                    c = logged[m]
                    logged[m] = c + 1
                    if c == 0:
                        ready_seq[m] = -1  # back before the idle time was up
                        if run_job[m] >= 0:
                            j = end_run(m, ts, EVICTED)
                            jevict[j] += 1
                            if jowner[j] < 0:
                                stats.evictions_background += 1
                            else:
                                stats.evictions_workflow += 1
                            self._requeue(j, ts)
                        elif pos[m] >= 0:
                            self._remove_free(m)
                elif kind == KIND_LOGOUT:
                    c = logged[m] - 1
                    logged[m] = c
                    if c == 0:
                        if idle > 0:
                            seq = self.seq
                            self.seq = seq + 1
                            ready_seq[m] = seq
                            heapq.heappush(heap, (ts + idle, seq, ~m))
                        else:
                            released(m, ts)
                elif kind == KIND_JOB:
                    self._match_one(idx, ts)
                elif kind == KIND_WORKFLOW:
                    if listener is not None:
                        listener.workflow_start(idx, ts)
                elif kind == KIND_REBOOT:
                    self._reboot(ts)
                else:
                    self._drain(ts)
            if progress is not None:
                progress(min(1.0, (chunk_t[-1] if chunk_t else until) / until))
        stats.background_finished = finished
        # Completions after the last stream event, up to the end of the run.
        while heap and heap[0][0] <= until:
            t, seq, m = heappop(heap)
            if m < 0:
                m = ~m
                if ready_seq[m] == seq:
                    ready_seq[m] = -1
                    events += 1
                    self._machine_released(m, t)
                continue
            if run_seq[m] != seq:
                continue
            events += 1
            j = run_job[m]
            jstate[j] = DONE
            jfinish[j] = t
            self._end_run(m, t, SUCCESS)
            if jowner[j] < 0:
                stats.background_finished += 1
            self._machine_released(m, t)
            if jowner[j] >= 0 and listener is not None:
                listener.job_done(j, jowner[j], t)
        # Charge what is still running up to the end.
        self.now = until
        for m in self.running_machines():
            self._end_run(m, until, RUNNING_AT_END)
        stats.background_energy_j = self.background_energy_j
        stats.workflow_energy_j = self.workflow_energy_j
        stats.events = events
        stats.end_time = until
        if progress is not None:
            progress(1.0)
        return stats

    def _reboot(self, now: float) -> None:
        run_job = self.run_job
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
        del run_job
        # Killed jobs go back to the head of the queue in their old order.
        for j in reversed(requeue):
            self.jstate[j] = QUEUED
            self.queue.appendleft(j)
        if self._immediate:
            self._drain(now)
