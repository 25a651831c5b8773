"""A resolved profile laid out on the trace's hours: the generator's model.

Every rate of the generator is piecewise constant per local hour: hour
``k`` covers ``[k, k+1)`` hours from the trace start, with the hour of day,
weekday and calendar period (term, vacation) of its local wall-clock time
in the profile's time zone (daylight saving honoured). :class:`HourGrid`
holds those calendar fields; :class:`HourlyModel` adds the machines and
rooms, each room's opening hours and next closing hour, and the shapes of
the login and job rates (the rates up to their scale, which
:mod:`condor_rlrep.sim.logins` and :mod:`condor_rlrep.sim.jobs` fix).
The episodes (:mod:`condor_rlrep.sim.episodes`) read the same model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np

from condor_rlrep.errors import InputError, TraceError
from condor_rlrep.sim.trace import hourly_utc_offsets
from condor_rlrep.sim.trace_io import parse_start

__all__ = ["HourGrid", "HourlyModel"]


class HourGrid:
    """Per-hour local calendar fields over the trace (hour k covers [k, k+1) h)."""

    def __init__(self, start: datetime, hours: int, calendar: Mapping[str, Any]):
        offsets = hourly_utc_offsets(start, hours)[:hours]
        wall = start.timestamp() + 3600.0 * np.arange(hours) + offsets
        self.hour = (np.mod(wall, 86400.0) // 3600.0).astype(np.int64)
        days = np.floor_divide(wall, 86400.0).astype(np.int64)
        self.weekday = (days + 3) % 7  # 1970-01-01 was a Thursday
        self.weekend = self.weekday >= 5
        dates = days.astype("datetime64[D]")
        months = dates.astype("datetime64[M]")
        month = months.astype(np.int64) % 12 + 1
        day = (dates - months.astype("datetime64[D]")).astype(np.int64) + 1
        key = month * 100 + day
        self.login_factor = np.full(hours, float(calendar.get("default_login_factor", 1.0)))
        self.job_factor = np.full(hours, float(calendar.get("default_job_factor", 1.0)))
        for period in calendar.get("periods", []):
            lo, hi = _month_day(period["from"]), _month_day(period["to"])
            mask = (key >= lo) & (key <= hi) if lo <= hi else (key >= lo) | (key <= hi)
            self.login_factor[mask] = float(period.get("logins", 1.0))
            self.job_factor[mask] = float(period.get("jobs", 1.0))

    def profile(self, spec: Mapping[str, Any], what: str) -> np.ndarray:
        weekday_h = np.asarray(spec["hourly_weekday"], dtype=np.float64)
        weekend_h = np.asarray(spec["hourly_weekend"], dtype=np.float64)
        dow = np.asarray(spec["weekday_factor"], dtype=np.float64)
        if weekday_h.shape != (24,) or weekend_h.shape != (24,) or dow.shape != (7,):
            raise TraceError(f"profile: {what}: hourly_* need 24 values and weekday_factor 7")
        if np.any(weekday_h < 0) or np.any(weekend_h < 0) or np.any(dow < 0):
            raise TraceError(f"profile: {what}: rate factors must be non-negative")
        return np.where(self.weekend, weekend_h[self.hour], weekday_h[self.hour]) * dow[self.weekday]


def _month_day(text: str) -> int:
    try:
        month, day = (int(x) for x in str(text).split("-"))
    except ValueError as err:
        raise TraceError(f"profile: calendar period date {text!r} is not MM-DD") from err
    return month * 100 + day


def _open_mask(grid: HourGrid, room: Mapping[str, Any]) -> np.ndarray:
    def hours_open(span: list[int]) -> np.ndarray:
        lo, hi = int(span[0]), int(span[1])
        return (grid.hour >= lo) & (grid.hour < hi)

    return np.where(grid.weekend, hours_open(room["weekend_hours"]), hours_open(room["weekday_hours"]))


def _next_close(open_mask: np.ndarray, truncate: bool) -> np.ndarray:
    """For each hour, the first closed hour at or after it (``hours`` if none)."""
    hours = open_mask.size
    if not truncate:
        return np.full(hours, float(hours))
    idx = np.where(~open_mask, np.arange(hours), hours)
    return np.minimum.accumulate(idx[::-1])[::-1].astype(np.float64)


class HourlyModel:
    """A resolved profile laid out on an hourly grid."""

    def __init__(self, prof: Mapping[str, Any], days: float):
        cal = prof["calendar"]
        self.start = parse_start(cal["start"], cal.get("timezone"), "profile calendar")
        self.length = float(days) * 86400.0
        self.end_h = self.length / 3600.0
        hours = max(int(math.ceil(self.end_h)), 1)
        self.grid = HourGrid(self.start, hours, cal)
        types = prof["machine_types"]
        names, rooms, active, idle, room_index, popularity, opens, kinds = [], [], [], [], [], [], [], []
        for kind in prof["rooms"]:
            mtype = types.get(kind["type"])
            if mtype is None:
                raise TraceError(f"profile: room {kind['name']!r} has unknown machine type {kind['type']!r}")
            from condor_rlrep.sim.limits import MAX_MACHINES, check_machines

            try:
                count = check_machines(kind.get("count", 1), f"profile: room {kind['name']!r}: count")
                per_room = check_machines(kind["machines"], f"profile: room {kind['name']!r}: machines")
            except InputError as err:
                raise TraceError(err.message) from None
            if count * per_room + len(names) > MAX_MACHINES:
                raise TraceError(f"profile: room {kind['name']!r}: {count} x {per_room} machines: above the "
                                 f"limit of {MAX_MACHINES:,} machines per trace")
            mask = _open_mask(self.grid, kind)
            for i in range(count):
                room = f"{kind['name']}-{i + 1:02d}" if count > 1 else str(kind["name"])
                opens.append(mask)
                kinds.append(str(kind["name"]))
                popularity.append(float(kind.get("popularity", 1.0)))
                for j in range(per_room):
                    names.append(f"{room}-{j + 1:03d}")
                    rooms.append(room)
                    room_index.append(len(opens) - 1)
                    active.append(float(mtype["active_watts"]))
                    idle.append(float(mtype["idle_watts"]))
        if not names:
            raise TraceError("profile: no machines (rooms with machines > 0 needed)")
        self.names, self.rooms = names, rooms
        self.room_kinds = kinds  # per individual room: the [[rooms]] entry it came from
        self.active, self.idle = np.array(active), np.array(idle)
        self.room_of = np.array(room_index, dtype=np.int64)
        self.open = np.array(opens)
        logins = prof["logins"]
        base = self.grid.profile(logins, "logins") * self.grid.login_factor
        self.login_shape = np.array(popularity)[:, None] * base[None, :] * self.open
        truncate = bool(logins.get("truncate_at_close", True))
        self.next_close = np.array([_next_close(m, truncate) for m in self.open])
        self.job_shape = self.grid.profile(prof["jobs"], "jobs") * self.grid.job_factor
