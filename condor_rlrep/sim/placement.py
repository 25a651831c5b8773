"""What a pool knows about its machines' owners at a decision: how long each
free machine has been left alone (HTCondor's ``KeyboardIdle``).

Only the past is used: the last logout of a machine that is free now is the
latest session end at or before now. (A session that ends later started
later too, or the machine would not be free.) A machine nobody has used
since the trace began counts as idle for ever; it ranks first.

:class:`IdleClock` keeps each machine's last logout as time advances and
answers for all free machines with one numpy gather;
:class:`IdleOrder` keeps the free machines of a running engine in that
order as they come and go, so that a choice costs O(k log n), not O(n).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import heapq
import math

import numpy as np

__all__ = ["IdleClock", "IdleOrder", "hour_of_week"]

_BLOCK = 1 << 16


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
        self.last = np.full(machines, -np.inf)
        """Latest logout so far per machine (``-inf``: none yet), for gathers."""
        self.last_list: list[float] = [-math.inf] * machines
        """The same as a list, which Python indexes faster one machine at a time."""

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
            last = self.last
            last_list = self.last_list
            machine = self._machine
            while i < n and ends[i] <= now:
                m = machine[i]
                last[m] = last_list[m] = ends[i]  # in end order: the latest wins
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
        return self.last[np.asarray(machines, dtype=np.int64)]

    def longest_idle(self, free: Sequence[int], now: float, count: int) -> tuple[np.ndarray, np.ndarray]:
        """Up to ``count`` of the ``free`` machines, longest idle first, and
        their idle seconds. Equal idle times keep the order of ``free``,
        except which of them make the count when they straddle its last
        place: numpy's ``argpartition`` picks those, and its choice among
        equal keys differs with the CPU's SIMD level (docs/simulator.md §6)."""
        if count <= 0 or not len(free):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        # fromiter reads a list of ints a fifth faster than asarray (resolve's free list)
        ids = np.fromiter(free, np.int64, len(free)) if free.__class__ is list else np.asarray(free, dtype=np.int64)
        idle = now - self.last_logout(ids, now)
        if count == 1:
            top = np.array([int(np.argmax(idle))])  # the first of the longest
        elif count < len(ids):
            # the count largest, then ordered (stable on the free order)
            top = np.argpartition(-idle, count - 1)[:count]
            top = top[np.lexsort((top, -idle[top]))]
        else:
            top = np.lexsort((np.arange(len(ids)), -idle))
        return ids[top], idle[top]


class IdleOrder:
    """The free machines of an :class:`~condor_rlrep.sim.engine.Engine`,
    longest idle first, kept as the engine runs: what
    :meth:`IdleClock.longest_idle` answers for ``engine.free_machines()``,
    without looking at every free machine per query.

    Entries ``(last logout, machine)`` stand for the free machines. The
    engine appends each machine that becomes free to ``engine.freed``;
    a query takes those in, then takes the smallest keys. Nearly half the
    machines come free at a logout, so with the newest key yet: those
    entries queue in key order in a deque (the tail), the rest go into a
    heap, and the tail's head moves into the heap only when it would be
    next; most of them are claimed by other jobs before that, so they cost
    no heap push and pop. Machines that left the
    free set are not removed from the heap at once (the engine does not
    say): their entries are dropped when they surface, or kept for when the
    machine comes back with the same last logout (a machine whose job
    ended: no owner came). A free machine's last logout does not change
    while it stays free (a login would take it out of the free set), but
    for a session of zero length at the query's own moment that the engine
    has not reached yet; the clock has, so an entry whose key is older than
    the clock's is pushed again with the right key when it surfaces.

    Equal idle times keep the order of ``engine.free_machines()`` (power
    class, then place in its list), as :meth:`IdleClock.longest_idle` does.
    When machines of equal idle time straddle the ``count``-th place (all
    year: sessions that a room's closing ends end at the same second, and
    machines never used share an endless idle time), which of
    them are chosen is what numpy's partition in
    :meth:`IdleClock.longest_idle` picks; those machines are named by that
    method (:meth:`resolve`), so that results stay those of every earlier
    run, and only when the caller places that many (:meth:`top_lazy`).
    """

    def __init__(self, clock: IdleClock, engine) -> None:
        self.clock = clock
        self._engine = engine
        self._pos: list[int] = engine.pos
        self._cls: list[int] = engine.cls
        self._heap: list[tuple[float, int]] = []
        self._tail: deque[tuple[float, int]] = deque()
        self._tail_key = -math.inf
        """The tail's last key: an entry with a key at least this joins the tail."""
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
        newest = self._tail_key
        key = self._key
        last = self.clock.last_list
        pos = self._pos
        push = heapq.heappush
        for m in freed:
            k = last[m]
            if pos[m] >= 0 and key[m] != k:
                key[m] = k
                if k >= newest:
                    tail.append((k, m))
                    newest = k
                else:
                    push(heap, (k, m))
        self._tail_key = newest
        freed.clear()
        if len(heap) + len(tail) > self._limit:  # mostly dead entries: keep the live ones
            self._heap = heap = [(k, m) for k, m in heap if key[m] == k and pos[m] >= 0]
            heapq.heapify(heap)
            self._tail = tail = deque((k, m) for k, m in tail if key[m] == k and pos[m] >= 0)
            live = {m for _, m in heap}
            live.update(m for _, m in tail)
            for m in range(len(key)):
                if m not in live:
                    key[m] = None

    def top(self, now: float, count: int) -> tuple[list[int], list[float]]:
        """Up to ``count`` free machines, longest idle first, and their idle
        seconds (``now`` − last logout)."""
        machines, idle, exact = self.top_lazy(now, count)
        if exact < len(machines):
            machines = self.resolve(now, count)
        return machines, idle

    def top_lazy(self, now: float, count: int) -> tuple[list[int], list[float], int]:
        """:meth:`top`'s idle seconds, its machines where they are settled,
        and how many leading machines are: all but those of equal idle time
        straddling the ``count``-th place (class docstring), which only
        :meth:`resolve` names. The idle seconds are :meth:`top`'s either
        way, so a caller that needs no more machines than the settled ones
        (most replica counts stay below the tie) skips that full sort."""
        if count <= 0:
            return [], [], 0
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
        bound = math.nan
        tied = False
        equal = False  # two taken machines equally idle: reorder them below
        while True:
            if tail and (not heap or tail[0] < heap[0]):
                heapq.heappush(heap, tail.popleft())  # the tail's head is next
            if not heap:
                break
            k, m = heap[0]
            if key[m] != k:
                pop(heap)  # superseded by a later entry of m
                continue
            if pos[m] < 0:
                pop(heap)
                key[m] = None  # no longer free: it comes back through engine.freed
                continue
            true = last[m]
            if true != k:  # a session of zero length now (class docstring)
                pop(heap)
                key[m] = true
                heapq.heappush(heap, (true, m))
                continue
            seconds = now - k
            if len(machines) == count:  # the next free machine after the count
                tied = seconds == bound
                break
            pop(heap)
            if seconds == bound:
                equal = True
            machines.append(m)
            idle.append(seconds)
            bound = seconds
        # The machines taken go back through the freed list, not the heap:
        # the caller usually claims them at once, and then they need no entry.
        for m in machines:
            key[m] = None
        self._freed.extend(machines)
        if equal:  # equal idle times in the order of the free lists
            cls = self._cls
            order = sorted(range(len(machines)), key=lambda j: (-idle[j], cls[machines[j]], pos[machines[j]]))
            machines = [machines[j] for j in order]
            idle = [idle[j] for j in order]
        exact = len(machines)
        if tied:  # the machines idle exactly ``bound`` are unsettled
            while exact and idle[exact - 1] == bound:
                exact -= 1
        return machines, idle, exact

    def resolve(self, now: float, count: int) -> list[int]:
        """The machines of :meth:`top` when :meth:`top_lazy` left some
        unsettled: equal idle times across the boundary, where which of them
        make the count is numpy's partition's choice in
        :meth:`IdleClock.longest_idle`; ask it the same question (the free
        set must not have changed since :meth:`top_lazy`)."""
        engine = self._engine
        only = engine._only_list  # the free list itself under random choice (no copy)
        machines, _idle = self.clock.longest_idle(only if only is not None else engine.free_machines(), now, count)
        return machines.tolist()


def hour_of_week(local_seconds: float) -> int:
    """Hour of the local week, Monday 00:00 = 0 … Sunday 23:00 = 167, from
    local seconds since 1970-01-01 00:00 (a Thursday)."""
    return (int(local_seconds // 3600.0) + 72) % 168
