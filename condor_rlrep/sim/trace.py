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

__all__ = ["Trace"]


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
