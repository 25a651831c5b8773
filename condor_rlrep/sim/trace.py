"""The cluster trace model the simulator runs on.

A trace is columns in numpy arrays (the engine indexes them; nothing per
event is allocated). Times are seconds from ``start``. Machines are indexed
0..M-1 in the order of ``machines.csv``; logins and jobs refer to them by
index. The on-disk format (a folder of CSV files and ``trace.toml``) is read
and written by :mod:`condor_rlrep.sim.trace_io`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

__all__ = ["Trace", "hourly_utc_offsets"]


def hourly_utc_offsets(start: datetime, hours: int) -> np.ndarray:
    """UTC offset (seconds) of ``start``'s zone at each whole hour after ``start``.

    Element k is the offset at ``start + k`` hours of absolute time, so time
    zones with summer time give the right wall clock (Europe/London: 0 in
    winter, 3600 in summer).
    """
    tz = start.tzinfo
    base = start.timestamp()
    return np.array(
        [datetime.fromtimestamp(base + 3600.0 * k, tz).utcoffset().total_seconds() for k in range(hours + 1)],
        dtype=np.float64,
    )


@dataclass
class Trace:
    start: datetime
    """Wall-clock start of the trace, time-zone aware (hours of day and the
    nightly reboot are taken in this zone)."""
    length: float
    """Seconds covered by the trace."""
    source: str
    machine_names: list[str]
    machine_rooms: list[str]
    active_watts: np.ndarray  # float64[M]
    idle_watts: np.ndarray  # float64[M]
    login_machine: np.ndarray  # int32[L], sorted by login_start
    login_start: np.ndarray  # float64[L]
    login_end: np.ndarray  # float64[L]
    job_names: list[str]
    job_submit: np.ndarray  # float64[J], sorted
    job_duration: np.ndarray  # float64[J]
    job_owner: list[str] | None = None
    machine_extra: dict[str, list[str]] = field(default_factory=dict)
    """Optional extra columns of machines.csv, kept verbatim."""

    @property
    def machine_count(self) -> int:
        return len(self.machine_names)

    @property
    def login_count(self) -> int:
        return int(self.login_start.shape[0])

    @property
    def job_count(self) -> int:
        return int(self.job_submit.shape[0])

    def local_clock(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Wall-clock hour of day (float in [0, 24)) and weekday (0 = Monday)
        of trace ``times`` (seconds from ``start``), in the trace's time zone."""
        times = np.asarray(times, dtype=np.float64)
        hours = int(np.ceil(max(self.length, float(times.max(initial=0.0))) / 3600.0)) + 1
        offsets = hourly_utc_offsets(self.start, hours)
        idx = np.clip((times // 3600.0).astype(np.int64), 0, hours)
        wall = self.start.timestamp() + times + offsets[idx]
        hour = np.mod(wall, 86400.0) / 3600.0
        weekday = (np.floor_divide(wall, 86400.0).astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday
        return hour, weekday
