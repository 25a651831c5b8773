"""The run report's figures: the replicas on their slots, and the agent's policy.

Each function draws one :class:`~.report.RunReport` with matplotlib's Agg
backend into an SVG (for the HTML and Markdown) and a PNG, and returns
whether there was anything to draw.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from condor_rlrep.runreport.report import RunReport

__all__ = ["gantt", "policy", "ENDING_STYLE"]

ENDING_STYLE: dict[str, tuple[str, str]] = {
    # ended_by: (colour, legend label)
    "success": ("#8fbf8f", "exited 0 (not the winner)"),
    "failure": ("#d62728", "failed (exit ≠ 0)"),
    "evicted": ("#ff7f0e", "evicted (requeued)"),
    "held": ("#9467bd", "held"),
    "removed": ("#b0b0b0", "removed"),
    "running": ("#1f77b4", "still running"),
}
WINNER_COLOUR = "#2ca02c"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "condor-rlrep"
    return plt


def _save(fig: Any, stem: Path) -> None:
    fig.savefig(stem.with_suffix(".svg"), metadata={"Date": None})
    fig.savefig(stem.with_suffix(".png"), dpi=110, metadata={"Software": None})


def gantt(report: RunReport, stem: Path) -> bool:
    """Every replica invocation as a bar on its slot, in seconds since s(W)."""
    if not report.bars or report.workflow_start is None:
        return False
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    plt = _pyplot()
    t0 = report.workflow_start
    slots = sorted({bar.slot for bar in report.bars}, key=_slot_key)
    row = {slot: index for index, slot in enumerate(slots)}
    height = max(2.6, 0.42 * len(slots) + 1.6)
    fig, ax = plt.subplots(figsize=(9.0, height))
    span = max([bar.end - t0 for bar in report.bars] + [1.0])
    if report.deadline is not None:
        span = max(span, report.deadline - t0)
    thin = span / 150.0  # an invocation shorter than this still shows
    # the plot starts at s(W): a bar that began long before it (node-log events of an earlier
    # run) is cut at the window's edge, or Agg is asked to draw text and hatching days away
    # from the canvas (a FreeType "raster overflow")
    edge = -span * 0.05
    for bar in report.bars:
        y = row[bar.slot]
        left = max(bar.start - t0, edge)
        width = max(bar.end - t0 - left, thin)
        colour = WINNER_COLOUR if bar.winner else ENDING_STYLE.get(bar.ended_by, ("#999999", ""))[0]
        ax.barh(y, width, left=left, height=0.62, color=colour, edgecolor="black" if bar.winner else "#555555",
                linewidth=1.6 if bar.winner else 0.5, hatch="//" if bar.ended_by == "removed" else None)
        if bar.ended_by == "evicted":
            ax.plot(left + width, y, marker="X", color="#b35900", markersize=8, zorder=3)
        elif bar.ended_by == "removed":
            ax.plot(left + width, y, marker="|", color="black", markersize=12, markeredgewidth=2, zorder=3)
        label = _printable(f"{bar.node} {bar.cluster}.{bar.proc}")
        if width >= span / 12:
            ax.text(left + width / 2, y, label, ha="center", va="center", fontsize=7, clip_on=True)
        else:  # too short to hold its label: beside it
            ax.text(left + width + span / 90, y, label, ha="left", va="center", fontsize=7, clip_on=True)
    if report.deadline is not None:
        ax.axvline(report.deadline - t0, color="#d62728", linestyle="--", linewidth=1.5)
        ax.text(report.deadline - t0, len(slots) - 0.4, f" deadline (1+φ)·CR(W) = {report.deadline - t0:.0f} s",
                color="#d62728", fontsize=8, va="bottom", ha="right")
    if report.completion is not None:
        ax.axvline(report.completion - t0, color="black", linestyle=":", linewidth=1.2)
    ax.set_yticks(range(len(slots)), [_printable(slot) for slot in slots], fontsize=8)
    ax.set_ylim(-0.6, len(slots) - 0.4 + 0.6)
    ax.invert_yaxis()
    ax.set_xlim(0, span * 1.04)
    ax.set_xlabel("time since the workflow started, s(W) = 0 (seconds)")
    ax.set_ylabel("execute slot")
    ax.set_title(f"Replicas of run {_printable(str(report.run_id))} on their slots"
                 + ("" if report.makespan_s is None else f" — makespan {report.makespan_s:.0f} s"), fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    handles = [Patch(facecolor=WINNER_COLOUR, edgecolor="black", linewidth=1.6, label="winner (first exit 0)")]
    used = {bar.ended_by for bar in report.bars if not bar.winner}
    for ending, (colour, text) in ENDING_STYLE.items():
        if ending in used:
            handles.append(Patch(facecolor=colour, edgecolor="#555555", hatch="//" if ending == "removed" else None,
                                 label=text))
    if "evicted" in used:
        handles.append(Line2D([], [], marker="X", color="#b35900", linestyle="none", label="eviction"))
    if "removed" in used:
        handles.append(Line2D([], [], marker="|", color="black", markeredgewidth=2, markersize=10, linestyle="none",
                              label="removal"))
    if report.deadline is not None:
        handles.append(Line2D([], [], color="#d62728", linestyle="--", label="workflow deadline"))
    if report.completion is not None:
        handles.append(Line2D([], [], color="black", linestyle=":", label="workflow completed"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    _save(fig, stem)
    plt.close(fig)
    return True


def _printable(text: str) -> str:
    """``text`` with control characters written as ``\\xNN``: XML (the SVG) has no
    place for most of them, and a font no glyph."""
    return "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" if ord(c) < 256 else "\ufffd"
                   for c in text)


def _slot_key(slot: str) -> tuple[str, int, int, str]:
    """``slot1_10@host`` after ``slot1_2@host``."""
    import re

    name, _, host = slot.partition("@")
    match = re.fullmatch(r"slot(\d+)(?:_(\d+))?", name)
    if match:
        return (host, int(match.group(1)), int(match.group(2) or 0), name)
    return (host, 1 << 30, 0, name)


def policy(report: RunReport, stem: Path) -> bool:
    """The agent's estimate Q per replica count in each state the run visited."""
    if not report.policy:
        return False
    import numpy as np

    plt = _pyplot()
    rows = report.policy
    actions = max(len(r.q) for r in rows)
    grid = np.full((len(rows), actions), np.nan)
    for i, r in enumerate(rows):
        grid[i, : len(r.q)] = r.q
    fig, ax = plt.subplots(figsize=(max(7.0, 0.9 * actions + 4.5), 0.55 * len(rows) + 1.9))
    bound = max(1.0, float(np.nanmax(np.abs(grid))) if np.isfinite(grid).any() else 1.0)
    image = ax.imshow(grid, cmap="RdYlGn", vmin=-bound, vmax=bound, aspect="auto")
    for i, r in enumerate(rows):
        for j in range(len(r.q)):
            text = f"{r.q[j]:.2f}\nn={r.n[j]}" if r.n[j] else "untried"
            ax.text(j, i, text, ha="center", va="center", fontsize=7)
        ax.add_patch(plt.Rectangle((r.greedy - 1.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=2.2))
        for taken in sorted(set(r.taken)):
            ax.plot(taken - 1 + 0.36, i - 0.3, marker="o", color="#1f3b99", markersize=5)
    ax.set_xticks(range(actions), [str(a + 1) for a in range(actions)])
    ax.set_yticks(range(len(rows)), [f"{r.hour:02d}:00, {r.phi_range}" for r in rows], fontsize=8)
    ax.set_xlabel("replicas a (black box: the agent's greedy choice; dot: chosen in this run)")
    ax.set_ylabel("state (hour of submission, φ′ bin)")
    ax.set_title("Agent policy in the states this run visited", fontsize=10)
    fig.colorbar(image, ax=ax, label="Q: estimated reward (unitless)")
    fig.tight_layout()
    _save(fig, stem)
    plt.close(fig)
    return True
