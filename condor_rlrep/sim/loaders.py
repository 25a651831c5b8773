"""Turn real cluster logs into a :class:`~condor_rlrep.sim.trace.Trace`.

Formats (``FORMATS``):

``condor-json``
    ``condor_history -json`` output: a JSON array of job ads, or one JSON ad
    per line. Jobs come from ``QDate`` (submit), the duration of the run that
    completed and ``Owner``; names are ``ClusterId.ProcId``. Duration, first
    available of: ``LastRemoteWallClockTime`` (last run), ``CompletionDate −
    JobCurrentStartDate``, ``CompletionDate − JobStartDate``,
    ``RemoteWallClockTime`` (all runs; an overestimate after evictions). Ads
    with no ``QDate`` or no duration are skipped (counted in the source).
    Machines are the hosts in ``LastRemoteHost``/``RemoteHost``/``StartdName``
    (``slot1@`` prefix removed), unless a machines file is given.
``condor-long``
    ``condor_history -long`` output: ads of ``Attr = value`` lines separated by
    blank lines, parsed with ``classad2.parseOne``. Same fields as above.
``swf``
    Standard Workload Format v2.2: ``;`` header comments (``UnixStartTime``,
    ``TimeZoneString``, ``MaxNodes``/``MaxProcs``) and 18 whitespace-separated
    fields per job. Jobs: field 1 (job number), 2 (submit, seconds from
    ``UnixStartTime``), 4 (run time; −1 = unknown, skipped), 12 (user id →
    owner ``u<id>``). Without a machines file, ``MaxNodes`` (else
    ``MaxProcs``) machines ``node0001``… are created.
``fta``
    Failure Trace Archive ``event_trace`` files (tab/space or comma separated;
    header ``event_id component_id node_id platform_id node_name event_type
    event_start_time event_stop_time event_end_reason`` as in the archive's
    files, optionally with ``component_type`` after ``event_id``; a header
    line, when present, decides the order). ``event_type`` 0 = unavailable,
    1 = available; times are Unix seconds. **Every unavailable period becomes
    a row of logins.csv on that node** — to the simulator a down machine is a
    busy one: it evicts running jobs and accepts none until the period ends.
    Overlapping periods of one node are merged. Machines are named by
    ``node_id`` (node names repeat in the archive's files) with room
    ``platform-<platform_id>`` and ``node_name`` kept as an extra column.

The trace starts at midnight (in ``timezone``) of the day of the earliest
event, unless ``start`` is given; its length runs to the last event, rounded
up to whole hours. Machines without power figures get ``active_watts`` and
``idle_watts``.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.trace import Trace
from condor_rlrep.sim.trace_io import MACHINE_COLUMNS, _read_text, parse_table, validate_trace

__all__ = [
    "FORMATS",
    "Records",
    "load_trace",
    "parse_condor_json",
    "parse_condor_long",
    "parse_swf",
    "parse_fta",
    "read_machines",
]

log = logging.getLogger(__name__)

FORMATS = ("condor-json", "condor-long", "swf", "fta")
DEFAULT_ACTIVE_WATTS = 100.0
DEFAULT_IDLE_WATTS = 60.0


@dataclass
class Records:
    """What one log file yields, in absolute Unix seconds."""

    job_names: list[str] = field(default_factory=list)
    job_submit: list[float] = field(default_factory=list)
    job_duration: list[float] = field(default_factory=list)
    job_owner: list[str] = field(default_factory=list)
    machines: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # name -> (room, extra)
    login_machine: list[str] = field(default_factory=list)
    login_start: list[float] = field(default_factory=list)
    login_end: list[float] = field(default_factory=list)
    login_where: list[tuple[str, int]] = field(default_factory=list)  # (file, line) of each login row
    last_time: float = 0.0  # latest time the input covers (Unix seconds)
    skipped: int = 0
    timezone: str | None = None

    def extend(self, other: Records) -> None:
        for name in (
            "job_names", "job_submit", "job_duration", "job_owner",
            "login_machine", "login_start", "login_end", "login_where",
        ):
            getattr(self, name).extend(getattr(other, name))
        for name, value in other.machines.items():
            self.machines.setdefault(name, value)
        self.skipped += other.skipped
        self.last_time = max(self.last_time, other.last_time)
        self.timezone = self.timezone or other.timezone


# ------------------------------------------------------------------ HTCondor history

_HOST_KEYS = ("LastRemoteHost", "RemoteHost", "StartdName")


def _number(ad: Any, key: str) -> float | None:
    try:
        value = ad.get(key) if hasattr(ad, "get") else None
    except Exception:  # classad2 may raise on evaluation of odd expressions
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _job_from_ad(ad: Any, records: Records, path: str, line: int | None) -> None:
    qdate = _number(ad, "QDate")
    completion = _number(ad, "CompletionDate") or 0.0
    duration = None
    if completion > 0:
        for candidate in (
            _number(ad, "LastRemoteWallClockTime"),
            _diff(completion, _number(ad, "JobCurrentStartDate")),
            _diff(completion, _number(ad, "JobStartDate")),
        ):
            if candidate is not None and candidate >= 0:
                duration = candidate
                break
    if duration is None:
        duration = _number(ad, "RemoteWallClockTime")
    if qdate is None or duration is None:
        records.skipped += 1
        return
    if duration < 0:
        raise TraceError(f"job has a negative duration ({duration:g} s)", path=path, line=line)
    cluster, proc = _number(ad, "ClusterId"), _number(ad, "ProcId")
    if cluster is not None:
        name = f"{int(cluster)}.{int(proc or 0)}"
    else:
        name = str(ad.get("GlobalJobId") or f"job{len(records.job_names) + 1}")
    owner = ad.get("Owner")
    records.job_names.append(name)
    records.job_submit.append(qdate)
    records.job_duration.append(duration)
    records.job_owner.append(owner if isinstance(owner, str) else "")
    for key in _HOST_KEYS:
        host = ad.get(key)
        if isinstance(host, str) and host:
            records.machines.setdefault(host.rpartition("@")[2], ("pool", {}))
            break


def _diff(end: float, begin: float | None) -> float | None:
    return end - begin if begin is not None and begin > 0 else None


def parse_condor_json(text: str, path: str = "<json>") -> Records:
    """Jobs (and hosts) from ``condor_history -json`` text (array or one ad per line)."""
    records = Records()
    stripped = text.lstrip()
    if stripped.startswith("["):
        for lineno, ad in _json_array(text, path):
            if not isinstance(ad, dict):
                raise TraceError("array item is not a job ad (object)", path=path, line=lineno)
            _job_from_ad(ad, records, path, lineno)
        return records
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            ad = json.loads(line)
        except json.JSONDecodeError as err:
            raise TraceError(f"malformed JSON ad: {err.msg} (column {err.colno})", path=path, line=lineno) from err
        if not isinstance(ad, dict):
            raise TraceError("line is not a JSON object (job ad)", path=path, line=lineno)
        _job_from_ad(ad, records, path, lineno)
    return records


def _json_array(text: str, path: str) -> Iterable[tuple[int, Any]]:
    """Items of a JSON array with the line each starts on."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")
    pos = ws.match(text, 0).end() + 1  # past '['
    line, counted = 1, 0

    def line_at(idx: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, idx)
        counted = idx
        return line

    pos = ws.match(text, pos).end()
    if text.startswith("]", pos):
        return
    while True:
        try:
            item, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise TraceError(f"malformed JSON: {err.msg} (column {err.colno})", path=path, line=err.lineno) from err
        yield line_at(pos), item
        pos = ws.match(text, end).end()
        if text.startswith(",", pos):
            pos = ws.match(text, pos + 1).end()
        elif text.startswith("]", pos):
            if text[pos + 1 :].strip():
                raise TraceError("text after the JSON array", path=path, line=line_at(pos))
            return
        else:
            raise TraceError("expected ',' or ']' in the JSON array", path=path, line=line_at(pos))


_ATTR_LINE = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_.]*\s*=\s*\S")


def parse_condor_long(text: str, path: str = "<long>") -> Records:
    """Jobs (and hosts) from ``condor_history -long`` text, via ``classad2.parseOne``."""
    import classad2  # the real bindings; imported here so the simulator does not need them

    records = Records()
    block: list[str] = []
    first = 0

    def flush() -> None:
        if not block:
            return
        ad = classad2.parseOne("\n".join(block) + "\n", classad2.ParserType.Old)
        if len(ad) == 0:
            raise TraceError("cannot parse this job ad", path=path, line=first)
        _job_from_ad(ad, records, path, first)
        block.clear()

    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            flush()
            continue
        if line.startswith("-- ") or line.lstrip().startswith("#"):
            continue
        if not _ATTR_LINE.match(line):
            raise TraceError(f"expected 'Attribute = value', found {line.strip()[:60]!r}", path=path, line=lineno)
        if not block:
            first = lineno
        block.append(line)
    flush()
    return records


# ------------------------------------------------------------------ SWF

_SWF_FIELDS = (
    "job", "submit", "wait", "run_time", "allocated_procs", "avg_cpu", "used_memory", "requested_procs",
    "requested_time", "requested_memory", "status", "user", "group", "executable", "queue", "partition",
    "preceding_job", "think_time",
)  # fmt: skip


def parse_swf(text: str, path: str = "<swf>") -> Records:
    """Jobs from a Standard Workload Format log (times made absolute with ``UnixStartTime``)."""
    records = Records()
    header: dict[str, str] = {}
    rows: list[tuple[int, list[str]]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(";"):
            key, sep, value = stripped[1:].partition(":")
            if sep:
                header.setdefault(key.strip(), value.strip())
            continue
        fields = stripped.split()
        if len(fields) != len(_SWF_FIELDS):
            raise TraceError(f"expected {len(_SWF_FIELDS)} SWF fields, found {len(fields)}", path=path, line=lineno)
        rows.append((lineno, fields))
    base = 0.0
    if "UnixStartTime" in header:
        try:
            base = float(header["UnixStartTime"])
        except ValueError as err:
            raise TraceError(f"header UnixStartTime {header['UnixStartTime']!r} is not a number", path=path) from err
    else:
        log.warning("%s: no UnixStartTime header; times taken from the Unix epoch", path)
    records.timezone = header.get("TimeZoneString") or None
    for lineno, fields in rows:
        values = []
        for name, text_value in zip(("job", "submit", "run_time", "user"), (fields[0], fields[1], fields[3], fields[11])):
            try:
                values.append(float(text_value))
            except ValueError as err:
                raise TraceError(f"field {name!r}: {text_value!r} is not a number", path=path, line=lineno) from err
        job, submit, run_time, user = values
        if run_time < 0:  # -1: unknown
            records.skipped += 1
            continue
        if submit < 0:
            raise TraceError(f"field 'submit': negative submit time ({submit:g})", path=path, line=lineno)
        records.job_names.append(fields[0])
        records.job_submit.append(base + submit)
        records.job_duration.append(run_time)
        records.job_owner.append(f"u{int(user)}" if user >= 0 else "")
    for key in ("MaxNodes", "MaxProcs"):
        try:
            count = int(float(header.get(key, "")))
        except ValueError:
            continue
        if count > 0:
            width = max(4, len(str(count)))
            for i in range(count):
                records.machines[f"node{i + 1:0{width}d}"] = ("swf", {})
            break
    return records


# ------------------------------------------------------------------ FTA

_FTA_COLUMNS = (
    "event_id", "component_id", "node_id", "platform_id", "node_name", "event_type",
    "event_start_time", "event_stop_time", "event_end_reason",
)  # fmt: skip
_FTA_COLUMNS_TYPED = _FTA_COLUMNS[:1] + ("component_type",) + _FTA_COLUMNS[1:]


def parse_fta(text: str, path: str = "<fta>") -> Records:
    """Unavailability periods (event_type 0) of an FTA ``event_trace`` file, as logins."""
    records = Records()
    columns: Sequence[str] | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = [f.strip() for f in stripped.split(",")] if "," in stripped else stripped.split()
        if columns is None and "event_type" in fields:
            columns = fields
            missing = {"node_id", "event_type", "event_start_time", "event_stop_time"} - set(fields)
            if missing:
                raise TraceError(f"header lacks {', '.join(sorted(missing))}", path=path, line=lineno)
            continue
        if columns is None:
            columns = _FTA_COLUMNS_TYPED if len(fields) == len(_FTA_COLUMNS_TYPED) else _FTA_COLUMNS
        if len(fields) < len(columns):
            raise TraceError(f"expected {len(columns)} columns ({' '.join(columns)}), found {len(fields)}", path=path, line=lineno)
        row = dict(zip(columns, fields))
        event_type = row["event_type"]
        if event_type not in ("0", "1"):
            raise TraceError(f"column 'event_type': {event_type!r} is not 0 (down) or 1 (up)", path=path, line=lineno)
        try:
            start = float(row["event_start_time"])
            stop = float(row["event_stop_time"])
        except ValueError as err:
            raise TraceError(f"event times {row['event_start_time']!r}, {row['event_stop_time']!r} are not numbers", path=path, line=lineno) from err
        if stop < start:
            raise TraceError(f"column 'event_stop_time': event stops ({stop:g}) before it starts ({start:g})", path=path, line=lineno)
        node = row["node_id"]
        extra = {"node_name": row["node_name"]} if "node_name" in row else {}
        records.machines.setdefault(node, (f"platform-{row.get('platform_id', '0')}", extra))
        records.last_time = max(records.last_time, stop)
        if event_type == "0":
            records.login_machine.append(node)
            records.login_start.append(start)
            records.login_end.append(stop)
            records.login_where.append((path, lineno))
    return records


# ------------------------------------------------------------------ machines file and assembly


def read_machines(path: str | Path) -> tuple[list[str], list[str], np.ndarray, np.ndarray, dict[str, list[str]]]:
    """Machines from a ``machines.csv`` (same format as in a trace folder)."""
    path = Path(path)
    if not path.is_file():
        raise TraceError("no such machines file", path=str(path))
    table = parse_table(_read_text(path), str(path), MACHINE_COLUMNS)
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
        records.extend(parsers[fmt](_read_text(path), str(path)))

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
