"""Standard Workload Format (SWF v2.2) logs as trace records.

``;`` header comments (``UnixStartTime``, ``TimeZoneString``,
``MaxNodes``/``MaxProcs``) and 18 whitespace-separated fields per job.
Jobs: field 1 (job number), 2 (submit, seconds from ``UnixStartTime``), 4
(run time; −1 = unknown, skipped), 12 (user id → owner ``u<id>``). Without
a machines file, ``MaxNodes`` (else ``MaxProcs``) machines ``node0001``…
are created.
"""

from __future__ import annotations

import logging
import math

from condor_rlrep.errors import InputError, TraceError
from condor_rlrep.sim.limits import check_machines
from condor_rlrep.sim.loaders.records import Records

__all__ = ["parse_swf"]

log = logging.getLogger(__name__)


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
        if not math.isfinite(base):
            raise TraceError(f"header UnixStartTime {header['UnixStartTime']!r} is not a finite number", path=path)
    else:
        log.warning("%s: no UnixStartTime header; times taken from the Unix epoch", path)
    records.timezone = header.get("TimeZoneString") or None
    for lineno, fields in rows:
        values = []
        for name, text_value in zip(("job", "submit", "run_time", "user"), (fields[0], fields[1], fields[3], fields[11])):
            try:
                value = float(text_value)
            except ValueError as err:
                raise TraceError(f"field {name!r}: {text_value!r} is not a number", path=path, line=lineno) from err
            if not math.isfinite(value):
                raise TraceError(f"field {name!r}: {text_value!r} is not a finite number", path=path, line=lineno)
            values.append(value)
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
            value = float(header.get(key, ""))
        except ValueError:
            continue  # absent or not a number: SWF's "unknown"
        if value < 1:
            continue  # -1: unknown
        try:
            count = check_machines(header[key], f"header {key}", path=path)
        except InputError as err:
            raise TraceError(err.message, path=path) from None
        if count > 0:
            width = max(4, len(str(count)))
            for i in range(count):
                records.machines[f"node{i + 1:0{width}d}"] = ("swf", {})
            break
    return records
