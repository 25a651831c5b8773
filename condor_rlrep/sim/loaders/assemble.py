"""Log files of one format laid out as a :class:`~condor_rlrep.sim.trace.Trace`.

The trace starts at midnight (in ``timezone``) of the day of the earliest
event, unless ``start`` is given; its length runs to the last event, rounded
up to whole hours. Jobs submitted before the start are dropped; busy
periods are clipped to it, and the overlapping periods of one machine
merged into their union (the engine needs a machine's sessions apart).
Machines come from a ``machines.csv`` (same format as in a trace folder)
or from the logs themselves; machines without power figures get
``active_watts`` and ``idle_watts``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.loaders.condor import parse_condor_json, parse_condor_long
from condor_rlrep.sim.loaders.fta import parse_fta
from condor_rlrep.sim.loaders.records import Records
from condor_rlrep.sim.loaders.swf import parse_swf
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.trace_csv import parse_table, read_text
from condor_rlrep.sim.trace_io import MACHINE_COLUMNS, validate_trace

__all__ = ["FORMATS", "load_trace", "read_machines"]

log = logging.getLogger(__name__)

FORMATS = ("condor-json", "condor-long", "swf", "fta")
DEFAULT_ACTIVE_WATTS = 100.0
DEFAULT_IDLE_WATTS = 60.0


def read_machines(path: str | Path) -> tuple[list[str], list[str], np.ndarray, np.ndarray, dict[str, list[str]]]:
    """Machines from a ``machines.csv`` (same format as in a trace folder)."""
    path = Path(path)
    if not path.is_file():
        raise TraceError("no such machines file", path=str(path))
    table = parse_table(read_text(path), str(path), MACHINE_COLUMNS)
    if len(table) == 0:
        raise TraceError("no machines", path=str(path))
    names = table.columns["machine"]
    seen: set[str] = set()
    for row, name in enumerate(names):
        if name in seen:
            raise TraceError(f"duplicate machine {name!r}", path=str(path), line=table.line(row))
        seen.add(name)
    extra = {h: table.columns[h] for h in table.header if h not in MACHINE_COLUMNS}
    return list(names), list(table.columns["room"]), table.floats("active_watts"), table.floats("idle_watts"), extra


def _zone(name: str | None) -> ZoneInfo:
    if not name or name.upper() == "UTC":
        return ZoneInfo("UTC")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as err:
        raise TraceError(f"unknown time zone {name!r}") from err


def _merge_intervals(machine: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Union of overlapping busy periods per machine (vectorised)."""
    if machine.size == 0:
        return machine, start, end
    order = np.lexsort((start, machine))
    machine, start, end = machine[order], start[order], end[order]
    span = float(max(end.max(), start.max()) - min(start.min(), 0.0)) + 1.0
    key_end = np.maximum.accumulate(machine * span + end)  # running max of end, reset per machine
    new_group = np.ones(machine.size, dtype=bool)
    new_group[1:] = (machine[1:] != machine[:-1]) | (machine[1:] * span + start[1:] > key_end[:-1])
    first = np.flatnonzero(new_group)
    return machine[first], start[first], np.maximum.reduceat(end, first)


def load_trace(
    fmt: str,
    paths: Iterable[str | Path],
    *,
    machines: str | Path | None = None,
    timezone: str | None = None,
    start: datetime | None = None,
    active_watts: float = DEFAULT_ACTIVE_WATTS,
    idle_watts: float = DEFAULT_IDLE_WATTS,
) -> Trace:
    """Load log files of one format (``FORMATS``) into a trace."""
    parsers = {
        "condor-json": parse_condor_json,
        "condor-long": parse_condor_long,
        "swf": parse_swf,
        "fta": parse_fta,
    }
    if fmt not in parsers:
        raise TraceError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}")
    paths = [Path(p) for p in paths]
    if not paths:
        raise TraceError("no input files")
    records = Records()
    for path in paths:
        if not path.is_file():
            raise TraceError("no such file", path=str(path))
        records.extend(parsers[fmt](read_text(path), str(path)))

    if machines is not None:
        names, rooms, active, idle, extra = read_machines(machines)
        if fmt in ("condor-json", "condor-long"):
            records.machines = {}
    else:
        if not records.machines:
            raise TraceError(f"the {fmt} input names no machines; give a machines file (--machines)", path=str(paths[0]))
        names = list(records.machines)
        rooms = [records.machines[n][0] for n in names]
        active = np.full(len(names), float(active_watts))
        idle = np.full(len(names), float(idle_watts))
        keys = sorted({k for _, e in records.machines.values() for k in e})
        extra = {k: [records.machines[n][1].get(k, "") for n in names] for k in keys}
    index = {n: i for i, n in enumerate(names)}
    for i, m in enumerate(records.login_machine):
        if m not in index:
            file, line = records.login_where[i]
            raise TraceError(f"node {m!r} is not in the machines file {machines}", path=file, line=line)

    tz = _zone(timezone or records.timezone)
    submit = np.array(records.job_submit, dtype=np.float64)
    lstart = np.array(records.login_start, dtype=np.float64)
    lend = np.array(records.login_end, dtype=np.float64)
    times = np.concatenate((submit, lstart))
    if times.size == 0:
        raise TraceError(f"empty trace: no jobs and no unavailability in {', '.join(map(str, paths))}")
    if start is None:
        first = datetime.fromtimestamp(float(times.min()), tz)
        start = first.replace(hour=0, minute=0, second=0, microsecond=0)
        start = datetime.fromtimestamp(start.timestamp(), tz)  # fix the offset after replace() across DST
    elif start.tzinfo is None:
        start = start.replace(tzinfo=tz)
    origin = start.timestamp()
    lm = np.array([index[m] for m in records.login_machine], dtype=np.int64)
    lm, ls, le = _merge_intervals(lm, lstart - origin, lend - origin)
    keep = le > 0  # periods wholly before the start are dropped, the rest clipped
    lm, ls, le = lm[keep], np.maximum(ls[keep], 0.0), le[keep]
    rel_submit = submit - origin
    jkeep = rel_submit >= 0
    if not np.all(jkeep):
        log.warning("dropped %d jobs submitted before the trace start", int((~jkeep).sum()))
    duration = np.array(records.job_duration, dtype=np.float64)[jkeep]
    rel_submit = rel_submit[jkeep]
    job_idx = np.flatnonzero(jkeep)
    job_order = np.argsort(rel_submit, kind="stable")
    login_order = np.argsort(ls, kind="stable")
    last = max(
        float((rel_submit + duration).max(initial=0.0)),
        float(le.max(initial=0.0)),
        records.last_time - origin,
        1.0,
    )
    length = math.ceil(last / 3600.0) * 3600.0
    owners = [records.job_owner[i] for i in job_idx[job_order]]
    source = f"loaded from {fmt}: {', '.join(p.name for p in paths)}"
    if records.skipped:
        source += f" ({records.skipped} records without a usable submit time or duration skipped)"
    trace = Trace(
        start=start,
        length=length,
        source=source,
        machine_names=names,
        machine_rooms=rooms,
        active_watts=np.asarray(active, dtype=np.float64),
        idle_watts=np.asarray(idle, dtype=np.float64),
        login_machine=lm[login_order].astype(np.int32),
        login_start=ls[login_order],
        login_end=le[login_order],
        job_names=[records.job_names[i] for i in job_idx[job_order]],
        job_submit=rel_submit[job_order],
        job_duration=duration[job_order],
        job_owner=owners if any(owners) else None,
        machine_extra=extra,
    )
    validate_trace(trace)
    return trace
