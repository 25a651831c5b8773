"""What a pool knows about its machines' owners at a decision: how long each
free machine has been left alone (HTCondor's ``KeyboardIdle``).

Only the past is used: the last logout of a machine that is free now is the
latest session end at or before now. (A session that ends later started
later too, or the machine would not be free.) A machine nobody has used
since the trace began counts as idle for ever; it ranks first.

:class:`IdleClock` keeps each machine's last logout as time advances and
answers for all free machines with one numpy gather;
:class:`IdleOrder` keeps the free machines of a running engine in that
order's head as they come and go, so that a choice mostly reads a few
entries, not every free machine.
"""

from __future__ import annotations

from collections.abc import Sequence

import math
from bisect import insort

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
        their idle seconds. Equal idle times keep the order of ``free``."""
        if count <= 0 or not len(free):
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        ids = np.asarray(free, dtype=np.int64)
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

    Only the head of the order is kept: a sorted list of ``(last logout,
    machine)`` holding every free machine whose last logout is at or before
    a cut (and more, no longer valid, entries). A query reads the head's
    front and leaves it in place; the caller claims some of the machines
    read. Why a head and not a heap of all free machines: most machines
    become free at a logout, so their last logout is the latest there is,
    after the cut; taking one in is then a comparison, where a heap
    pushed it and later popped it again. The engine appends each machine
    that becomes free to ``engine.freed``; a query takes those in first.
    Entries of machines that left the free set (the engine does not say)
    are dropped when a query reads past them. When the head holds too few
    valid entries to answer (or has grown large), it is rebuilt from the
    engine's free lists with a new cut: the ``head_size + 1``-th earliest
    last logout.

    A free machine's last logout does not change while it stays free (a
    login would take it out of the free set), but for a session of zero
    length at the query's own moment that the engine has not reached yet;
    the clock has, so an entry whose key is older than the clock's is
    moved to its right key when a query reads it (last logouts only grow,
    so a machine beyond the cut stays beyond it).

    Equal idle times keep the order of ``engine.free_machines()`` (power
    class, then place in its list), as :meth:`IdleClock.longest_idle` does.
    When machines of equal idle time straddle the ``count``-th place (at the
    start of a trace, when many machines have never been used), which of
    them are chosen is what numpy's partition in
    :meth:`IdleClock.longest_idle` picks; those machines are named by that
    method (:meth:`resolve`), so that results stay those of every earlier
    run, and only when the caller places that many (:meth:`top_lazy`).
    """

    head_size = 48
    """Entries a rebuilt head holds at least (ties at the cut: more)."""

    def __init__(self, clock: IdleClock, engine) -> None:
        self.clock = clock
        self._engine = engine
        self._pos: list[int] = engine.pos
        self._cls: list[int] = engine.cls
        self._head: list[tuple[float, int]] = []
        self._cut = -math.inf
        """Every free machine with a last logout ``<= _cut`` has an entry in
        the head (``-inf`` at the start: the first query builds it)."""
        self._key: list[float | None] = [None] * clock.machines
        """The key of the head entry that stands for each machine (None: none)."""
        self._freed: list[int] = []
        engine.freed = self._freed
        self.rebuilds = 0
        """Times the head was rebuilt from the free lists (for tests and profiling)."""

    def _take_in(self) -> None:
        freed = self._freed
        head = self._head
        key = self._key
        last = self.clock.last_list
        pos = self._pos
        cut = self._cut
        for m in freed:
            if pos[m] >= 0:
                k = last[m]
                if k <= cut:
                    if key[m] != k:
                        key[m] = k
                        insort(head, (k, m))
                elif key[m] is not None:
                    key[m] = None  # its entry (an earlier key) is no longer valid
        freed.clear()
        if len(head) > 4 * self.head_size + 64:  # mostly dead entries, or cut = inf and grown
            self._rebuild()

    def _rebuild(self, need: int = 0) -> None:
        """The head anew from the engine's free lists (after :meth:`_take_in`),
        with at least ``need`` entries when as many machines are free."""
        self.rebuilds += 1
        key = self._key
        for _k, m in self._head:
            key[m] = None
        engine = self._engine
        only = engine._only_list
        free = only if only is not None else engine.free_machines()
        last = self.clock.last_list
        size = max(self.head_size, need)
        if len(free) <= size + 1:
            head = sorted([(last[m], m) for m in free])
            cut = math.inf
        else:
            ids = np.array(free, dtype=np.int64)
            ks = self.clock.last[ids]
            cut = float(np.partition(ks, size)[size])
            inside = np.flatnonzero(ks <= cut)
            head = sorted(zip(ks[inside].tolist(), ids[inside].tolist()))
        for k, m in head:
            key[m] = k
        self._head = head
        self._cut = cut

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
        self.clock.advance(now)
        if self._freed:
            self._take_in()
        head = self._head
        key = self._key
        last = self.clock.last_list
        pos = self._pos
        taken: list[tuple[float, int]] = []
        bound = math.nan
        tied = False
        n = len(head)
        i = got = 0
        while True:
            if i == n:
                if self._cut == math.inf:
                    break  # every free machine has been read
                self._rebuild(count + 1)  # too few valid entries to answer: read them anew
                head = self._head
                n = len(head)
                taken = []
                i = got = 0
                continue
            entry = head[i]
            k, m = entry
            if key[m] != k:
                del head[i]  # superseded by a later entry of m
                n -= 1
                continue
            if pos[m] < 0:
                del head[i]
                n -= 1
                key[m] = None  # no longer free: it comes back through engine.freed
                continue
            true = last[m]
            if true != k:  # a session of zero length now (class docstring)
                del head[i]
                if true <= self._cut:
                    key[m] = true
                    insort(head, (true, m))  # after i: true > k
                else:
                    key[m] = None
                    n -= 1
                continue
            if got == count:  # the next free machine after the count
                tied = now - k == bound
                break
            taken.append(entry)
            got += 1
            bound = now - k
            i += 1
        if got == 1:
            return [taken[0][1]], [bound], 0 if tied else 1
        idle = [now - k for k, _ in taken]
        for j in range(1, got):
            if not idle[j - 1] > idle[j]:
                # equal idle times in the order of the free lists
                cls = self._cls
                taken.sort(key=lambda e: (-(now - e[0]), cls[e[1]], pos[e[1]]))
                idle = [now - k for k, _ in taken]
                break
        exact = got
        if tied:  # the machines idle exactly ``bound`` are unsettled
            while exact and idle[exact - 1] == bound:
                exact -= 1
        return [m for _, m in taken], idle, exact

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
