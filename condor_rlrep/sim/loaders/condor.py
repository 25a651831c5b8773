"""HTCondor job history (``condor_history``) as trace records.

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
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.loaders.records import Records

__all__ = ["parse_condor_json", "parse_condor_long"]


_HOST_KEYS = ("LastRemoteHost", "RemoteHost", "StartdName")


def _number(ad: Any, key: str) -> float | None:
    try:
        value = ad.get(key) if hasattr(ad, "get") else None
    except Exception:  # classad2 may raise on evaluation of odd expressions
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # an integer beyond a float's range
        return None
    return number if math.isfinite(number) else None


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
        except (RecursionError, ValueError) as err:
            raise TraceError(_unusable(err), path=path, line=lineno) from None
        if not isinstance(ad, dict):
            raise TraceError("line is not a JSON object (job ad)", path=path, line=lineno)
        _job_from_ad(ad, records, path, lineno)
    return records


def _unusable(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "not usable JSON: arrays/objects nested too deeply"
    return "not usable JSON: an integer with more digits than Python reads (4,300)"


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
        except (RecursionError, ValueError) as err:
            raise TraceError(_unusable(err), path=path, line=line_at(pos)) from None
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
