"""Failure Trace Archive ``event_trace`` files as trace records.

Tab/space or comma separated; header ``event_id component_id node_id
platform_id node_name event_type event_start_time event_stop_time
event_end_reason`` as in the archive's files, optionally with
``component_type`` after ``event_id``; a header line, when present, decides
the order. ``event_type`` 0 = unavailable, 1 = available; times are Unix
seconds. **Every unavailable period becomes a row of logins.csv on that
node** — to the simulator a down machine is a busy one: it evicts running
jobs and accepts none until the period ends. Overlapping periods of one
node are merged (when the trace is assembled). Machines are named by
``node_id`` (node names repeat in the archive's files) with room
``platform-<platform_id>`` and ``node_name`` kept as an extra column.
"""

from __future__ import annotations

from collections.abc import Sequence

from condor_rlrep.errors import TraceError
from condor_rlrep.sim.loaders.records import Records

__all__ = ["parse_fta"]


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
