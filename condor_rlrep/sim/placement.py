"""What a pool knows about its machines' owners at a decision: how long each
free machine has been left alone (HTCondor's ``KeyboardIdle``).

Only the past is used: the last logout of a machine that is free now is the
latest session end at or before now. (A session that ends later started
later too, or the machine would not be free.) A machine nobody has used
since the trace began counts as idle for ever; it ranks first.

:class:`IdleClock` keeps each machine's last logout as time advances and
answers for any set of free machines with one numpy gather (the reference);
:class:`IdleOrder` keeps the free machines of a running engine in that
order as they come and go, so that a choice costs O(k log n), not O(n).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import heapq
import math

import numpy as np

__all__ = ["IdleClock", "IdleOrder", "hour_of_week", "tie_rank"]

_BLOCK = 1 << 16
_SCATTER = 2654435761
"""Knuth's multiplicative-hash constant (odd, so ``m·_SCATTER mod 2³²`` is a bijection)."""


def tie_rank(machine: int) -> int:
    """Where a machine goes among free machines of equal idle time and
    power class: a fixed scatter of its number (Knuth's multiplicative
    hash, a bijection on 32 bits), the same on every CPU and in every run.
    Not the number itself: machines are numbered room by room, and a
    room's closing frees its machines at one second, so ties by number
    would put a task's replicas in one room, whose owners come and go
    together (a 3-day ``model:3`` run spent 15 % more replica energy so)."""
    return (machine * _SCATTER) & 0xFFFFFFFF


class IdleClock:
    """Last logout of each machine before a moment, from a trace's logins.

    Queries must come in non-decreasing time (a simulation's decisions do):
    the clock walks the logins in order of their end once, so a query costs
    the logouts since the previous one plus one gather over the machines.
    """

    def __init__(self, login_machine: np.ndarray, login_end: np.ndarray, machines: int):
        lm = np.asarray(login_machine, dtype=np.int64)
        le = np.asarray(login_end, dtype=np.float64)
        if lm.shape != le.shape:
            raise ValueError("login machines and ends must have the same length")
        if len(lm) and (lm.min() < 0 or lm.max() >= machines):
            raise ValueError("a login names a machine outside the trace")
        self.machines = machines
        order = np.argsort(le, kind="stable")
        # The logouts in end order stay arrays; the clock walks them as
        # lists (faster one at a time) a block at a time: a year's 1.2 M as
        # Python lists would hold ~90 MB for the whole run.
        self._all_machine = lm[order].astype(np.int32 if machines < 2**31 else np.int64)
        self._all_end = le[order]
        self._block = 0
        self._machine: list[int] = []
        self._end: list[float] = []
        self._next = 0
        self._load_block()
        self._now = -np.inf
        self.last_list: list[float] = [-math.inf] * machines
        """Latest logout so far per machine (``-inf``: none yet). A list, not an
        array: the engine's hot path indexes it one machine at a time, and
        writing a numpy element per logout cost more than the gathers it saved."""

    def _load_block(self) -> None:
        """The next block of logouts as lists (empty lists: none left)."""
        a = self._block
        b = min(a + _BLOCK, len(self._all_end))
        self._block = b
        self._machine = self._all_machine[a:b].tolist()
        self._end = self._all_end[a:b].tolist()
        self._next = 0

    @classmethod
    def of_trace(cls, trace) -> IdleClock:
        return cls(trace.login_machine, trace.login_end, trace.machine_count)

    def advance(self, now: float) -> None:
        """Take in every logout at or before ``now``."""
        if now < self._now:
            raise ValueError(f"idle clock queried at {now!r} after {self._now!r}: time runs forwards")
        self._now = now
        i = self._next
        ends = self._end
        n = len(ends)
        while i < n and ends[i] <= now:
            last_list = self.last_list
            machine = self._machine
            while i < n and ends[i] <= now:
                last_list[machine[i]] = ends[i]  # in end order: the latest wins
                i += 1
            self._next = i
            if i == n:  # the block is used up: on to the next one
                self._load_block()
                i = 0
                ends = self._end
                n = len(ends)

    def last_logout(self, machines: np.ndarray, now: float) -> np.ndarray:
        """Latest login end ``<= now`` of each machine (``-inf``: none yet)."""
        self.advance(now)
        return np.array(self.last_list)[np.asarray(machines, dtype=np.int64)]

    def longest_idle(self, free: Sequence[int], now: float, count: int,
                     classes: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``count`` of the ``free`` machines, longest idle first, and
        their idle seconds. Equal idle times go by power class (``classes``,
        indexed by machine; none: one class), then :func:`tie_rank`: a rule
        of the model's own, so that the choice is the same on every CPU
        (numpy's partition picks among equal keys by its SIMD level)."""
        if count <= 0 or not len(free):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        ids = np.asarray(free, dtype=np.int64)
        idle = now - self.last_logout(ids, now)
        power = np.zeros(len(ids), dtype=np.int64) if classes is None else np.asarray(classes, dtype=np.int64)[ids]
        top = np.lexsort(((ids * _SCATTER) & 0xFFFFFFFF, power, -idle))[:count]  # tie_rank, vectorised
        return ids[top], idle[top]


class IdleOrder:
    """The free machines of an :class:`~condor_rlrep.sim.engine.Engine`,
    longest idle first, kept as the engine runs: what
    :meth:`IdleClock.longest_idle` answers for ``engine.free_machines()``
    (with the engine's power classes), without looking at every free
    machine per query.

    Entries ``(last logout, tie key, machine)`` stand for the free machines,
    the tie key being the power class above :func:`tie_rank`'s 32 bits, so
    that the smallest entry is the next answer, ties included.
    The engine appends each machine that becomes free to ``engine.freed``;
    a query takes those in, then takes the smallest entries. Nearly half the
    machines come free at a logout, so with the newest key yet: those
    entries queue in order in a deque (the tail), the rest go into a heap,
    and a query takes the tail's head directly when it is smaller than the
    heap's, so a tail entry costs no heap push and pop (but for the re-keying
    below). Machines that left the free set are not removed from the heap
    at once (the engine does not say): their entries are
    dropped when they surface, or kept for when the machine comes back
    with the same last logout (a machine whose job ended: no owner came).
    A free machine's last logout does not change while it stays free (a
    login would take it out of the free set), but for a session of zero
    length at the query's own moment that the engine has not reached yet;
    the clock has, so an entry whose key is older than the clock's is
    pushed again with the right key when it surfaces.
    """

    def __init__(self, clock: IdleClock, engine) -> None:
        self.clock = clock
        self._engine = engine
        self._pos: list[int] = engine.pos
        self._tie: list[int] = [(c << 32) | tie_rank(m) for m, c in enumerate(engine.cls)]
        self._heap: list[tuple[float, int, int]] = []
        self._tail: deque[tuple[float, int, int]] = deque()
        self._tail_last: tuple[float, int, int] = (-math.inf, -1, -1)
        """The tail's last entry: an entry not below it joins the tail."""
        self._key: list[float | None] = [None] * clock.machines
        """The key of the entry (heap or tail) that stands for each machine (None: none)."""
        self._freed: list[int] = list(engine.free_machines())
        engine.freed = self._freed
        self._limit = 4 * clock.machines + 1024

    def _take_in(self) -> None:
        freed = self._freed
        if not freed:
            return
        heap = self._heap
        tail = self._tail
        newest = self._tail_last
        key = self._key
        last = self.clock.last_list
        pos = self._pos
        tie = self._tie
        push = heapq.heappush
        for m in freed:
            k = last[m]
            if pos[m] >= 0 and key[m] != k:
                key[m] = k
                entry = (k, tie[m], m)
                if entry >= newest:
                    tail.append(entry)
                    newest = entry
                else:
                    push(heap, entry)
        self._tail_last = newest
        freed.clear()
        if len(heap) + len(tail) > self._limit:  # mostly dead entries: keep the live ones
            self._heap = heap = [e for e in heap if key[e[2]] == e[0] and pos[e[2]] >= 0]
            heapq.heapify(heap)
            self._tail = tail = deque(e for e in tail if key[e[2]] == e[0] and pos[e[2]] >= 0)
            live = {e[2] for e in heap}
            live.update(e[2] for e in tail)
            for m in range(len(key)):
                if m not in live:
                    key[m] = None

    def top(self, now: float, count: int) -> tuple[list[int], list[float]]:
        """Up to ``count`` free machines, longest idle first, and their idle
        seconds (``now`` − last logout). Equal idle times go by power class,
        then :func:`tie_rank`."""
        if count <= 0:
            return [], []
        clock = self.clock
        if now != clock._now:  # the same moment again: no logout to take in
            clock.advance(now)
        if self._freed:
            self._take_in()
        heap = self._heap
        tail = self._tail
        key = self._key
        last = clock.last_list
        pos = self._pos
        pop = heapq.heappop
        machines: list[int] = []
        idle: list[float] = []
        while len(machines) < count:
            if tail and (not heap or tail[0] < heap[0]):
                k, t, m = tail.popleft()  # the tail's head is next: as if pushed and popped
            elif heap:
                k, t, m = pop(heap)
            else:
                break
            if key[m] != k:
                continue  # superseded by a later entry of m
            if pos[m] < 0:
                key[m] = None  # no longer free: it comes back through engine.freed
                continue
            true = last[m]
            if true != k:  # a session of zero length now (class docstring)
                key[m] = true
                heapq.heappush(heap, (true, t, m))
                continue
            machines.append(m)
            idle.append(now - k)
        # The machines taken go back through the freed list, not the heap:
        # the caller usually claims them at once, and then they need no entry.
        for m in machines:
            key[m] = None
        self._freed.extend(machines)
        return machines, idle


def hour_of_week(local_seconds: float) -> int:
    """Hour of the local week, Monday 00:00 = 0 … Sunday 23:00 = 167, from
    local seconds since 1970-01-01 00:00 (a Thursday)."""
    return (int(local_seconds // 3600.0) + 72) % 168
