"""Plain-text forms of a run's status (what ``status`` prints on a terminal)."""

from __future__ import annotations

import time
from typing import Any

from condor_rlrep.runreport.status import RunStatus

__all__ = ["status_table", "clock", "duration"]


def clock(at: float | None) -> str:
    return "-" if at is None else time.strftime("%H:%M:%S", time.localtime(at))


def duration(seconds: float | None, *, signed: bool = False) -> str:
    """``1h02m``, ``4m05s``, ``12.0s``; ``+``/``−`` when ``signed``."""
    if seconds is None:
        return "-"
    sign = ("+" if seconds >= 0 else "-") if signed else ("-" if seconds < 0 else "")
    value = abs(seconds)
    if value < 60:
        body = f"{value:.1f}s" if value < 10 else f"{value:.0f}s"
    elif value < 3600:
        body = f"{int(value // 60)}m{int(value % 60):02d}s"
    elif value < 86400:
        body = f"{int(value // 3600)}h{int(value % 3600 // 60):02d}m"
    else:
        body = f"{int(value // 86400)}d{int(value % 86400 // 3600):02d}h"
    return sign + body


def _phi(value: float | None) -> str:
    if value is None:
        return "-"
    if value in (float("inf"), float("-inf")):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3f}"


def status_table(status: RunStatus, *, limit: int | None = None) -> str:
    """Totals on top, then one row per node (``limit``: at most that many,
    the most urgent first — a 10,000-node DAG does not fit a terminal)."""
    lines = [f"{status.dag}"]
    run = status.run_id or "-"
    dagman = status.dagman
    if dagman.startswith("exited") and status.dagman_exited_at is not None:
        dagman += f" at {clock(status.dagman_exited_at)}"  # when DAGMan exited, not when status looked
    lines.append(f"run {run}  DAGMan {status.dagid or '-'} {dagman}  (status at {clock(status.now)})")
    if status.workflow_start is not None and status.deadline is not None:
        end = status.dagman_exited_at if status.dagman_exited_at is not None else status.now
        elapsed = end - status.workflow_start
        lines.append(
            f"started {clock(status.workflow_start)}  elapsed {duration(elapsed)}  "
            f"deadline {clock(status.deadline)} ((1+{status.phi:g})·CR(W), CR(W) {duration(status.critical_path_s)})  "
            f"slack {duration(status.slack_s, signed=True)}"
        )
    counts = "  ".join(f"{state} {count}" for state, count in status.counts.items())
    lines.append(f"nodes {len(status.nodes)}: {counts}")
    r = status.replicas
    lines.append(f"replicas: {r['decided']} decided, {r['running']} running, {r['idle']} idle, {r['held']} held, "
                 f"{r['removed']} removed, {r['evictions']} evictions")
    for warning in status.warnings:
        lines.append(f"warning: {warning}")
    rows = status.nodes
    if limit is not None and len(rows) > limit:
        urgent = {"running": 0, "idle": 1, "held": 1, "PRE": 2, "won": 3, "POST": 3, "failed": 0}
        rows = sorted(rows, key=lambda s: (urgent.get(s.state, 9), s.slack_s if s.slack_s is not None else 1e300))
        rows = rows[:limit]
        lines.append(f"(showing {limit} of {len(status.nodes)} nodes, active and least slack first; --all for every node)")
    header = ("NODE", "STATE", "HOW", "DECIDED", "RUN", "IDLE", "HELD", "REMOVED", "EVICT", "WINNER", "PHI'", "SLACK",
              "NOTE")
    table: list[tuple[str, ...]] = [header]
    for s in rows:
        table.append((
            s.node, s.state, s.chosen or "-", _count(s.decided), _count(s.running), _count(s.idle), _count(s.held),
            _count(s.removed), _count(s.evictions), "-" if s.winner is None else f"{s.cluster}.{s.winner}",
            _phi(s.phi_prime), duration(s.slack_s, signed=True), s.note or "",
        ))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines.append("")
    for row in table:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
    return "\n".join(lines) + "\n"


def _count(value: Any) -> str:
    return "-" if value is None else str(value)
