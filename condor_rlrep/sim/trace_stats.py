"""Summary figures of a trace: counts, occupancy, and rates by hour and weekday."""

from __future__ import annotations

from typing import Any

import numpy as np

from condor_rlrep.sim.trace import Trace

__all__ = ["summarize", "hourly_rates", "weekday_rates"]


def _day_counts(trace: Trace) -> tuple[float, np.ndarray]:
    """Days covered, and how many of each weekday (fractional at the ends)."""
    days = trace.length / 86400.0
    grid = np.arange(0.0, trace.length, 3600.0)
    _, weekday = trace.local_clock(grid)
    per_weekday = np.bincount(weekday, minlength=7) / 24.0
    return days, per_weekday


def hourly_rates(trace: Trace, times: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Events per local hour of day, averaged over the days of the trace (optionally only ``mask``)."""
    times = np.asarray(times, dtype=np.float64)
    if mask is not None:
        times = times[mask]
    days = max(trace.length / 86400.0, 1e-9)
    if times.size == 0:
        return np.zeros(24)
    hour, _ = trace.local_clock(times)
    return np.bincount(hour.astype(np.int64) % 24, minlength=24) / days


def weekday_rates(trace: Trace, times: np.ndarray) -> np.ndarray:
    """Events per day for each weekday (Monday first), averaged over that weekday's occurrences."""
    times = np.asarray(times, dtype=np.float64)
    _, per_weekday = _day_counts(trace)
    if times.size == 0:
        return np.zeros(7)
    _, weekday = trace.local_clock(times)
    counts = np.bincount(weekday, minlength=7).astype(np.float64)
    return np.divide(counts, per_weekday, out=np.zeros(7), where=per_weekday > 0)


def summarize(trace: Trace) -> dict[str, Any]:
    """Counts, occupancy and rates of ``trace`` as a JSON-ready dict."""
    sessions = trace.login_end - trace.login_start
    jobs_min = trace.job_duration / 60.0
    rooms: dict[str, int] = {}
    for room in trace.machine_rooms:
        rooms[room] = rooms.get(room, 0) + 1

    def q(values: np.ndarray, p: float) -> float:
        return float(np.percentile(values, p)) if values.size else 0.0

    return {
        "source": trace.source,
        "start": trace.start.isoformat(),
        "days": trace.length / 86400.0,
        "machines": trace.machine_count,
        "rooms": rooms,
        "logins": trace.login_count,
        "jobs": trace.job_count,
        "mean_session_minutes": float(sessions.mean() / 60.0) if sessions.size else 0.0,
        "occupancy": float(sessions.sum() / (trace.machine_count * trace.length)),
        "job_minutes": {
            "median": q(jobs_min, 50),
            "mean": float(jobs_min.mean()) if jobs_min.size else 0.0,
            "p99": q(jobs_min, 99),
        },
        "logins_by_hour": hourly_rates(trace, trace.login_start).round(3).tolist(),
        "jobs_by_hour": hourly_rates(trace, trace.job_submit).round(3).tolist(),
        "logins_by_weekday": weekday_rates(trace, trace.login_start).round(3).tolist(),
        "jobs_by_weekday": weekday_rates(trace, trace.job_submit).round(3).tolist(),
    }
