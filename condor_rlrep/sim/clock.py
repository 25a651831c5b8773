"""Local wall-clock time of a trace: hour of day and the nightly reboot times.

Simulation time is seconds from the trace start; the agent's state and the
nightly reboot use the hour in the trace's own time zone (docs/model.md §6), so
daylight-saving changes are honoured. The offsets are tabulated once per
hour of the trace; lookups are a bisect over the few offset changes.
"""

from __future__ import annotations

import bisect
from datetime import datetime, timedelta, timezone

import numpy as np

__all__ = ["LocalClock"]


class LocalClock:
    """Maps simulation seconds to local hours of the day of ``start``'s zone."""

    def __init__(self, start: datetime, length: float):
        if start.tzinfo is None:
            start = start.replace(tzinfo=timezone.utc)
        self.start = start
        self.length = float(length)
        self._epoch = start.timestamp()
        # Offset changes (DST) tabulated hourly: transitions happen on the hour.
        change_times: list[float] = [0.0]
        offsets: list[float] = [_offset(start)]
        hours = int(self.length // 3600) + 2
        for h in range(1, hours):
            off = _offset(start + timedelta(hours=h))
            if off != offsets[-1]:
                # The change falls within the last hour; locate it to the second
                # by bisection so that hours of day stay exact around it.
                lo, hi = (h - 1) * 3600.0, h * 3600.0
                while hi - lo > 1.0:
                    mid = (lo + hi) / 2
                    if _offset(start + timedelta(seconds=mid)) == off:
                        hi = mid
                    else:
                        lo = mid
                change_times.append(hi)
                offsets.append(off)
        self._changes = change_times
        self._offsets = offsets

    def local_seconds(self, t: float) -> float:
        """Seconds since the local epoch (``t`` shifted by the zone's offset)."""
        i = bisect.bisect_right(self._changes, t) - 1
        return self._epoch + t + self._offsets[i if i >= 0 else 0]

    def hour(self, t: float) -> int:
        """Local hour of day (0–23) at simulation time ``t``."""
        changes = self._changes
        if len(changes) == 1:  # no DST change within the trace
            return int((self._epoch + t + self._offsets[0]) // 3600.0) % 24
        i = bisect.bisect_right(changes, t) - 1
        return int((self._epoch + t + self._offsets[i if i >= 0 else 0]) // 3600.0) % 24

    def hours(self, t: np.ndarray) -> np.ndarray:
        """Vectorised :meth:`hour`."""
        t = np.asarray(t, dtype=np.float64)
        idx = np.searchsorted(np.asarray(self._changes), t, side="right") - 1
        idx = np.clip(idx, 0, None)
        local = self._epoch + t + np.asarray(self._offsets)[idx]
        return (np.floor(local / 3600.0).astype(np.int64)) % 24

    def daily(self, hour: float, until: float | None = None) -> np.ndarray:
        """Simulation times in [0, until) at which the local time is ``hour``
        (fractional hours allowed) on each day of the trace."""
        until = self.length if until is None else until
        tz = self.start.tzinfo
        first = self.start.astimezone(tz).replace(hour=0, minute=0, second=0, microsecond=0)
        times: list[float] = []
        day = 0
        while True:
            local_midnight = first + timedelta(days=day)
            # Build the wall-clock moment in the zone, then measure from start.
            moment = datetime(
                local_midnight.year, local_midnight.month, local_midnight.day, tzinfo=tz
            ) + timedelta(hours=hour)
            t = moment.timestamp() - self._epoch
            if t >= until:
                break
            if t >= 0:
                times.append(t)
            day += 1
        return np.asarray(times, dtype=np.float64)


def _offset(moment: datetime) -> float:
    off = moment.utcoffset()
    return off.total_seconds() if off is not None else 0.0
