"""Plot an analysis: progress and bottleneck intervals per task, resource use.

matplotlib is imported here only, with the non-interactive Agg backend.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from condor_rlrep.bottlemod.analysis import Analysis

__all__ = ["plot_analysis", "bottleneck_colours"]


# Colours by kind: resources warm (cpu always red, net always orange, …), data
# cool and hatched; names within a kind get distinct colours in name order.
_RESOURCE_COLOURS = {"cpu": "#d62728", "net": "#ff7f0e", "network": "#ff7f0e", "disk": "#8c564b", "io": "#8c564b",
                     "memory": "#e377c2", "mem": "#e377c2", "gpu": "#bcbd22"}
_RESOURCE_SPARE = ["#ad494a", "#e7969c", "#843c39", "#f7b6d2", "#d6616b"]
_DATA_COLOURS = ["#1f77b4", "#2ca02c", "#17becf", "#9467bd", "#393b79", "#6baed6", "#74c476", "#5254a3"]


def bottleneck_colours(kinds: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The colour of each bottleneck ``(kind, name)`` of one plot."""
    colours: dict[tuple[str, str], str] = {}
    data = sorted(name for kind, name in kinds if kind == "data")
    spare = sorted(name for kind, name in kinds if kind == "resource" and name.lower() not in _RESOURCE_COLOURS)
    for kind, name in kinds:
        if kind == "resource":
            colours[kind, name] = _RESOURCE_COLOURS.get(
                name.lower(), _RESOURCE_SPARE[spare.index(name) % len(_RESOURCE_SPARE)] if name in spare else "#ad494a")
        else:
            colours[kind, name] = _DATA_COLOURS[data.index(name) % len(_DATA_COLOURS)]
    return colours


def _seconds(value: float) -> str:
    return f"t = {value:.4g}"  # the model's own time unit (seconds by convention, not by rule)


def plot_analysis(analysis: Analysis, out: str | Path, title: str = "") -> None:
    """Write a PNG (or any matplotlib format, by suffix) of ``analysis``.

    One panel per task: progress in % of ``P_max`` with its bottleneck
    intervals shaded (resources warm colours, data cool and hatched); a last
    panel with each resource's use as a fraction of its allocation. Time is
    in seconds, the unit the estimates built on BottleMod take. The file is
    written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(analysis.tasks.values())
    ends = [r.finish for r in tasks if r.finish is not None]
    ends += [b.start for r in tasks for b in r.bottlenecks if math.isfinite(b.start)]
    t_end = max(ends + [1.0]) * 1.03
    kinds = sorted({(b.kind, b.name) for r in tasks for b in r.bottlenecks})
    colour = bottleneck_colours(kinds)
    fig, axes = plt.subplots(len(tasks) + 1, 1, sharex=True, figsize=(8.0, 1.25 * (len(tasks) + 1) + 0.9),
                             squeeze=False, layout="constrained")
    ts = np.linspace(0.0, t_end, 600)
    for ax, r in zip(axes[:-1, 0], tasks):
        for b in r.bottlenecks:
            ax.axvspan(b.start, min(b.end, t_end), facecolor=colour[b.kind, b.name], alpha=0.3, lw=0,
                       hatch="//" if b.kind == "data" else None, edgecolor="white")
        ax.plot(ts, 100.0 * np.asarray(r.progress(ts)) / r.max_progress, color="black", lw=1.2)
        ax.set_ylim(0, 105)
        ax.set_yticks([0, 50, 100])
        status = f"finish {_seconds(r.finish)}" if r.finish is not None else "never finishes"
        ax.set_ylabel(f"{r.name}\n%", rotation=0, ha="right", va="center")
        ax.text(0.01, 0.82, status, transform=ax.transAxes, fontsize=8)
    use_ax = axes[-1, 0]
    for r in tasks:
        for name, alloc in r.allocations.items():
            a = np.asarray(alloc(ts), dtype=float)
            u = np.asarray(r.usage(name)(ts), dtype=float)
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(a > 0, u / a, 0.0)
            use_ax.plot(ts, frac, lw=1, label=f"{r.name}.{name}")
    use_ax.set_ylabel("use /\nallocation", rotation=0, ha="right", va="center")
    use_ax.set_xlabel("time (the model's unit)")
    use_ax.set_xlim(0, t_end)
    use_ax.set_ylim(-0.05, 1.1)
    if use_ax.get_legend_handles_labels()[0]:
        use_ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.005, 1.0), borderaxespad=0, frameon=False)
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=colour[k, n], alpha=0.3,
                             hatch="//" if k == "data" else None, edgecolor="white") for k, n in kinds]
    if handles:
        fig.legend(handles, [f"limited by {k}:{n}" for k, n in kinds], loc="outside lower center",
                   ncol=min(len(kinds), 4), fontsize=7, frameon=False)
    if title:
        fig.suptitle(title)
    from condor_rlrep.atomic import atomic_path

    try:
        with atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=110, format=Path(out).suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
