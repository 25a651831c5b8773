"""What a pool knows about its machines' owners at a decision: how long each
free machine has been left alone (HTCondor's ``KeyboardIdle``).

Only the past is used: the last logout of a machine that is free now is the
latest session end at or before now. (A session that ends later started
later too, or the machine would not be free.) A machine nobody has used
since the trace began counts as idle for ever; it ranks first.

:class:`IdleClock` keeps each machine's last logout as time advances and
answers for all free machines with one numpy gather.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["IdleClock", "hour_of_week"]


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
        self._machine = lm[order].tolist()
        self._end = le[order].tolist()
        self._next = 0
        self._now = -np.inf
        self.last = np.full(machines, -np.inf)
        """Latest logout so far per machine (``-inf``: none yet)."""

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
        if i < n and ends[i] <= now:
            last = self.last
            machine = self._machine
            while i < n and ends[i] <= now:
                last[machine[i]] = ends[i]  # in end order: the latest wins
                i += 1
            self._next = i

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


def hour_of_week(local_seconds: float) -> int:
    """Hour of the local week, Monday 00:00 = 0 … Sunday 23:00 = 167, from
    local seconds since 1970-01-01 00:00 (a Thursday)."""
    return (int(local_seconds // 3600.0) + 72) % 168
