"""Read and write the on-disk trace format (a folder of CSV files and TOML).

Format (see the README, "Trace format")::

    DIR/trace.toml     start = "2010-01-01T00:00:00+00:00"   # ISO date-time with zone
                       timezone = "Europe/London"             # optional IANA key
                       length = 31536000                      # seconds
                       source = "free text"
    DIR/machines.csv   machine,room,active_watts,idle_watts[,extra columns kept verbatim]
    DIR/logins.csv     machine,start,end          # seconds from the trace start
    DIR/jobs.csv       job,submit,duration[,owner]

Any CSV may instead be ``NAME.csv.gz``. Logins are busy periods of a machine
(an interactive user, or a period the machine is unavailable). Rows may come
in any order; the reader sorts logins by start and jobs by submit time
(stable, so equal times keep file order).

The CSV files are parsed by :mod:`condor_rlrep.sim.trace_csv` (vectorised,
exact lines for errors); this module checks what they hold, assembles the
:class:`~condor_rlrep.sim.trace.Trace`, validates one held in memory, and
writes a trace folder atomically, byte for byte the same for the same trace.
"""

from __future__ import annotations

import gzip
import io
import logging
import math
import os
import shutil
import tempfile
import tomllib
from collections.abc import Sequence
from datetime import datetime, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.trace import StringColumn, Trace
from condor_rlrep.sim.trace_cache import load_cached, store_cached, trace_digest
from condor_rlrep.sim.trace_csv import Columns, Table, parse_table, read_text

__all__ = ["read_trace", "write_trace", "validate_trace", "parse_start"]

log = logging.getLogger(__name__)

MACHINE_COLUMNS = ("machine", "room", "active_watts", "idle_watts")
LOGIN_COLUMNS = ("machine", "start", "end")
JOB_COLUMNS = ("job", "submit", "duration")


# ---------------------------------------------------------------- reading


def _find(directory: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    raise TraceError(f"missing {stem} (or {stem}.gz)", path=str(directory))


def parse_start(value: object, zone: object, path: str) -> datetime:
    """``trace.toml``'s start (ISO string or TOML date-time) in its time zone."""
    if isinstance(value, str):
        try:
            start = datetime.fromisoformat(value)
        except ValueError as err:
            raise TraceError(f"start {value!r} is not an ISO date-time", path=path) from err
    elif isinstance(value, datetime):
        start = value
    else:
        raise TraceError("start must be an ISO date-time with a time zone", path=path)
    tz: tzinfo | None = None
    if zone is not None:
        try:
            tz = ZoneInfo(str(zone))
        except (ZoneInfoNotFoundError, ValueError) as err:
            raise TraceError(f"unknown time zone {zone!r}", path=path) from err
    if start.tzinfo is None:
        if tz is None:
            raise TraceError(f"start {value!s} has no time zone (add an offset or timezone = ...)", path=path)
        return start.replace(tzinfo=tz)
    return start.astimezone(tz) if tz is not None else start


def _read_meta(directory: Path) -> tuple[datetime, float, str]:
    path = directory / "trace.toml"
    if not path.is_file():
        raise TraceError("missing trace.toml", path=str(directory))
    try:
        meta = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise TraceError(f"cannot parse: {err}", path=str(path)) from err
    if "start" not in meta:
        raise TraceError("missing key 'start'", path=str(path))
    start = parse_start(meta["start"], meta.get("timezone"), str(path))
    length = meta.get("length")
    if isinstance(length, bool) or not isinstance(length, (int, float)) or not math.isfinite(length) or length <= 0:
        raise TraceError(f"length must be a positive number of seconds, not {length!r}", path=str(path))
    from condor_rlrep.sim.limits import MAX_TRACE_SECONDS

    if length > MAX_TRACE_SECONDS:
        raise TraceError(f"length: {length!r} s is above its limit (<= {MAX_TRACE_SECONDS:g} s, a century)",
                         path=str(path))
    return start, float(length), str(meta.get("source", ""))


def read_trace(directory: str | Path) -> Trace:
    """Load a trace folder; raise :class:`TraceError` naming file and line on bad input.

    A large folder is parsed once: later reads take the binary copy beside it
    (:mod:`condor_rlrep.sim.trace_cache`) while the files' digest is unchanged."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TraceError("not a trace folder", path=str(directory))
    start, length, source = _read_meta(directory)
    files = [directory / "trace.toml"] + [_find(directory, f"{stem}.csv") for stem in ("machines", "logins", "jobs")]
    try:
        digest = trace_digest(files)
    except OSError as err:
        raise TraceError(f"cannot read: {err}", path=str(directory)) from err
    cached = load_cached(directory, digest, files)
    if cached is not None:
        return Trace(start=start, length=length, source=source, **cached)
    trace = _parse_trace(directory, start, length, source)
    store_cached(directory, digest, trace, files)
    return trace


def _parse_trace(directory: Path, start: datetime, length: float, source: str) -> Trace:
    mpath = _find(directory, "machines.csv")
    machines = parse_table(read_text(mpath), str(mpath), MACHINE_COLUMNS)
    if len(machines) == 0:
        raise TraceError("empty trace: no machines", path=str(mpath))
    names = machines.columns["machine"]
    index: dict[str, int] = {}
    for row, name in enumerate(names):
        if not name:
            raise TraceError("column 'machine': empty name", path=str(mpath), line=machines.line(row))
        if name in index:
            raise TraceError(f"column 'machine': duplicate machine {name!r}", path=str(mpath), line=machines.line(row))
        index[name] = row
    active = machines.floats("active_watts")
    idle = machines.floats("idle_watts")
    for col, arr in (("active_watts", active), ("idle_watts", idle)):
        bad = np.flatnonzero(arr < 0)
        if bad.size:
            raise TraceError(f"column {col!r}: negative power", path=str(mpath), line=machines.line(int(bad[0])))
    extra = {h: machines.columns[h] for h in machines.header if h not in MACHINE_COLUMNS}

    lpath = _find(directory, "logins.csv")
    logins = Columns(read_text(lpath), str(lpath), LOGIN_COLUMNS, floats=("start", "end"), lookup={"machine": index})
    unknown = logins.unknown()
    if unknown is not None:
        raise TraceError(
            f"column 'machine': unknown machine {unknown[1]!r} (not in {mpath.name})", path=str(lpath),
            line=logins.line(unknown[2]),
        )
    machine_idx = logins.columns["machine"]
    lstart = logins.columns["start"]
    lend = logins.columns["end"]
    _check(lstart < 0, logins, "column 'start': negative time", lstart)
    _check(lend < lstart, logins, "column 'end': login ends before it starts", lend)

    jpath = _find(directory, "jobs.csv")
    jobs = Columns(read_text(jpath), str(jpath), JOB_COLUMNS, floats=("submit", "duration"), interned=("owner",),
                    compact=("job",))
    submit = jobs.columns["submit"]
    duration = jobs.columns["duration"]
    _check(submit < 0, jobs, "column 'submit': negative time", submit)
    _check(duration < 0, jobs, "column 'duration': negative duration", duration)
    if len(logins) == 0 and len(jobs) == 0:
        raise TraceError("empty trace: no logins and no jobs", path=str(directory))

    login_order = _stable_order(lstart)
    if login_order is not None:
        machine_idx, lstart, lend = machine_idx[login_order], lstart[login_order], lend[login_order]
    job_order = _stable_order(submit)
    job_names = jobs.columns["job"]
    owners = jobs.columns.get("owner")
    if job_order is not None:
        job_names = job_names.take(job_order)
        owners = [owners[i] for i in job_order] if owners is not None else None
        submit, duration = submit[job_order], duration[job_order]
    return Trace(
        start=start,
        length=length,
        source=source,
        machine_names=list(names),
        machine_rooms=list(machines.columns["room"]),
        active_watts=active,
        idle_watts=idle,
        login_machine=machine_idx,
        login_start=lstart,
        login_end=lend,
        job_names=job_names,
        job_submit=submit,
        job_duration=duration,
        job_owner=list(owners) if owners is not None else None,
        machine_extra=extra,
    )


def _check(bad_mask: np.ndarray, table: Table | Columns, message: str, values: np.ndarray) -> None:
    bad = np.flatnonzero(bad_mask)
    if bad.size:
        row = int(bad[0])
        raise TraceError(f"{message} ({values[row]:g})", path=table.path, line=table.line(row))


def _stable_order(values: np.ndarray) -> np.ndarray | None:
    if values.size < 2 or bool(np.all(values[1:] >= values[:-1])):
        return None
    return np.argsort(values, kind="stable")


# ---------------------------------------------------------------- checking


def validate_trace(trace: Trace) -> None:
    """Check an in-memory trace (shapes, sortedness, ranges); raise TraceError."""
    m, n_l, n_j = trace.machine_count, trace.login_count, trace.job_count
    where = f"trace {trace.source!r}" if trace.source else "trace"
    if trace.start.tzinfo is None:
        raise TraceError(f"{where}: start has no time zone")
    if not trace.length > 0:
        raise TraceError(f"{where}: length must be positive")
    if m == 0:
        raise TraceError(f"{where}: empty trace: no machines")
    if n_l == 0 and n_j == 0:
        raise TraceError(f"{where}: empty trace: no logins and no jobs")
    shapes = {
        "machine_rooms": len(trace.machine_rooms) == m,
        "active_watts": trace.active_watts.shape == (m,),
        "idle_watts": trace.idle_watts.shape == (m,),
        "login_start": trace.login_start.shape == (n_l,),
        "login_end": trace.login_end.shape == (n_l,),
        "login_machine": trace.login_machine.shape == (n_l,),
        "job_names": len(trace.job_names) == n_j,
        "job_duration": trace.job_duration.shape == (n_j,),
        "job_owner": trace.job_owner is None or len(trace.job_owner) == n_j,
    }
    shapes.update({f"machine_extra[{k}]": len(v) == m for k, v in trace.machine_extra.items()})
    wrong = [k for k, ok in shapes.items() if not ok]
    if wrong:
        raise TraceError(f"{where}: columns of the wrong length: {', '.join(wrong)}")
    if len(set(trace.machine_names)) != m:
        raise TraceError(f"{where}: duplicate machine names")
    if n_l:
        if trace.login_machine.min() < 0 or trace.login_machine.max() >= m:
            raise TraceError(f"{where}: login on an unknown machine index")
        if np.any(trace.login_end < trace.login_start):
            raise TraceError(f"{where}: a login ends before it starts")
        if np.any(np.diff(trace.login_start) < 0):
            raise TraceError(f"{where}: logins not sorted by start")
    if n_j:
        if np.any(trace.job_duration < 0):
            raise TraceError(f"{where}: negative job duration")
        if np.any(np.diff(trace.job_submit) < 0):
            raise TraceError(f"{where}: jobs not sorted by submit time")


# ---------------------------------------------------------------- writing


def _number_strings(values: np.ndarray) -> list[str]:
    """Shortest exact text for each value (integers without ``.0``)."""
    values = np.asarray(values, dtype=np.float64)
    if values.size and np.all(np.abs(values) < 2**53) and np.all(values == np.floor(values)):
        return list(map(str, values.astype(np.int64).tolist()))
    return [text[:-2] if text.endswith(".0") else text for text in map(repr, values.tolist())]


def _check_fields(texts: Sequence[str], what: str) -> None:
    """Refuse names the plain CSV writer cannot represent (checked in one pass)."""
    joined = texts.text if isinstance(texts, StringColumn) else "\x00".join(texts)
    if any(c in joined for c in ',"\n\r'):
        bad = next(t for t in texts if any(c in t for c in ',"\n\r'))
        raise TraceError(f"{what} {bad!r} contains a comma, quote or newline")


def _csv_text(header: list[str], columns: list[list[str]]) -> str:
    lines = [",".join(header)]
    lines.extend(map(",".join, zip(*columns)))
    return "\n".join(lines) + "\n"


def _write_file(path: Path, text: str, compress: bool) -> None:
    data = text.encode("utf-8")
    if compress:
        # mtime=0 and no file name: same trace, same bytes. Level 1: a year
        # compresses 4:1 in a third of the time of the default level.
        buffer = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=1) as gz:
            gz.write(data)
        data = buffer.getvalue()
    path.write_bytes(data)


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def write_trace(trace: Trace, directory: str | Path, *, compress: bool = False, overwrite: bool = True) -> Path:
    """Write ``trace`` as a trace folder, atomically (temp folder, then rename).

    With ``compress`` the two large files (logins, jobs) are written as
    ``.csv.gz``. An existing folder at ``directory`` is replaced only when it
    holds a trace (``trace.toml``) or is empty, and ``overwrite`` is set.
    """
    validate_trace(trace)
    directory = Path(directory)
    if directory.exists():
        if not overwrite:
            raise TraceError("already exists", path=str(directory))
        if not directory.is_dir() or (any(directory.iterdir()) and not (directory / "trace.toml").exists()):
            raise TraceError("exists and is not a trace folder; refusing to replace it", path=str(directory))
    _check_fields(trace.machine_names + trace.machine_rooms, "machine/room name")
    _check_fields(trace.job_names, "job name")
    _check_fields(trace.job_owner or [], "owner")
    _check_fields(list(trace.machine_extra), "machines.csv column")
    for key, values in trace.machine_extra.items():
        _check_fields(values, f"machines.csv {key}")

    parent = directory.resolve().parent
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", dir=parent))
    try:
        zone = getattr(trace.start.tzinfo, "key", None)
        meta = [f"start = {_toml_string(trace.start.isoformat())}"]
        if zone:
            meta.append(f"timezone = {_toml_string(zone)}")
        length = int(trace.length) if float(trace.length).is_integer() else trace.length
        meta += [f"length = {length!r}", f"source = {_toml_string(trace.source)}"]
        (tmp / "trace.toml").write_text("\n".join(meta) + "\n", encoding="utf-8")

        extra_keys = list(trace.machine_extra)
        _write_file(
            tmp / "machines.csv",
            _csv_text(
                list(MACHINE_COLUMNS) + extra_keys,
                [
                    trace.machine_names,
                    trace.machine_rooms,
                    _number_strings(trace.active_watts),
                    _number_strings(trace.idle_watts),
                ]
                + [trace.machine_extra[k] for k in extra_keys],
            ),
            compress=False,
        )
        names = np.array(trace.machine_names, dtype=object)
        suffix = ".csv.gz" if compress else ".csv"
        _write_file(
            tmp / ("logins" + suffix),
            _csv_text(
                list(LOGIN_COLUMNS),
                [
                    names[trace.login_machine].tolist() if trace.login_count else [],
                    _number_strings(trace.login_start),
                    _number_strings(trace.login_end),
                ],
            ),
            compress,
        )
        job_header = list(JOB_COLUMNS) + (["owner"] if trace.job_owner is not None else [])
        job_cols = [trace.job_names, _number_strings(trace.job_submit), _number_strings(trace.job_duration)]
        if trace.job_owner is not None:
            job_cols.append(trace.job_owner)
        _write_file(tmp / ("jobs" + suffix), _csv_text(job_header, job_cols), compress)
        for f in tmp.iterdir():
            os.chmod(f, 0o644)
        os.chmod(tmp, 0o755)
        if directory.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{directory.name}.old.", dir=parent))
            os.replace(directory, old / "t")
            os.replace(tmp, directory)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, directory)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.debug("wrote trace %s (%d machines, %d logins, %d jobs)", directory, trace.machine_count, trace.login_count, trace.job_count)
    return directory
