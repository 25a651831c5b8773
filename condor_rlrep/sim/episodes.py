"""Irregular episodes of a synthetic year: what a smooth rhythm lacks.

The generator's logins and jobs follow smooth daily, weekly and term-time
rates. A real multi-use cluster also has episodes that such rates average
away, and the replication paper traces its long p(W) tail to them ("the
system was under exceptional load", §2). Three kinds, each an optional
list of tables in a profile (absent: the trace is exactly the smooth one):

* ``[[login_bursts]]`` — practical classes: a class fills ``fill`` of a
  room's machines at once for ``minutes``, all logging in within
  ``arrive_minutes`` of the hour it starts on. Classes start on eligible
  hours (the room is open, the hour lies in ``start_hours``, a weekday if
  ``weekdays_only``, the calendar's login factor at least ``min_login_factor``
  — term time) at ``per_day`` classes per room per eligible day.
* ``[[outages]]`` — machines down for days: ``per_year`` outages, each of
  one machine (``scope = "machine"``) or a whole room (``"room"``), lasting
  lognormal(``days_median``, ``days_sigma``) days (at most ``max_days``),
  starting uniformly over the trace (``exact = true``: exactly
  ``per_year`` a year rather than a Poisson number). A down machine is written as a login
  covering its outage: the trace format's "not available to HTC jobs"
  (docs/profiles.md), which evicts a running job as a failure would.
* ``[[job_surges]]`` — periods of high HTC load: ``per_year`` surges, each
  ``jobs`` jobs in clusters of ``cluster_jobs``, submitted over
  ``spread_hours`` from an eligible hour (in ``start_hours``, a weekday if
  ``weekdays_only``), each job lognormal(``duration_median`` s,
  ``duration_sigma``); ``exact`` as for outages.

Bursts and outages overlap the smooth sessions; a machine is busy while
either holds it, so the sessions of each machine are merged into their
union (no two overlap, as the engine requires). Surge jobs are added to the
smooth jobs and the whole is ordered by submit time.

Randomness: one generator per kind, seeded from the trace seed and the
kind, so the smooth trace's stream is untouched and adding one kind does
not move another's episodes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from condor_rlrep.errors import TraceError

__all__ = ["EPISODE_KINDS", "has_episodes", "login_bursts", "outages", "job_surges", "union_sessions"]

EPISODE_KINDS = ("login_bursts", "outages", "job_surges")
_STREAM = {"login_bursts": 1, "outages": 2, "job_surges": 3}


def has_episodes(prof: Mapping[str, Any]) -> bool:
    return any(prof.get(kind) for kind in EPISODE_KINDS)


def _rng(seed: int, kind: str, index: int) -> np.random.Generator:
    return np.random.default_rng([int(seed) & 0xFFFFFFFFFFFFFFFF, _STREAM[kind], index])


def _number(spec: Mapping[str, Any], key: str, what: str, *, low: float = 0.0, default: Any = None) -> float:
    value = spec.get(key, default)
    if value is None:
        raise TraceError(f"profile: {what} needs {key!r}")
    try:
        value = float(value)
    except (TypeError, ValueError) as err:
        raise TraceError(f"profile: {what}.{key} must be a number, not {value!r}") from err
    if not (math.isfinite(value) and value >= low):
        raise TraceError(f"profile: {what}.{key} must be a finite number ≥ {low:g}, not {value!r}")
    return value


def _hour_window(spec: Mapping[str, Any], what: str) -> tuple[int, int]:
    window = spec.get("start_hours", [0, 24])
    try:
        lo, hi = (int(x) for x in window)
    except (TypeError, ValueError) as err:
        raise TraceError(f"profile: {what}.start_hours must be [from, to) hours, not {window!r}") from err
    if not 0 <= lo < hi <= 24:
        raise TraceError(f"profile: {what}.start_hours must satisfy 0 ≤ from < to ≤ 24, not {window!r}")
    return lo, hi


def _eligible_hours(grid: Any, spec: Mapping[str, Any], what: str) -> np.ndarray:
    lo, hi = _hour_window(spec, what)
    ok = (grid.hour >= lo) & (grid.hour < hi)
    if spec.get("weekdays_only", True):
        ok &= ~grid.weekend
    ok &= grid.login_factor >= _number(spec, "min_login_factor", what, default=0.0)
    return ok


def _count(rng: np.random.Generator, spec: Mapping[str, Any], expected: float) -> int:
    """How many episodes: Poisson(expected), or ``round(expected)`` with ``exact = true``
    (rare, large episodes whose number per year is known, not a lottery)."""
    if spec.get("exact", False):
        return int(round(expected))
    return int(rng.poisson(expected))


def _rooms_named(model: Any, names: Sequence[str] | str | None, what: str) -> np.ndarray:
    """Indices of the individual rooms whose kind is in ``names`` (all if None)."""
    kinds = np.array(model.room_kinds)
    if names is None:
        return np.arange(kinds.size)
    names = [names] if isinstance(names, str) else list(names)
    unknown = sorted(set(names) - set(model.room_kinds))
    if unknown:
        raise TraceError(f"profile: {what}.rooms names unknown room kind(s) {unknown}")
    return np.flatnonzero(np.isin(kinds, names))


def login_bursts(model: Any, specs: Sequence[Mapping[str, Any]], seed: int) -> tuple[np.ndarray, ...]:
    """Sessions of practical classes: (machine, start, end) in whole seconds."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    end_s = math.floor(model.end_h * 3600.0)
    hours = model.grid.hour.size
    for i, spec in enumerate(specs):
        what = f"login_bursts[{i}]"
        rng = _rng(seed, "login_bursts", i)
        per_day = _number(spec, "per_day", what)
        minutes = _number(spec, "minutes", what, low=1.0)
        arrive = _number(spec, "arrive_minutes", what, default=0.0)
        fill = _number(spec, "fill", what)
        if fill > 1:
            raise TraceError(f"profile: {what}.fill is a share of the room's machines (0..1), not {fill!r}")
        lo, hi = _hour_window(spec, what)
        eligible = _eligible_hours(model.grid, spec, what)
        rate_per_hour = per_day / (hi - lo)
        for r in _rooms_named(model, spec.get("rooms"), what):
            slots = np.flatnonzero(eligible & model.open[r])
            if not slots.size:
                continue
            n_classes = int(rng.poisson(rate_per_hour * slots.size))
            members = np.flatnonzero(model.room_of == r)
            take = int(round(fill * members.size))
            for k in np.sort(rng.choice(slots, size=n_classes)) if n_classes else ():
                machines = np.sort(rng.choice(members, size=take, replace=False))
                start = np.round(k * 3600.0 + rng.random(take) * arrive * 60.0)
                close = model.next_close[r, min(int(k), hours - 1)] * 3600.0
                end = np.minimum(np.minimum(np.round(k * 3600.0 + minutes * 60.0), close), end_s)
                keep = end > start
                parts.append((machines[keep], start[keep], np.broadcast_to(end, start.shape)[keep].astype(np.float64)))
    return _concat(parts)


def outages(model: Any, specs: Sequence[Mapping[str, Any]], seed: int) -> tuple[np.ndarray, ...]:
    """Down periods as sessions: (machine, start, end) in whole seconds."""
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    length = math.floor(model.length)
    for i, spec in enumerate(specs):
        what = f"outages[{i}]"
        rng = _rng(seed, "outages", i)
        per_year = _number(spec, "per_year", what)
        median = _number(spec, "days_median", what, low=1e-9)
        sigma = _number(spec, "days_sigma", what, default=0.0)
        top = _number(spec, "max_days", what, default=365.0, low=1e-9)
        scope = spec.get("scope", "machine")
        if scope not in ("machine", "room"):
            raise TraceError(f"profile: {what}.scope must be 'machine' or 'room', not {scope!r}")
        rooms = _rooms_named(model, spec.get("rooms"), what)
        pool = rooms if scope == "room" else np.flatnonzero(np.isin(model.room_of, rooms))
        n = _count(rng, spec, per_year * model.length / (365.0 * 86400.0))
        if not n or not pool.size:
            continue
        start = np.floor(rng.random(n) * length)
        days = np.minimum(median * np.exp(sigma * rng.standard_normal(n)), top)
        end = np.minimum(start + np.round(days * 86400.0), length)
        which = rng.choice(pool, size=n)
        for s, e, w in zip(start, end, which):
            machines = np.flatnonzero(model.room_of == w) if scope == "room" else np.array([w])
            parts.append((machines, np.full(machines.size, s), np.full(machines.size, e)))
    return _concat(parts)


def job_surges(model: Any, specs: Sequence[Mapping[str, Any]], seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Surge jobs: (submit, duration, cluster index within the surges) in whole seconds."""
    submits: list[np.ndarray] = []
    durations: list[np.ndarray] = []
    clusters: list[np.ndarray] = []
    n_clusters = 0
    last = math.ceil(model.length) - 1.0
    for i, spec in enumerate(specs):
        what = f"job_surges[{i}]"
        rng = _rng(seed, "job_surges", i)
        per_year = _number(spec, "per_year", what)
        jobs = int(_number(spec, "jobs", what, low=1.0))
        per_cluster = int(_number(spec, "cluster_jobs", what, low=1.0, default=jobs))
        spread = _number(spec, "spread_hours", what, default=0.0)
        median = _number(spec, "duration_median", what, low=1e-9)
        sigma = _number(spec, "duration_sigma", what, default=0.0)
        slots = np.flatnonzero(_eligible_hours(model.grid, spec, what) & (np.arange(model.grid.hour.size) < model.end_h))
        n = _count(rng, spec, per_year * model.length / (365.0 * 86400.0))
        if not n or not slots.size:
            continue
        for k in np.sort(rng.choice(slots, size=n)):
            sizes = np.full(-(-jobs // per_cluster), per_cluster)
            sizes[-1] = jobs - per_cluster * (sizes.size - 1)
            at = np.sort(k * 3600.0 + rng.random(sizes.size) * spread * 3600.0)
            submits.append(np.minimum(np.round(np.repeat(at, sizes)), last))
            durations.append(np.round(median * np.exp(sigma * rng.standard_normal(jobs))))
            clusters.append(n_clusters + np.repeat(np.arange(sizes.size), sizes))
            n_clusters += sizes.size
    if not submits:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.concatenate(submits), np.maximum(np.concatenate(durations), 0.0), np.concatenate(clusters)


def union_sessions(machine: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge overlapping sessions of each machine into their union.

    Sessions that only touch (one ends as the next begins) stay apart, as the
    smooth process writes them. Returns (machine, start, end) sorted by
    (machine, start).
    """
    if not machine.size:
        return machine.astype(np.int32), start, end
    order = np.lexsort((start, machine))
    m, s, e = machine[order].astype(np.int64), start[order], end[order]
    # Offsetting each machine by more than any time lets one running maximum
    # serve every machine at once.
    span = float(max(e.max(), s.max())) + 1.0
    reach = np.maximum.accumulate(m * span + e) - m * span  # latest end so far on this machine
    new = np.ones(m.size, dtype=bool)
    new[1:] = (m[1:] != m[:-1]) | (s[1:] >= reach[:-1])
    first = np.flatnonzero(new)
    return m[first].astype(np.int32), s[first], np.maximum.reduceat(e, first)


def _concat(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not parts:
        return np.zeros(0, np.int32), np.zeros(0), np.zeros(0)
    return (
        np.concatenate([p[0] for p in parts]).astype(np.int32),
        np.concatenate([p[1] for p in parts]).astype(np.float64),
        np.concatenate([p[2] for p in parts]).astype(np.float64),
    )
